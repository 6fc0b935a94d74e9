/// Every message of the room protocol, in one place: data only. `WireCodec.swift` beside this
/// file turns them into lines and back; the shells call it.
///
/// Framing: one JSON object per line (UTF-8, `\n`-terminated), at most `wireMaxLineBytes` bytes.
/// Every object has a `"type"`. Numbers must be finite, names and strings bounded; anything else
/// is a `protocol-violation`. Decoding never traps on peer input.
///
/// Protocol 3 grows by negotiation: the hello says which versions and features the client
/// speaks, the server's `challenge` picks the highest common version and the common features.
/// A message of an unknown type decodes to `.unknown` and is answered with `unsupported`; the
/// connection lives. Handshake: hello → challenge (server nonce, how the room is guarded) →
/// auth (proof of the room secret, or the new room's verifier) → welcome (session token, role).

/// The protocol versions this build speaks.
public let wireProtocolVersions = 3...3
/// The newest of them.
public let wireProtocolVersion = wireProtocolVersions.upperBound

/// Optional parts of the protocol a peer may speak; both sides list theirs, and only the common
/// ones are used. Unknown names are ignored.
public enum WireFeature {
    /// Room secrets proved by HMAC over both nonces, the room, the name and the certificate.
    public static let secretHMAC = "secret-hmac-sha256"
    /// Owners and operators (`role`, `kick`), managed rooms.
    public static let roles = "roles"
    /// Actions carry a `deadline`; late ones are dropped with `expired`.
    public static let actionDeadline = "action-deadline"
    /// Chat lines (`chat`), with a bounded history for late joiners. A server run with
    /// `--no-chat` leaves it out; a client that sends chat anyway gets `unsupported`.
    public static let chat = "chat"
    /// The messenger (`message`, `message_ack`): opaque payloads relayed to all or some.
    public static let messages = "messages"
    /// The journal (`attachment_added`, `attachment_removed`, `detach`, and `transfer` on a
    /// connection of its own): files shared with the room, kept for late joiners. A server run
    /// with `--no-attachments` leaves it out.
    public static let journal = "journal"
    /// Cluster redirects: a server that does not host the room answers the hello with
    /// `redirect` (the owner's address) instead of a challenge. A client without it gets the
    /// error `room-elsewhere` naming the owner instead.
    public static let cluster = "cluster"
    /// Request ids for `end`, `role` and `kick`: the client gives each an `id`
    /// (`wireMaxRequestID` at most) and the server answers that request, to the requester only,
    /// with `done` naming it, or with a `refused` whose `action_id` is it. Without it, those
    /// requests carry no id and are answered by the notice, `ended` or a `refused` without an id.
    public static let requestIDs = "request-ids"
    /// The room's shared playlist (`playlist_edit`, `playlist_have`, `playlist_eof`; the server's
    /// `playlist` and `playlist_availability`): entries the server numbers and sequences, and
    /// advances through when the current one ends. A peer without it still follows the group's
    /// media (each advance is an `applied` that switches the activity); one that sends playlist
    /// messages anyway gets `unsupported`.
    public static let playlist = "playlist"
    /// Every feature this build speaks.
    /// Film streams (`share`, `unshare`, the server's `shares`; `stream`, `stream_serve` on
    /// connections of their own, and `stream_wanted` to a sharer): a member offers a file and
    /// those who lack it read it from the sharer through the server's relay. A peer without it
    /// gets `unsupported` for these messages.
    public static let stream = "stream"
    public static let all = [secretHMAC, roles, actionDeadline, chat, messages, journal, cluster, requestIDs, playlist, stream]
}

/// The largest request id of `end`, `role` and `kick` (`request-ids`): ids are 0...2^31 − 1, and
/// a line with any other is a `protocol-violation`.
public let wireMaxRequestID = Int(Int32.max)

/// The longest line either side accepts: a messenger payload of 64 KiB, escaped (at most twice
/// as long), in its envelope.
public let wireMaxLineBytes = 147_456

/// One line of the room's chat.
public struct ChatLine: Sendable, Hashable {
    /// The longest line, in bytes of UTF-8.
    public static let maxBytes = 1000

    /// `text` if it may be said: 1–`maxBytes` bytes without control characters.
    /// Errors: `invalid-argument` saying so.
    public static func checked(_ text: String) throws(CowatchError) -> String {
        guard !text.isEmpty, text.utf8.count <= maxBytes else {
            throw CowatchError(.invalidArgument, "chat takes a line of 1–\(maxBytes) bytes without control characters")
        }
        guard !text.unicodeScalars.contains(where: ControlCharacters.isUnfitForDisplay) else {
            throw CowatchError(
                .invalidArgument,
                "chat takes a line without control characters, direction overrides or invisible characters (they could make it read as someone else's)")
        }
        return text
    }
    public var from: String
    public var text: String
    /// The sender's request id, echoed to the sender only (its confirmation).
    public var id: Int?
    /// True for lines sent before this participant joined (the room's recent history).
    public var history: Bool

    public init(from: String, text: String, id: Int? = nil, history: Bool = false) {
        self.from = from
        self.text = text
        self.id = id
        self.history = history
    }
}

/// A messenger message: an opaque payload on a topic, to everyone or to some.
public struct RoomMessage: Sendable, Hashable {
    /// The largest payload, in bytes (the server relays it as is and never reads it).
    public static let maxPayloadBytes = 65_536
    /// The longest topic (a word: a-z, 0-9, '_' or '-').
    public static let maxTopicBytes = 32
    /// The sender's id for it: unique per sender, so receivers drop a copy a reconnect resent.
    public var id: Int
    public var topic: String
    /// The payload, JSON text; the server treats it as an opaque string.
    public var payload: String
    /// Ordered, acknowledged, resent across a reconnect; else best effort, dropped under load.
    public var reliable: Bool
    /// Recipients by name; nil for everyone else in the room.
    public var to: [String]?
    /// Who sent it (set by the server on delivery; nil from the sender).
    public var from: String?
    /// Which session sent it (set by the server on delivery, 16 hex digits; nil from the sender
    /// and from servers before it): one per session token, so ids are unique per token, and a
    /// receiver's duplicate check goes by it, never by a name someone else could have used.
    public var sender: String?

    public init(
        id: Int, topic: String, payload: String, reliable: Bool, to: [String]? = nil, from: String? = nil, sender: String? = nil
    ) {
        self.id = id
        self.topic = topic
        self.payload = payload
        self.reliable = reliable
        self.to = to
        self.from = from
        self.sender = sender
    }
}

/// A file shared with the room (the journal), as everyone sees it.
public struct Attachment: Sendable, Hashable {
    /// The largest attachment any server accepts (servers may set a smaller limit): 100 MiB.
    public static let maxBytes = 104_857_600
    /// The largest metadata object, encoded.
    public static let maxMetaBytes = 4096
    /// SHA-256 of the content, 64 lowercase hex digits: also how everyone names it.
    public var id: String
    /// A safe file name (`AttachmentName`): no directories, no control characters.
    public var name: String
    public var size: Int
    /// Who added it.
    public var from: String
    /// Free-form JSON object from the uploader (`{"kind": "subtitles"}`), or nil.
    public var meta: JSONValue?

    public init(id: String, name: String, size: Int, from: String, meta: JSONValue? = nil) {
        self.id = id
        self.name = name
        self.size = size
        self.from = from
        self.meta = meta
    }

    /// Subtitle extensions mpv's `sub-add` reads.
    public static let subtitleExtensions: Set<String> = ["srt", "ass", "ssa", "vtt"]

    /// Subtitles: `meta.kind` says so (`subtitles`, or `entry-subtitles` for one playlist entry:
    /// see `Attachment+EntrySubtitles.swift`), or the name ends in .srt, .ass, .ssa or .vtt.
    public var isSubtitles: Bool {
        if let kind = meta?["kind"]?.stringValue { return kind == "subtitles" || kind == Self.entrySubtitlesKind }
        guard let dot = name.lastIndex(of: ".") else { return false }
        return Self.subtitleExtensions.contains(name[name.index(after: dot)...].lowercased())
    }
}

/// The first line of a transfer connection (`ClientMessage.transfer`).
public struct TransferRequest: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case upload, download
    }
    public var room: String
    public var name: String
    /// The session token of `name`'s room connection (a secret; only inside TLS).
    public var token: String
    public var kind: Kind
    /// The content's SHA-256 (hex): what is uploaded, or the attachment fetched.
    public var id: String
    /// upload: the size in bytes, the file's name and its metadata.
    public var size: Int?
    public var fileName: String?
    public var meta: JSONValue?
    /// download: the first byte wanted (what an interrupted download already has).
    public var offset: Int

    public init(
        room: String, name: String, token: String, kind: Kind, id: String, size: Int? = nil, fileName: String? = nil,
        meta: JSONValue? = nil, offset: Int = 0
    ) {
        self.room = room
        self.name = name
        self.token = token
        self.kind = kind
        self.id = id
        self.size = size
        self.fileName = fileName
        self.meta = meta
        self.offset = offset
    }
}

/// What a participant can ask the group to do.
public enum ActionKind: String, Sendable, Hashable, CaseIterable {
    case play, pause, seek, speed
    /// Switch the activity to new media, for everyone.
    case open
}

/// What a notice reports.
public enum NoticeAction: String, Sendable, Hashable, CaseIterable {
    case play, pause, seek, speed, join, leave
    /// Someone switched the activity to new media (`title`).
    case open
    /// Someone ended the activity for everyone.
    case end
    /// Readiness changed (Syncplay's ready / not ready).
    case ready, unready
    /// The group holds for `others` (`detail`: why, e.g. "buffering", "not ready").
    case waiting
    /// The group stopped waiting and carries on without `others`.
    case continued
    /// `actor` has a different file than `others` (`detail`: how it differs).
    case mismatch
    /// `actor` made `others` operators, or members again (`deop`).
    case op, deop
    /// `actor` removed `others` from the room.
    case kick
}

/// What a participant may do in its room.
public enum Role: String, Sendable, Hashable, CaseIterable {
    /// Created the room: may do everything, and name operators.
    case owner
    /// Named by the owner: may end, open, kick and (in managed rooms) control playback.
    case `operator`
    /// Everyone else: controls playback in unmanaged rooms only.
    case member

    /// Owners and operators.
    public var isPrivileged: Bool { self != .member }
}

/// "Who did what", delivered with the timeline it produced (or alone for join and leave).
public struct Notice: Sendable, Hashable {
    public var actor: String
    public var action: NoticeAction
    /// pause/play: where; seek: the target (same as `to`).
    public var position: Double?
    /// seek: where the actor was.
    public var from: Double?
    public var to: Double?
    /// speed: the new rate.
    public var rate: Double?
    /// waiting/continued: who the group waits for or left behind; mismatch: whose file differs.
    public var others: [String]?
    /// waiting: why; mismatch: how the files differ.
    public var detail: String?
    /// open: the new media's title (or URL).
    public var title: String?

    public init(
        actor: String, action: NoticeAction, position: Double? = nil, from: Double? = nil, to: Double? = nil,
        rate: Double? = nil, others: [String]? = nil, detail: String? = nil, title: String? = nil
    ) {
        self.actor = actor
        self.action = action
        self.position = position
        self.from = from
        self.to = to
        self.rate = rate
        self.others = others
        self.detail = detail
        self.title = title
    }

    /// The sentence shown to people: "bob paused at 0:42:10".
    public var text: String {
        func at(_ value: Double?) -> String { value.map { MediaTime.format($0) } ?? "?" }
        switch action {
        case .play: return "\(actor) played from \(at(position))"
        case .pause: return "\(actor) paused at \(at(position))"
        case .seek: return "\(actor) jumped from \(at(from)) to \(at(to))"
        case .speed: return "\(actor) set the speed to \(rate.map { Self.rateText($0) } ?? "?")×"
        case .join: return "\(actor) joined"
        case .leave: return "\(actor) left"
        case .open: return "\(actor) switched to \(title ?? "new media")"
        case .end: return "\(actor) ended the activity for everyone"
        case .ready: return "\(actor) is ready"
        case .unready: return "\(actor) is not ready"
        case .waiting:
            return "waiting for \(Self.list(others ?? [actor]))" + (detail.map { " (\($0))" } ?? "")
        case .continued:
            return "continuing without \(Self.list(others ?? [actor]))" + (detail.map { " (\($0))" } ?? "")
        case .mismatch:
            return "\(actor) has a different file" + (others.map { " than \(Self.list($0))" } ?? "")
                + (detail.map { ": \($0)" } ?? "")
        case .op: return "\(actor) made \(Self.list(others ?? [])) an operator"
        case .deop: return "\(actor) made \(Self.list(others ?? [])) a member"
        case .kick: return "\(actor) removed \(Self.list(others ?? [])) from the room"
        }
    }

    static func list(_ names: [String]) -> String {
        switch names.count {
        case 0: return "nobody"
        case 1: return names[0]
        default: return names.dropLast().joined(separator: ", ") + " and " + names[names.count - 1]
        }
    }

    static func rateText(_ rate: Double) -> String {
        // Rates are within 0.01…100; a hostile or broken peer's value must not trap.
        guard rate.isFinite, abs(rate) < 1e12 else { return "?" }
        let hundredths = Int((rate * 100).rounded())
        let cents = hundredths % 100
        return "\(hundredths / 100)." + (cents < 10 ? "0\(cents)" : "\(cents)")
    }
}

/// What a shared activity is: the media everyone plays, and how to present it.
public struct Activity: Sendable, Hashable {
    /// The longest title the room protocol carries, in bytes.
    public static let maxTitleBytes = 512

    /// 0 for the media the room was created with; each `open` adds one.
    public var id: Int
    /// The media URL or path, as the one who opened it gave it.
    public var url: String
    /// Shown to people; nil means "use the media's own title".
    public var title: String?
    public var type: ActivityType
    /// Tried by participants who cannot open `url`.
    public var fallbackURL: String?
    /// Who opened it (nil for the room's first media).
    public var openedBy: String?

    public init(id: Int = 0, url: String, title: String? = nil, type: ActivityType = .watch, fallbackURL: String? = nil, openedBy: String? = nil) {
        self.id = id
        self.url = url
        self.title = title
        self.type = type
        self.fallbackURL = fallbackURL
        self.openedBy = openedBy
    }

    /// `text` without characters unfit for display (a file's own title may carry a direction
    /// override: a server would refuse it), cut to at most `maxTitleBytes` bytes of UTF-8, on a
    /// character boundary.
    public static func clampedTitle(_ raw: String) -> String {
        var text = raw
        if text.unicodeScalars.contains(where: ControlCharacters.isUnfitForDisplay) {
            text = String(String.UnicodeScalarView(text.unicodeScalars.filter { !ControlCharacters.isUnfitForDisplay($0) }))
        }
        guard text.utf8.count > maxTitleBytes else { return text }
        var result = ""
        for character in text {
            if result.utf8.count + character.utf8.count > maxTitleBytes - 3 { break }
            result.append(character)
        }
        return result + "…"
    }

    /// What the room is told of a participant's own media (the room's first activity, which each
    /// participant plays from its own copy): a network URL as given, but of a local path or a
    /// `file:` URL only the file's name — a path (`/home/ann/…`) never leaves the machine.
    public static func ownMediaURL(_ media: String) -> String {
        let lowered = media.lowercased()
        let isNetwork = lowered.contains("://") && !lowered.hasPrefix("file://")
        guard !isNetwork else { return media }
        return media.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? "media"
    }

    /// What people see: the title, or the last path component of the URL.
    public var displayTitle: String {
        if let title, !title.isEmpty { return title }
        return url.split(separator: "/").last.map(String.init) ?? url
    }
}

/// GroupActivities' two kinds of media activity.
public enum ActivityType: String, Sendable, Hashable, CaseIterable {
    case watch, listen
}

/// What a participant's copy of the media looks like, to spot different files.
public struct MediaInfo: Sendable, Hashable {
    /// Seconds, as the player reports it.
    public var duration: Double?
    /// Bytes (local files only).
    public var size: Int?
    /// A hex digest of the first megabytes (local files only); see `MediaFingerprint`.
    public var hash: String?

    public init(duration: Double? = nil, size: Int? = nil, hash: String? = nil) {
        self.duration = duration
        self.size = size
        self.hash = hash
    }

    /// Seconds two durations may differ by and still be "the same film" (containers round differently).
    public static let durationTolerance = 1.0

    /// How `self` differs from `other`, in words; empty when nothing comparable differs.
    /// A file size in a person's units: MiB or GiB with one decimal, or bytes when the two
    /// sizes would read the same rounded.
    static func sizeText(_ bytes: Int, beside other: Int) -> String {
        let units: [(String, Double)] = [("GiB", 1_073_741_824), ("MiB", 1_048_576), ("KiB", 1024)]
        for (unit, scale) in units where Double(max(bytes, other)) >= scale {
            func tenths(_ value: Int) -> String {
                let count = Int((Double(value) / scale * 10).rounded())
                return "\(count / 10).\(count % 10)"
            }
            let mine = tenths(bytes)
            let theirs = tenths(other)
            if mine != theirs { return "\(mine) \(unit)" }
            break
        }
        return "\(bytes) bytes"
    }

    public func differences(from other: MediaInfo) -> [String] {
        var found: [String] = []
        if let mine = duration, let theirs = other.duration, abs(mine - theirs) > Self.durationTolerance {
            found.append("duration \(MediaTime.format(mine)) vs \(MediaTime.format(theirs))")
        }
        if let mine = size, let theirs = other.size, mine != theirs {
            found.append("size \(Self.sizeText(mine, beside: theirs)) vs \(Self.sizeText(theirs, beside: mine))")
        } else if let mine = hash, let theirs = other.hash, mine != theirs {
            found.append("different content")
        }
        return found
    }
}

/// Why a participant cannot keep up right now.
public enum StallReason: String, Sendable, Hashable, CaseIterable {
    /// Opening the media (until its first frame is decoded).
    case loading
    /// mpv paused for cache: the network is slower than the media.
    case buffering
    /// A seek that is taking long.
    case seeking
}

/// What a participant says about itself; sent in the hello and whenever it changes.
public struct ParticipantStatus: Sendable, Hashable {
    /// Set while the player cannot keep up.
    public var stall: StallReason?
    /// Syncplay-style readiness; with the room policy "play when everyone is ready", plays wait for it.
    public var ready: Bool
    /// False: "don't wait for me" — the group never holds for this participant.
    public var waitForMe: Bool

    public init(stall: StallReason? = nil, ready: Bool = false, waitForMe: Bool = true) {
        self.stall = stall
        self.ready = ready
        self.waitForMe = waitForMe
    }
}

/// How a room treats its participants; from the server's configuration.
public struct RoomPolicy: Sendable, Hashable {
    /// A play waits (bounded) until every participant is ready.
    public var playWhenReady: Bool
    /// Seconds the group waits for a stalled or unready participant before going on without it.
    public var waitTimeout: Double
    /// Only owners and operators control playback (members watch).
    public var managed: Bool

    public init(playWhenReady: Bool = false, waitTimeout: Double = 5, managed: Bool = false) {
        self.playWhenReady = playWhenReady
        self.waitTimeout = waitTimeout
        self.managed = managed
    }
}

/// What the server knows of one participant.
public struct ParticipantInfo: Sendable, Hashable {
    public var name: String
    /// `joined`, or `landed` when it has reached the group's held position (during a hold).
    public var state: String
    /// Its last reported error against the timeline, seconds (positive = ahead).
    public var drift: Double?
    /// Its last reported round trip to the server, seconds.
    public var rtt: Double?
    /// What it said about itself.
    public var status: ParticipantStatus
    public var role: Role
    /// (`stream`) The film stream it plays, as it last told the room.
    public var stream: StreamReport?

    public init(
        name: String, state: String, drift: Double? = nil, rtt: Double? = nil, status: ParticipantStatus = .init(),
        role: Role = .member, stream: StreamReport? = nil
    ) {
        self.name = name
        self.state = state
        self.drift = drift
        self.rtt = rtt
        self.status = status
        self.role = role
        self.stream = stream
    }
}

/// Sent by a daemon.
public enum ClientMessage: Sendable, Hashable {
    case hello(Hello)
    case timeRequest(id: Int, t1: Double)
    case action(ActionRequest)
    /// Landed on the held position of timeline `seq` and ready to resume.
    case ready(seq: Int)
    case report(drift: Double?, rtt: Double?)
    /// This participant's stall, readiness and "wait for me", whenever one changes.
    case status(ParticipantStatus)
    /// What this participant's copy of activity `activity`'s media looks like, once loaded.
    case media(activity: Int, MediaInfo)
    /// End the activity for everyone. `id` (`request-ids`, 0...`wireMaxRequestID`) comes back in
    /// the server's `done` or `refused`.
    case end(id: Int? = nil)
    case bye
    /// The answer to a `challenge`: proof of the room secret, or a new room's verifier.
    case auth(Auth)
    /// Owner only: make `name` an operator (`operator`) or a member again (`member`). `id` as
    /// for `end`.
    case role(name: String, role: Role, id: Int? = nil)
    /// Owners and operators: remove `name` from the room (it may not come back for a while).
    /// `id` as for `end`.
    case kick(name: String, id: Int? = nil)
    /// (`chat`) A line for the room's chat; `id` comes back on our own copy.
    case chat(id: Int, text: String)
    /// (`messages`) A messenger message (`from` unset).
    case message(RoomMessage)
    /// (`journal`) Remove attachment `attachment` (its id) for everyone; `id` comes back on our
    /// own `attachment_removed`.
    case detach(id: Int, attachment: String)
    /// (`journal`) The first and only line of a transfer connection: who asks (proved by the
    /// session token of its room connection) and what it sends or fetches. Raw bytes follow.
    case transfer(TransferRequest)
    /// (`playlist`) Change the room's playlist; see `PlaylistEdit`.
    case playlistEdit(PlaylistEditRequest)
    /// (`playlist`) The entries of the list at `version` this participant can play (it lacks the
    /// others): sent after each new `playlist` state, at most `PlaylistState.maxEntries` ids.
    case playlistHave(version: Int, have: [PlaylistEntry.ID])
    /// (`playlist`) This participant's player reached the end of activity `activity`'s media, at
    /// `position` (its duration, as the player saw it). The server moves the room to the next
    /// entry if the room's timeline agrees.
    case playlistEnded(activity: Int, position: Double)
    /// (`stream`) Offer this local file to the room (replacing an offer of the same
    /// fingerprint); `activity`: the room's activity this participant plays it as.
    case share(MediaIdentity, activity: Int?)
    /// (`stream`) Withdraw the offer of `fingerprint`, or every offer of ours (nil).
    case unshare(fingerprint: String?)
    /// (`stream`) The first line of a receiver's stream connection; raw frames follow
    /// `stream_ready`.
    case stream(StreamRequest)
    /// (`stream`) The first line of a sharer's serving connection; raw frames follow
    /// `stream_ready`.
    case streamServe(StreamServe)
    /// (`stream`) How the stream this member plays fares (nil: it plays none now); shown to the
    /// room in the participant list.
    case streamStatus(StreamReport?)
    /// "I do not know messages of this type": the answer to a server message we cannot read.
    case unsupported(type: String)
    /// A message of a type this build does not know (decoded, never sent).
    case unknown(type: String)

    public struct Hello: Sendable, Hashable {
        /// The versions this client speaks. A protocol-2 hello (`protocol` only) reads as 2...2.
        public var versions: ClosedRange<Int>
        /// Optional features this client speaks (`WireFeature`).
        public var features: [String]
        public var room: String
        public var name: String
        public var client: String
        /// 32 random bytes, hex: binds the secret's proof to this connection.
        public var nonce: String
        /// The session token from an earlier `welcome` of this room, if any: proves a reconnect
        /// is the same participant (to replace its old connection, or to resume a room after a
        /// server restart).
        public var token: String?
        /// The activity this participant came with; it becomes the room's when the room is new.
        public var activity: Activity?
        public var status: ParticipantStatus
        /// Where this participant's group was when its connection dropped: a server that lost the
        /// room (it restarted) starts the room from here, if `token` proves the participant was in it.
        public var resume: Resume?

        public struct Resume: Sendable, Hashable {
            public var position: Double
            public var playing: Bool
            public var rate: Double
            public init(position: Double, playing: Bool, rate: Double) {
                self.position = position
                self.playing = playing
                self.rate = rate
            }
        }

        public init(
            versions: ClosedRange<Int> = wireProtocolVersions, features: [String] = [], room: String,
            name: String, client: String = "cowatchd", nonce: String = String(repeating: "0", count: 64),
            token: String? = nil, activity: Activity? = nil, status: ParticipantStatus = .init(), resume: Resume? = nil
        ) {
            self.versions = versions
            self.features = features
            self.room = room
            self.name = name
            self.client = client
            self.nonce = nonce
            self.token = token
            self.activity = activity
            self.status = status
            self.resume = resume
        }
    }

    public struct Auth: Sendable, Hashable {
        /// HMAC proof of the room secret (hex), when the challenge asked for one.
        public var proof: String?
        /// When the room is new and this participant gives it a secret: what the server keeps.
        public var create: RoomVerifier?

        public init(proof: String? = nil, create: RoomVerifier? = nil) {
            self.proof = proof
            self.create = create
        }
    }

    public struct ActionRequest: Sendable, Hashable {
        /// Chosen by the client, echoed in the resulting `applied`.
        public var id: Int
        public var kind: ActionKind
        /// pause: the pauser's frame; seek: the target; play: where the actor is (informative).
        public var position: Double?
        /// seek: where the actor was.
        public var from: Double?
        /// speed: the new rate.
        public var rate: Double?
        /// open: the new activity (its `id` and `openedBy` are the server's to set).
        public var activity: Activity?
        /// Reference time after which the sender no longer waits for this action: the server
        /// drops it (`expired`) instead of surprising everyone with a stale action.
        public var deadline: Double?

        public init(
            id: Int, kind: ActionKind, position: Double? = nil, from: Double? = nil, rate: Double? = nil,
            activity: Activity? = nil, deadline: Double? = nil
        ) {
            self.id = id
            self.kind = kind
            self.position = position
            self.from = from
            self.rate = rate
            self.activity = activity
            self.deadline = deadline
        }
    }
}

/// Sent by the room server.
public enum ServerMessage: Sendable, Hashable {
    case welcome(Welcome)
    case timeReply(id: Int, t1: Double, t2: Double, t3: Double)
    /// A new timeline. `notice` says who did what (nil for the silent resume after a seek);
    /// `actionID` echoes the originator's id so it can tell its own action.
    /// `activity` is set when the action switched the media (`open`).
    case applied(timeline: GroupTimeline, notice: Notice?, actionID: Int?, activity: Activity? = nil)
    /// Notices that change no timeline: join, leave, ready, waiting, mismatch, ….
    case notice(Notice)
    case participants([ParticipantInfo])
    /// `by` ended the activity; the server closes every connection of the room after this.
    case ended(by: String)
    /// Fatal: the server closes the connection after this.
    case error(code: String, message: String)
    /// The answer to hello: how the server will talk, and how the room is guarded.
    case challenge(Challenge)
    /// A request that was not carried out (`not-permitted`, `rate-limited`, `expired`, …);
    /// `actionID` names the request by the id its sender gave it (an action, a chat line, a
    /// message, a `detach`; with `request-ids` also an `end`, `role` or `kick`). The connection lives.
    case refused(actionID: Int?, code: String, message: String)
    /// (`request-ids`) The requester's `end`, `role` or `kick` `id` was carried out: sent to it
    /// alone, after the notice the others hear (for `end`: before `ended`).
    case done(id: Int)
    /// (`chat`) A chat line: new, or (after the welcome) the room's recent history.
    case chat(ChatLine)
    /// (`messages`) A messenger message, with `from` set.
    case message(RoomMessage)
    /// (`messages`) A reliable message of ours reached these participants.
    case messageAck(id: Int, delivered: [String])
    /// (`journal`) An attachment is in the room: new, or (after the welcome, `history`) kept
    /// from before this participant joined.
    case attachmentAdded(Attachment, history: Bool)
    /// (`journal`) `by` removed attachment `id` for everyone; `requestID` echoes the remover's
    /// `detach` to the remover only.
    case attachmentRemoved(id: String, by: String, requestID: Int?)
    /// (transfer connection) Go ahead: an upload sends bytes `offset..<size` (the server kept
    /// the first `offset` of an interrupted upload); a download receives them.
    case transferReady(offset: Int, size: Int)
    /// (transfer connection) The upload is stored (or was already) and announced to the room.
    case transferDone(Attachment)
    /// (`cluster`) The answer to a hello for a room another server of the cluster hosts:
    /// connect there (same room, secret and certificate). The server closes after this.
    case redirect(room: String, to: Endpoint)
    /// (`playlist`) The room's playlist: after the welcome, after every change (`change` says
    /// what and who; `requestID` echoes the editor's `playlist_edit` id to the editor only), and
    /// after a `stale-playlist` refusal (neither). Sent before the `applied` of a switch it
    /// causes, so the new activity can be told apart as the current entry (`PlaylistState.activity`).
    case playlist(PlaylistState, change: PlaylistChange?, requestID: Int?)
    /// (`playlist`) What one participant can play changed; `marks` follow the entries of the
    /// list at `version`.
    case playlistAvailability(PlaylistAvailability, version: Int)
    /// (`stream`) The room's offered files: after the welcome (when any) and after every change.
    case shares([SharedMedia])
    /// (`stream`) To a sharer: `receiver` asks for the file of `fingerprint`; serve it on a
    /// connection of its own whose `stream_serve` names `stream`.
    case streamWanted(stream: Int, fingerprint: String, for: String)
    /// (stream connection) The other end is there: frames may flow. `size`: the file's bytes.
    case streamReady(size: Int)
    /// "I do not know messages of this type"; the connection lives.
    case unsupported(type: String)
    /// A message of a type this build does not know (decoded, never sent).
    case unknown(type: String)

    public struct Challenge: Sendable, Hashable {
        /// The highest version both sides speak.
        public var protocolVersion: Int
        /// The features both sides speak.
        public var features: [String]
        /// 32 random bytes, hex.
        public var nonce: String
        public var access: RoomAccess

        public init(protocolVersion: Int = wireProtocolVersion, features: [String] = WireFeature.all, nonce: String, access: RoomAccess) {
            self.protocolVersion = protocolVersion
            self.features = features
            self.nonce = nonce
            self.access = access
        }
    }

    /// How a room is guarded, as the challenge tells a joiner.
    public enum RoomAccess: Sendable, Hashable {
        /// The room exists and has no secret.
        case open
        /// The room exists (or is remembered across a restart) and needs its secret: prove it
        /// with the verifier derived with this salt (hex).
        case secret(salt: String)
        /// No such room: the joiner creates it (and may give it a secret in `auth`).
        case new
    }

    public struct Welcome: Sendable, Hashable {
        public var protocolVersion: Int
        public var name: String
        public var room: String
        public var timeline: GroupTimeline
        public var participants: [ParticipantInfo]
        public var activity: Activity
        public var policy: RoomPolicy
        /// Proves this participant on a reconnect, also after a server restart. A secret.
        public var token: String
        public var role: Role
        /// The server's proof that it knows the room secret too (hex), when the room has one.
        public var proof: String?

        public init(
            protocolVersion: Int = wireProtocolVersion, name: String, room: String, timeline: GroupTimeline,
            participants: [ParticipantInfo], activity: Activity, policy: RoomPolicy = .init(),
            token: String = String(repeating: "0", count: 64), role: Role = .member, proof: String? = nil
        ) {
            self.protocolVersion = protocolVersion
            self.name = name
            self.room = room
            self.timeline = timeline
            self.participants = participants
            self.activity = activity
            self.policy = policy
            self.token = token
            self.role = role
            self.proof = proof
        }
    }
}


/// What the server keeps of a room secret: a salt and the scrypt-derived key (both hex). The
/// secret itself never reaches the server. See `RoomSecret`.
public struct RoomVerifier: Sendable, Hashable {
    public var salt: String
    public var key: String

    public init(salt: String, key: String) {
        self.salt = salt
        self.key = key
    }
}
