/// Every message of the room protocol, in one place.
///
/// Framing: one JSON object per line (UTF-8, `\n`-terminated), at most `wireMaxLineBytes` bytes.
/// Every object has a `"type"`. Numbers must be finite, names and strings bounded; anything else
/// is a `protocol-violation`. Decoding never traps on peer input.
///
/// The hello carries `protocol` (this file's `wireProtocolVersion`) and an `auth` object that is
/// reserved for room secrets (`{"scheme": "none"}` today), so secrets and TLS can arrive later
/// without a protocol break: a server that requires a scheme answers `auth-failed`.
public let wireProtocolVersion = 2

/// The longest line either side accepts.
public let wireMaxLineBytes = 65_536

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

    /// `text` cut to at most `maxTitleBytes` bytes of UTF-8, on a character boundary.
    public static func clampedTitle(_ text: String) -> String {
        guard text.utf8.count > maxTitleBytes else { return text }
        var result = ""
        for character in text {
            if result.utf8.count + character.utf8.count > maxTitleBytes - 3 { break }
            result.append(character)
        }
        return result + "…"
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
    public func differences(from other: MediaInfo) -> [String] {
        var found: [String] = []
        if let mine = duration, let theirs = other.duration, abs(mine - theirs) > Self.durationTolerance {
            found.append("duration \(MediaTime.format(mine)) vs \(MediaTime.format(theirs))")
        }
        if let mine = size, let theirs = other.size, mine != theirs {
            found.append("size \(mine) vs \(theirs) bytes")
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

    public init(playWhenReady: Bool = false, waitTimeout: Double = 5) {
        self.playWhenReady = playWhenReady
        self.waitTimeout = waitTimeout
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

    public init(name: String, state: String, drift: Double? = nil, rtt: Double? = nil, status: ParticipantStatus = .init()) {
        self.name = name
        self.state = state
        self.drift = drift
        self.rtt = rtt
        self.status = status
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
    /// End the activity for everyone.
    case end
    case bye

    public struct Hello: Sendable, Hashable {
        public var protocolVersion: Int
        public var room: String
        public var name: String
        public var client: String
        /// Reserved for room secrets; `{"scheme": "none"}` today.
        public var auth: JSONValue
        /// The activity this participant came with; it becomes the room's when the room is new.
        public var activity: Activity?
        public var status: ParticipantStatus
        /// Where this participant's group was when its connection dropped: a server that has no
        /// such room (it restarted) starts the room from here instead of from the beginning.
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
            protocolVersion: Int = wireProtocolVersion, room: String, name: String, client: String = "cowatchd",
            auth: JSONValue = ["scheme": "none"], activity: Activity? = nil, status: ParticipantStatus = .init(),
            resume: Resume? = nil
        ) {
            self.resume = resume
            self.protocolVersion = protocolVersion
            self.room = room
            self.name = name
            self.client = client
            self.auth = auth
            self.activity = activity
            self.status = status
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

        public init(
            id: Int, kind: ActionKind, position: Double? = nil, from: Double? = nil, rate: Double? = nil,
            activity: Activity? = nil
        ) {
            self.id = id
            self.kind = kind
            self.position = position
            self.from = from
            self.rate = rate
            self.activity = activity
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
    case error(code: String, message: String)

    public struct Welcome: Sendable, Hashable {
        public var protocolVersion: Int
        public var name: String
        public var room: String
        public var timeline: GroupTimeline
        public var participants: [ParticipantInfo]
        public var activity: Activity
        public var policy: RoomPolicy

        public init(
            protocolVersion: Int = wireProtocolVersion, name: String, room: String, timeline: GroupTimeline,
            participants: [ParticipantInfo], activity: Activity, policy: RoomPolicy = .init()
        ) {
            self.protocolVersion = protocolVersion
            self.name = name
            self.room = room
            self.timeline = timeline
            self.participants = participants
            self.activity = activity
            self.policy = policy
        }
    }
}

// MARK: - Encoding

extension ClientMessage {
    public var json: JSONValue {
        switch self {
        case .hello(let hello):
            var object: [String: JSONValue] = [
                "type": "hello", "protocol": .number(Double(hello.protocolVersion)), "room": .string(hello.room),
                "name": .string(hello.name), "client": .string(hello.client), "auth": hello.auth,
                "status": hello.status.json,
            ]
            if let activity = hello.activity { object["activity"] = activity.json }
            if let resume = hello.resume {
                object["resume"] = [
                    "position": .number(resume.position), "playing": .bool(resume.playing), "rate": .number(resume.rate),
                ]
            }
            return .object(object)
        case .timeRequest(let id, let t1):
            return ["type": "time_request", "id": .number(Double(id)), "t1": .number(t1)]
        case .action(let action):
            var object: [String: JSONValue] = [
                "type": "action", "id": .number(Double(action.id)), "kind": .string(action.kind.rawValue),
            ]
            if let position = action.position { object["position"] = .number(position) }
            if let from = action.from { object["from"] = .number(from) }
            if let rate = action.rate { object["rate"] = .number(rate) }
            if let activity = action.activity { object["activity"] = activity.json }
            return .object(object)
        case .ready(let seq):
            return ["type": "ready", "seq": .number(Double(seq))]
        case .report(let drift, let rtt):
            var object: [String: JSONValue] = ["type": "report"]
            if let drift { object["drift"] = .number(drift) }
            if let rtt { object["rtt"] = .number(rtt) }
            return .object(object)
        case .status(let status):
            return ["type": "status", "status": status.json]
        case .media(let activity, let info):
            return ["type": "media", "activity": .number(Double(activity)), "media": info.json]
        case .end:
            return ["type": "end"]
        case .bye:
            return ["type": "bye"]
        }
    }

    public func encoded() -> [UInt8] { json.encoded() + [UInt8(ascii: "\n")] }

    /// Decodes and validates one line. Throws `protocol-violation` (or `invalid-json`).
    public static func decode<Bytes: Collection<UInt8>>(line: Bytes) throws(CowatchError) -> ClientMessage {
        let reader = try WireReader(line: line)
        switch try reader.type() {
        case "hello":
            let version = try reader.integer("protocol")
            let room = try reader.name("room", maxLength: 64)
            let name = try reader.name("name", maxLength: ParticipantName.maxLength)
            let client = try reader.optionalString("client", maxLength: 64) ?? "unknown"
            let auth = reader.raw("auth") ?? ["scheme": "none"]
            guard auth.objectValue != nil, auth.jsonString.utf8.count <= 4096 else {
                throw WireReader.violation("auth must be a small object")
            }
            var resume: Hello.Resume?
            if let fields = try reader.optionalObject("resume") {
                resume = Hello.Resume(
                    position: try fields.number("position", range: 0...1e7), playing: try fields.bool("playing"),
                    rate: try fields.number("rate", range: ControlCommand.speedRange))
            }
            return .hello(Hello(
                protocolVersion: version, room: room, name: name, client: client, auth: auth,
                activity: try reader.optionalObject("activity").map { reader throws(CowatchError) in try Activity(wire: reader) },
                status: try reader.optionalObject("status").map { reader throws(CowatchError) in try ParticipantStatus(wire: reader) } ?? .init(),
                resume: resume))
        case "time_request":
            return .timeRequest(id: try reader.integer("id"), t1: try reader.number("t1", range: -1e12...1e12))
        case "action":
            let kind = try reader.enumeration("kind", ActionKind.self)
            let action = ActionRequest(
                id: try reader.integer("id"), kind: kind,
                position: try reader.optionalNumber("position", range: 0...1e7),
                from: try reader.optionalNumber("from", range: 0...1e7),
                rate: try reader.optionalNumber("rate", range: ControlCommand.speedRange),
                activity: try reader.optionalObject("activity").map { reader throws(CowatchError) in try Activity(wire: reader) })
            switch kind {
            case .pause, .seek:
                guard action.position != nil else { throw WireReader.violation("\(kind.rawValue) needs a position") }
            case .speed:
                guard action.rate != nil else { throw WireReader.violation("speed needs a rate") }
            case .open:
                guard action.activity != nil else { throw WireReader.violation("open needs an activity") }
            case .play:
                break
            }
            return .action(action)
        case "ready":
            return .ready(seq: try reader.integer("seq"))
        case "report":
            return .report(
                drift: try reader.optionalNumber("drift", range: -1e7...1e7),
                rtt: try reader.optionalNumber("rtt", range: 0...3600))
        case "status":
            guard let fields = try reader.optionalObject("status") else { throw WireReader.violation("status needs a status") }
            return .status(try ParticipantStatus(wire: fields))
        case "media":
            guard let fields = try reader.optionalObject("media") else { throw WireReader.violation("media needs a media object") }
            return .media(activity: try reader.integer("activity"), try MediaInfo(wire: fields))
        case "end":
            return .end
        case "bye":
            return .bye
        case let other:
            throw WireReader.violation("unknown client message type \"\(other.prefix(32))\"")
        }
    }
}

extension GroupTimeline {
    var json: JSONValue {
        [
            // Clamped to what the wire accepts (115 days), so a runaway room cannot make every
            // participant refuse its timeline.
            "seq": .number(Double(seq)), "position": .number(min(max(0, position), 1e7)), "reference": .number(reference),
            "rate": .number(rate), "playing": .bool(playing), "holding": .bool(holding),
        ]
    }

    init(wire value: JSONValue?) throws(CowatchError) {
        guard let value else { throw WireReader.violation("missing timeline") }
        let reader = try WireReader(object: value)
        self.init(
            seq: try reader.integer("seq"), position: try reader.number("position", range: 0...1e7),
            reference: try reader.number("reference", range: -1e12...1e12),
            rate: try reader.number("rate", range: ControlCommand.speedRange), playing: try reader.bool("playing"),
            holding: try reader.bool("holding"))
    }
}

extension Activity {
    var json: JSONValue {
        var object: [String: JSONValue] = ["id": .number(Double(id)), "url": .string(url), "type": .string(type.rawValue)]
        if let title { object["title"] = .string(title) }
        if let fallbackURL { object["fallback_url"] = .string(fallbackURL) }
        if let openedBy { object["opened_by"] = .string(openedBy) }
        return .object(object)
    }

    init(wire reader: WireReader) throws(CowatchError) {
        self.init(
            id: try reader.optionalInteger("id") ?? 0, url: try reader.url("url"),
            title: try reader.optionalText("title", maxLength: Activity.maxTitleBytes),
            type: try reader.raw("type") == nil ? .watch : reader.enumeration("type", ActivityType.self),
            fallbackURL: try reader.optionalURL("fallback_url"),
            openedBy: try reader.raw("opened_by") == nil ? nil : reader.name("opened_by", maxLength: ParticipantName.maxLength))
    }
}

extension MediaInfo {
    var json: JSONValue {
        var object: [String: JSONValue] = [:]
        if let duration { object["duration"] = .number(duration) }
        if let size { object["size"] = .number(Double(size)) }
        if let hash { object["hash"] = .string(hash) }
        return .object(object)
    }

    init(wire reader: WireReader) throws(CowatchError) {
        let hash = try reader.optionalString("hash", maxLength: 128)
        if let hash, !hash.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) {
            throw WireReader.violation("\"hash\" must be lowercase hex")
        }
        self.init(
            duration: try reader.optionalNumber("duration", range: 0...1e7), size: try reader.optionalInteger("size"),
            hash: hash)
    }
}

extension ParticipantStatus {
    var json: JSONValue {
        var object: [String: JSONValue] = ["ready": .bool(ready), "wait_for_me": .bool(waitForMe)]
        if let stall { object["stall"] = .string(stall.rawValue) }
        return .object(object)
    }

    init(wire reader: WireReader) throws(CowatchError) {
        self.init(
            stall: try reader.raw("stall") == nil ? nil : reader.enumeration("stall", StallReason.self),
            ready: try reader.optionalBool("ready") ?? false, waitForMe: try reader.optionalBool("wait_for_me") ?? true)
    }
}

extension RoomPolicy {
    var json: JSONValue {
        ["play_when_ready": .bool(playWhenReady), "wait_timeout": .number(waitTimeout)]
    }

    init(wire reader: WireReader) throws(CowatchError) {
        self.init(
            playWhenReady: try reader.optionalBool("play_when_ready") ?? false,
            waitTimeout: try reader.optionalNumber("wait_timeout", range: 0...3600) ?? 5)
    }
}

extension Notice {
    var json: JSONValue {
        var object: [String: JSONValue] = ["actor": .string(actor), "action": .string(action.rawValue)]
        if let position { object["position"] = .number(position) }
        if let from { object["from"] = .number(from) }
        if let to { object["to"] = .number(to) }
        if let rate { object["rate"] = .number(rate) }
        if let others { object["others"] = .array(others.map(JSONValue.string)) }
        if let detail { object["detail"] = .string(detail) }
        if let title { object["title"] = .string(title) }
        return .object(object)
    }

    init(wire value: JSONValue?) throws(CowatchError) {
        guard let value else { throw WireReader.violation("missing notice") }
        let reader = try WireReader(object: value)
        self.init(
            actor: try reader.name("actor", maxLength: ParticipantName.maxLength),
            action: try reader.enumeration("action", NoticeAction.self),
            position: try reader.optionalNumber("position", range: 0...1e7),
            from: try reader.optionalNumber("from", range: 0...1e7), to: try reader.optionalNumber("to", range: 0...1e7),
            rate: try reader.optionalNumber("rate", range: ControlCommand.speedRange),
            others: try reader.optionalNames("others"), detail: try reader.optionalText("detail", maxLength: 512),
            title: try reader.optionalText("title", maxLength: 4096))
    }
}

extension ParticipantInfo {
    var json: JSONValue {
        var object: [String: JSONValue] = ["name": .string(name), "state": .string(state), "status": status.json]
        if let drift { object["drift"] = .number(drift) }
        if let rtt { object["rtt"] = .number(rtt) }
        return .object(object)
    }

    init(wire value: JSONValue) throws(CowatchError) {
        let reader = try WireReader(object: value)
        self.init(
            name: try reader.name("name", maxLength: ParticipantName.maxLength),
            state: try reader.optionalText("state", maxLength: 32) ?? "joined",
            drift: try reader.optionalNumber("drift", range: -1e7...1e7),
            rtt: try reader.optionalNumber("rtt", range: 0...3600),
            status: try reader.optionalObject("status").map { reader throws(CowatchError) in try ParticipantStatus(wire: reader) } ?? .init())
    }
}

extension ServerMessage {
    public var json: JSONValue {
        switch self {
        case .welcome(let welcome):
            return [
                "type": "welcome", "protocol": .number(Double(welcome.protocolVersion)), "name": .string(welcome.name),
                "room": .string(welcome.room), "timeline": welcome.timeline.json,
                "participants": .array(welcome.participants.map(\.json)), "activity": welcome.activity.json,
                "policy": welcome.policy.json,
            ]
        case .timeReply(let id, let t1, let t2, let t3):
            return ["type": "time_reply", "id": .number(Double(id)), "t1": .number(t1), "t2": .number(t2), "t3": .number(t3)]
        case .applied(let timeline, let notice, let actionID, let activity):
            var object: [String: JSONValue] = ["type": "applied", "timeline": timeline.json]
            if let notice { object["notice"] = notice.json }
            if let actionID { object["action_id"] = .number(Double(actionID)) }
            if let activity { object["activity"] = activity.json }
            return .object(object)
        case .notice(let notice):
            return ["type": "notice", "notice": notice.json]
        case .participants(let list):
            return ["type": "participants", "participants": .array(list.map(\.json))]
        case .ended(let by):
            return ["type": "ended", "by": .string(by)]
        case .error(let code, let message):
            return ["type": "error", "code": .string(code), "message": .string(message)]
        }
    }

    public func encoded() -> [UInt8] { json.encoded() + [UInt8(ascii: "\n")] }

    public static func decode<Bytes: Collection<UInt8>>(line: Bytes) throws(CowatchError) -> ServerMessage {
        let reader = try WireReader(line: line)
        switch try reader.type() {
        case "welcome":
            guard let activity = try reader.optionalObject("activity") else { throw WireReader.violation("welcome needs an activity") }
            return .welcome(Welcome(
                protocolVersion: try reader.integer("protocol"),
                name: try reader.name("name", maxLength: ParticipantName.maxLength),
                room: try reader.name("room", maxLength: 64), timeline: try GroupTimeline(wire: reader.raw("timeline")),
                participants: try participants(reader), activity: try Activity(wire: activity),
                policy: try reader.optionalObject("policy").map { reader throws(CowatchError) in try RoomPolicy(wire: reader) } ?? .init()))
        case "time_reply":
            let range = -1e12...1e12
            return .timeReply(
                id: try reader.integer("id"), t1: try reader.number("t1", range: range),
                t2: try reader.number("t2", range: range), t3: try reader.number("t3", range: range))
        case "applied":
            let notice: Notice? = reader.raw("notice") == nil ? nil : try Notice(wire: reader.raw("notice"))
            return .applied(
                timeline: try GroupTimeline(wire: reader.raw("timeline")), notice: notice,
                actionID: try reader.optionalInteger("action_id"),
                activity: try reader.optionalObject("activity").map { reader throws(CowatchError) in try Activity(wire: reader) })
        case "notice":
            return .notice(try Notice(wire: reader.raw("notice")))
        case "participants":
            return .participants(try participants(reader))
        case "ended":
            return .ended(by: try reader.name("by", maxLength: ParticipantName.maxLength))
        case "error":
            return .error(
                code: try reader.optionalString("code", maxLength: 64) ?? "unknown",
                message: try reader.optionalString("message", maxLength: 1024) ?? "")
        case let other:
            throw WireReader.violation("unknown server message type \"\(other.prefix(32))\"")
        }
    }

    private static func participants(_ reader: WireReader) throws(CowatchError) -> [ParticipantInfo] {
        guard let list = reader.raw("participants")?.arrayValue, list.count <= 1024 else {
            throw WireReader.violation("participants needs an array")
        }
        var participants: [ParticipantInfo] = []
        for entry in list { participants.append(try ParticipantInfo(wire: entry)) }
        return participants
    }
}
