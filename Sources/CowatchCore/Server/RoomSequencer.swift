/// The room server's brain: admission, rooms, roles, and the order of actions.
///
/// The server is each room's *sequencer* — every accepted action gets the next sequence number
/// and every participant receives the same `applied` messages in the same order — and its
/// *reference clock*: `now` is the server's monotonic clock, and every timeline is in it.
///
/// This type composes two pure machines: `ServerAdmission` (connection caps, the hello
/// deadline, budgets, cool-downs) and one `RoomPlayback` per room (timeline, holds, readiness).
/// It runs the handshake (hello → challenge → auth → welcome), checks room secrets and session
/// tokens, and decides who may do what (roles, managed rooms).
///
/// Event methods return `Output`s (messages to send, connections to close, room records to
/// save) for the network shell. Threading: a value type; one owner.
public struct RoomSequencer: Sendable {
    public struct Configuration: Sendable, Equatable {
        public var playback = RoomPlayback.Configuration()
        public var admission = ServerAdmission.Configuration()
        /// Rooms at once, and participants in one room. Defaults 1000 and 64.
        public var maxRooms = 1000
        public var maxParticipantsPerRoom = 64
        /// Members of one room from one address (`AddressIdentity`: an IPv6 /64 counts as one): a
        /// household behind one NAT fits, a few addresses cannot fill a room. Default 16.
        public var maxMembersPerAddress = 16
        /// Seconds a member may say nothing (daemons report every second) before a newcomer to a
        /// full room takes its place, and a room whose members all said nothing that long gives
        /// way to a new room on a full server (its record stays: its people can come back).
        /// Default 15 s.
        public var silentEviction: Double = 15
        /// Seconds an ended room is remembered, so a participant reconnecting into it hears it
        /// ended instead of bringing it back. Default 30 s.
        public var endedRoomMemory: Double = 30
        /// Seconds a room that emptied (or that a restarted server found on disk) keeps its secret
        /// and roles: only someone with its secret can bring it back. Default 600 s.
        public var dormantRoomMemory: Double = 600
        /// Seconds a participant removed with `kick` (its session token, and its name) stays out
        /// of that room; never its address, which others may share. `end` lets everyone back in.
        /// Default 300 s.
        public var kickCooldown: Double = 300
        /// The server's certificate fingerprint as clients see it (`sha256:…`), bound into the
        /// secret's proofs; empty without TLS.
        public var certificateFingerprint = ""
        /// The session tokens' key (kept on disk by the shell so tokens outlive restarts).
        public var tokenKey: [UInt8] = SessionTokens.newKey()
        /// Rooms only one participant may create, and always owns (room → its session token,
        /// issued in advance with `tokenKey`): the host of `cowatchd --host` owns its room even if
        /// a stranger's hello comes first, and gets it back after its own restart.
        public var reservedRooms: [String: String] = [:]
        /// Serve the reserved rooms only (`cowatchd --host`): other room names are refused.
        public var onlyReservedRooms = false
        /// Room records (live and dormant) at once, and created from one address. Defaults 2000 and 16.
        public var maxRecords = 2000
        public var maxRecordsPerAddress = 16
        /// Operators one room may have. Default 32.
        public var maxOperators = 32
        /// Names one room's record holds for the tokens that joined under them (`HeldNames`):
        /// twice a full room, everyone in it and as many who stepped out. Default 128.
        public var maxHeldNames = 128
        /// Chat (`--no-chat` turns it off: the feature is not offered). Default on.
        public var chat = true
        /// Chat lines a room keeps for late joiners. Default 50. Past it, the oldest line of the
        /// sender with the most lines kept goes.
        public var chatHistory = 50
        /// Attachments: on or off, sizes and quotas (see `RoomJournal.Configuration`).
        public var journal = RoomJournal.Configuration()
        /// Film streams relayed between members (`--no-streams`, and a cluster server, turn it
        /// off: the feature is not offered, so daemons know before they try). Default on.
        public var streams = true
        /// Seconds a new room's playlist counts down between everyone having loaded the next
        /// entry and everyone starting it (0…60; the room may change it). Default 3.
        public var playlistCountdown: Double = RoomPlaylist.defaultCountdown
        /// Where shuffles draw their seeds from: nil (the default) for random ones; a value makes
        /// every shuffle replayable (tests).
        public var playlistSeed: UInt64?

        public init() {}

        /// Convenience for the older flat settings.
        public var playWhenReady: Bool {
            get { playback.playWhenReady }
            set { playback.playWhenReady = newValue }
        }
        public var waitTimeout: Double {
            get { playback.waitTimeout }
            set { playback.waitTimeout = newValue }
        }
        /// Every room is managed: only owners and operators control playback. Default false.
        public var managed: Bool {
            get { playback.managed }
            set { playback.managed = newValue }
        }
    }

    public typealias ConnectionID = Int

    public enum Output: Sendable, Equatable {
        case send(ConnectionID, ServerMessage)
        /// Chat and messenger traffic: written after sync traffic; an unreliable message
        /// (`reliable` false) is dropped when the connection is behind.
        case sendMessage(ConnectionID, ServerMessage, reliable: Bool)
        /// Answer a reliable message with `message_ack` once the copies queued just before (by
        /// the preceding outputs) are written: the shell keeps a `DeliveryTracker`.
        case acknowledgeWhenWritten(DeliveryReceipt)
        case close(ConnectionID)
        /// The rooms' records changed: save `records` (the shell keeps them on disk).
        case saveRecords
        /// (journal) Transfer connection: say `transfer_ready` with what is kept of `id` (an
        /// interrupted upload's bytes when `resume`; otherwise those go first) and receive the
        /// rest up to `size`, verify the SHA-256, then call `uploadFinished` — or
        /// `uploadInterrupted` when the bytes stop coming.
        case receiveUpload(ConnectionID, id: String, size: Int, resume: Bool)
        /// (journal) Transfer connection: say `transfer_ready` and send bytes `offset..<size` of
        /// stored content `id`, then close.
        case sendDownload(ConnectionID, id: String, size: Int, offset: Int)
        /// (journal) Nothing refers to content `id` any more: delete its bytes (whole or partial).
        case deleteStored(String)
        /// (`stream`) Connection `ConnectionID` carries stream `stream` (a file of `size` bytes)
        /// from here on: the shell pairs it with the other connection of that number (the
        /// receiver's and the sharer's), says `stream_ready` to both, and relays their bytes.
        case relayStream(ConnectionID, stream: Int, size: Int)
    }

    /// Where a room's group was, kept with its record so that a restarted server (or host)
    /// carries on from there: the position at `at` (the sequencer's clock), playing or not, at
    /// `rate`, for the activity named by `url` and `title`.
    public struct KeptTimeline: Sendable, Equatable {
        public var url: String
        public var title: String?
        public var position: Double
        public var playing: Bool
        public var rate: Double
        public var at: Double

        public init(url: String, title: String?, position: Double, playing: Bool, rate: Double, at: Double) {
            self.url = url
            self.title = title
            self.position = position
            self.playing = playing
            self.rate = rate
            self.at = at
        }

        /// The group's timeline now, if `activity` is the same one (same URL or same title).
        func resumed(for activity: Activity?, now: Double) -> GroupTimeline? {
            guard let activity, activity.url == url || (title != nil && activity.title == title) else { return nil }
            let position = playing ? self.position + max(0, now - at) * rate : self.position
            return GroupTimeline(seq: 0, position: position, reference: now, rate: rate, playing: playing)
        }
    }

    /// What is remembered of a room beyond its playback, and kept on disk.
    ///
    /// Roles belong to tokens, not to names: the owner's and each operator's name is held by the
    /// id of the session token it had when it got the role, and only that token gives the role
    /// (and the name) back. Nobody else may take those names.
    /// Other names are held the same way, by the token that last joined under them (`names`).
    public struct RoomRecord: Sendable, Equatable {
        public var verifier: RoomVerifier?
        /// Where the group was when the record was last saved (or the room fell asleep).
        public var timeline: KeptTimeline?
        public var owner: String?
        /// The id (`SessionTokens.id(of:)`) of the owner's token.
        public var ownerToken: String?
        /// Operator name → the id of its token.
        public var operators: [String: String]
        /// Every name a participant with a token joined under, held by that token (`HeldNames`).
        public var names: HeldNames
        /// The room's shared playlist (`playlist`), kept with its record across restarts.
        public var playlist: RoomPlaylist
        /// Dormant since (nil while the room is alive). Not kept on disk.
        public var dormantSince: Double?
        /// Who created the room (its address), for the per-address cap. Not kept on disk.
        public var creatorAddress: String?

        public init(
            verifier: RoomVerifier? = nil, owner: String? = nil, ownerToken: String? = nil, operators: [String: String] = [:],
            dormantSince: Double? = nil, creatorAddress: String? = nil, timeline: KeptTimeline? = nil, names: HeldNames = .init(),
            playlist: RoomPlaylist = .init()
        ) {
            self.verifier = verifier
            self.timeline = timeline
            self.owner = owner
            self.ownerToken = ownerToken
            self.operators = operators
            self.names = names
            self.playlist = playlist
            self.dormantSince = dormantSince
            self.creatorAddress = creatorAddress
        }

        /// What goes to disk (the rest is this run's).
        public var persisted: RoomRecord {
            RoomRecord(
                verifier: verifier, owner: owner, ownerToken: ownerToken, operators: operators, timeline: timeline,
                names: names.persisted, playlist: playlist.persisted)
        }

        /// The role `tokenID` holds under `name`, if any.
        func role(of name: String, tokenID: String?) -> Role? {
            guard let tokenID else { return nil }
            if owner == name, let ownerToken, RoomSecret.matches(ownerToken, tokenID) { return .owner }
            if let held = operators[name], RoomSecret.matches(held, tokenID) { return .operator }
            return nil
        }

        /// True when `name` is the owner's or an operator's and `tokenID` is not theirs.
        func reserves(_ name: String, against tokenID: String?) -> Bool {
            let held = owner == name ? ownerToken : operators[name]
            guard let held else { return false }
            return tokenID.map { !RoomSecret.matches(held, $0) } ?? true
        }
    }

    struct Handshake {
        var hello: ClientMessage.Hello
        var nonce: String
        var access: ServerMessage.RoomAccess
        var challenges = 1
    }

    struct Joined {
        var room: String
        var name: String
        /// The token this connection's welcome carried: only a reconnect presenting it replaces
        /// this connection.
        var token: String
        /// It negotiated `action-deadline`: its actions must carry one.
        var deadlines = false
        /// The optional features it negotiated (chat, messages, …).
        var features: Set<String> = []
        /// What its messages' recipients are told of its token (`SessionTokens.sender(ofID:)`):
        /// message ids are per token, never per name.
        var sender = ""
    }

    struct HostedRoom {
        var playback: RoomPlayback
        var creatorAddress: String
    }

    public let configuration: Configuration
    var admission: ServerAdmission
    let tokens: SessionTokens
    var handshakes: [ConnectionID: Handshake] = [:]
    var joined: [ConnectionID: Joined] = [:]
    var rooms: [String: HostedRoom] = [:]
    /// Secrets and roles of live and dormant rooms.
    public internal(set) var records: [String: RoomRecord] = [:]
    /// Recently ended rooms: who ended them, and until when that is remembered.
    var endedRooms: [String: (by: String, until: Double)] = [:]
    /// Kicked names (`name:`) and session tokens (`token:` and its id) per room, until when.
    var kicked: [String: [String: Double]] = [:]
    /// Each room's recent chat lines, for late joiners (gone with the room).
    var chatHistory: [String: [ChatLine]] = [:]
    /// Each room's attachments, uploads and transfers (gone with the room).
    public internal(set) var journal: RoomJournal
    /// Each room's offered films and the streams asked for and relayed (gone with the room).
    var streams = StreamBook()
    /// Rooms by their next deadline (`store` keeps it current), so `tick` touches only due rooms.
    var roomDeadlines = DeadlineHeap<String>()
    /// The deadline each room has in `roomDeadlines`; other entries for it are stale.
    var scheduledDeadline: [String: Double] = [:]
    /// When the earliest dormant record is forgotten (infinity when none sleeps).
    var nextDormantExpiry = Double.infinity
    /// When `tick` next sweeps records and kicks (at most once a second: they keep for minutes).
    var nextHousekeeping = -Double.infinity
    /// Seeds drawn for shuffles (see `Configuration.playlistSeed`).
    var playlistDraws: UInt64 = 0

    public init(configuration: Configuration = .init(), records: [String: RoomRecord] = [:], now: Double = 0) {
        self.configuration = configuration
        self.admission = ServerAdmission(configuration: configuration.admission)
        self.tokens = SessionTokens(key: configuration.tokenKey)
        self.journal = RoomJournal(configuration: configuration.journal)
        // Rooms found on disk: alive when the server stopped, dormant now.
        self.records = records.mapValues { record in
            var dormant = record
            dormant.dormantSince = min(record.dormantSince ?? now, now)
            dormant.names = HeldNames(record.names.holds, limit: configuration.maxHeldNames)
            if record.playlist.version == 0 { dormant.playlist = RoomPlaylist(countdown: configuration.playlistCountdown) }
            return dormant
        }
        self.nextDormantExpiry = self.records.values.compactMap(\.dormantSince).min().map { $0 + configuration.dormantRoomMemory } ?? .infinity
    }

    /// The records to write to disk at `now`: each live room's with where its group is.
    public func recordsForSaving(now: Double) -> [String: RoomRecord] {
        var result = records
        for (name, room) in rooms {
            result[name]?.timeline = Self.kept(room.playback, now: now)
        }
        return result
    }

    /// Whether a room's timeline moved since `markTimelinesSaved` (so its record is worth saving).
    public private(set) var timelinesChanged = false

    public mutating func markTimelinesSaved() {
        timelinesChanged = false
    }

    static func kept(_ playback: RoomPlayback, now: Double) -> KeptTimeline {
        let timeline = playback.timeline
        return KeptTimeline(
            url: playback.activity.url, title: playback.activity.title, position: timeline.position(at: now),
            playing: timeline.playing, rate: timeline.rate, at: now)
    }

    /// Writes a room back, and schedules its next deadline when that moved.
    mutating func store(_ room: HostedRoom, as name: String) {
        if rooms[name]?.playback.timeline.seq != room.playback.timeline.seq
            || rooms[name]?.playback.activity != room.playback.activity
        {
            timelinesChanged = true
        }
        rooms[name] = room
        let deadline = room.playback.nextDeadline()
        guard scheduledDeadline[name] != deadline else { return }
        scheduledDeadline[name] = deadline
        if deadline.isFinite { roomDeadlines.push(deadline, name) }
    }

    /// Forgets a room (its deadline entries go stale).
    mutating func removeRoom(_ name: String) {
        rooms[name] = nil
        scheduledDeadline[name] = nil
    }

    /// A room fell asleep at `now`: its record is forgotten `dormantRoomMemory` later.
    mutating func noteDormant(_ name: String, now: Double) {
        records[name]?.dormantSince = now
        nextDormantExpiry = min(nextDormantExpiry, now + configuration.dormantRoomMemory)
    }

    // MARK: Connections

    /// A new connection from `address`; it may be refused at once (caps, a cool-down).
    @discardableResult
    public mutating func connected(_ id: ConnectionID, address: String = "local", now: Double) -> [Output] {
        // Budgets count what an identity costs to make: an IPv6 /64 is one address.
        if let refusal = admission.connected(id, address: AddressIdentity.key(of: address), now: now) {
            return [.send(id, .error(code: refusal.code.rawValue, message: refusal.message)), .close(id)]
        }
        return []
    }

    /// Closes the connections of `members`, who said nothing for `silentEviction` seconds and
    /// whose places are wanted, telling each why.
    private mutating func evict(_ members: [ConnectionID], now: Double) -> [Output] {
        var outputs: [Output] = []
        for member in members {
            let why = "nothing heard from you for over \(Int(configuration.silentEviction)) s: your place went to someone else"
            outputs += [.send(member, .error(code: CowatchError.Code.timeout.rawValue, message: why))]
            outputs += disconnected(member, now: now) + [.close(member)]
        }
        return outputs
    }

    /// A room every member of which has said nothing for `silentEviction` seconds, the longest
    /// silent first; nil when none.
    private func silentRoom(now: Double) -> String? {
        rooms.map { ($0.key, $0.value.playback.shortestSilence(now: now)) }
            .filter { $0.1 > configuration.silentEviction && $0.1.isFinite }
            .max { $0.1 < $1.1 }?.0
    }

    public mutating func disconnected(_ id: ConnectionID, now: Double) -> [Output] {
        admission.disconnected(id)
        handshakes[id] = nil
        let orphan = journal.transferEnded(id).map { [Output.deleteStored($0)] } ?? []
        streams.connectionEnded(id)
        guard let membership = joined.removeValue(forKey: id) else { return orphan }
        return orphan + leave(id, membership, now: now, notice: nil)
    }

    mutating func leave(_ id: ConnectionID, _ membership: Joined, now: Double, notice: Notice?) -> [Output] {
        guard var room = rooms[membership.room] else { return [] }
        records[membership.room]?.playlist.forget(membership.name)
        var outputs = room.playback.leave(id, now: now, notice: notice).map(Self.output)
        if room.playback.isEmpty {
            streams.roomGone(membership.room)
            // Empty: the room sleeps, keeping its secret, roles and place for a while.
            // Everyone stopped watching: the room comes back paused where they left it.
            var kept = Self.kept(room.playback, now: now)
            kept.playing = false
            records[membership.room]?.timeline = kept
            timelinesChanged = true
            removeRoom(membership.room)
            chatHistory[membership.room] = nil
            noteDormant(membership.room, now: now)
            return outputs + journal.roomEmptied(membership.room).map(Output.deleteStored)
        }
        store(room, as: membership.room)
        // A name that is still in the room (a reconnect replaced this connection) keeps its offers
        // and its uploads.
        if room.playback.member(named: membership.name) == nil {
            outputs += sharerLeft(membership.name, room: membership.room)
            outputs += uploaderLeft(membership.name, room: membership.room)
        }
        return outputs
    }

    /// Handles one decoded message.
    public mutating func received(_ message: ClientMessage, from id: ConnectionID, now: Double) -> [Output] {
        guard admission.address(of: id) != nil, !admission.isRefused(id) else { return [] }
        guard admission.received(from: id, now: now) else {
            return refuse(id, CowatchError(.flooding, "more than \(Int(configuration.admission.floodRate)) messages a second"), now: now)
        }
        switch message {
        case .timeRequest(let requestID, let t1):
            return [.send(id, .timeReply(id: requestID, t1: t1, t2: now, t3: now))]
        case .hello(let hello):
            return greet(id, hello, now: now)
        case .auth(let auth):
            return authenticate(id, auth, now: now)
        case .bye:
            return disconnected(id, now: now) + [.close(id)]
        case .transfer(let request):
            return transferRequested(request, from: id, now: now)
        case .stream(let request):
            return streamRequested(request, from: id, now: now)
        case .streamServe(let serve):
            return streamServed(serve, from: id, now: now)
        case .unknown(let type):
            return [.send(id, .unsupported(type: type))]
        case .unsupported:
            return []
        case .ready, .report, .status, .media, .playlistHave, .playlistEnded, .streamStatus:
            // Harmless before a welcome, and daemons before 2026-11-24 sent them during a
            // reconnect's handshake: ignored, where refusing them ended that daemon's session.
            guard let membership = joined[id] else { return [] }
            return inRoom(message, from: id, membership, now: now)
        case .action, .end, .role, .kick, .chat, .message, .detach, .playlistEdit, .share, .unshare:
            guard let membership = joined[id] else {
                return refuse(id, CowatchError(.protocolViolation, "say hello first"), now: now)
            }
            return inRoom(message, from: id, membership, now: now)
        }
    }

    /// A line that could not be decoded (or was too long): the connection is closed with `error`.
    public mutating func rejected(_ id: ConnectionID, _ error: CowatchError, now: Double) -> [Output] {
        guard admission.address(of: id) != nil else { return [] }
        return refuse(id, error, now: now)
    }

    /// Sends an error, closes the connection, and tells its room it left.
    mutating func refuse(_ id: ConnectionID, _ error: CowatchError, now: Double) -> [Output] {
        [.send(id, .error(code: error.code.rawValue, message: error.message))] + disconnected(id, now: now) + [.close(id)]
    }

    // MARK: Handshake

    private func access(to room: String) -> ServerMessage.RoomAccess {
        guard let record = records[room] else { return .new }
        if let verifier = record.verifier { return .secret(salt: verifier.salt) }
        return rooms[room] == nil ? .new : .open
    }

    /// Why a kick keeps this hello out, if it does. A kick holds the removed participant's
    /// session token and its name for `kickCooldown`, never its address (a household's or a
    /// dormitory's NAT): the removed one hears it was removed; anyone else under that name only
    /// that the name is kept out; other names from the same address get in.
    private func kickRefusal(_ hello: ClientMessage.Hello, now: Double) -> CowatchError? {
        guard let kicks = kicked[hello.room] else { return nil }
        func wait(_ key: String) -> Int? {
            kicks[key].flatMap { $0 > now ? Int(($0 - now).rounded(.up)) : nil }
        }
        if let tokenID = provenTokenID(hello), let seconds = wait("token:" + tokenID) {
            return CowatchError(.kicked, "you were removed from room \(hello.room); try again in \(seconds) s")
        }
        if let seconds = wait("name:" + hello.name) {
            return CowatchError(
                .nameTaken,
                "the name \(hello.name) was removed from room \(hello.room) and is kept out for \(seconds) s more; join under another name")
        }
        return nil
    }

    private mutating func greet(_ id: ConnectionID, _ hello: ClientMessage.Hello, now: Double) -> [Output] {
        guard handshakes[id] == nil, joined[id] == nil else {
            return refuse(id, CowatchError(.protocolViolation, "hello twice"), now: now)
        }
        let common = hello.versions.clamped(to: wireProtocolVersions)
        guard hello.versions.overlaps(wireProtocolVersions), !common.isEmpty else {
            return refuse(id, CowatchError(
                .unsupportedVersion,
                "this server speaks room protocol \(Self.describe(wireProtocolVersions)), the client \(Self.describe(hello.versions)); update the older side"),
                now: now)
        }
        guard hello.nonce.utf8.count == 64 else {
            return refuse(id, CowatchError(.protocolViolation, "hello needs a nonce"), now: now)
        }
        if let refusal = kickRefusal(hello, now: now) {
            return refuse(id, refusal, now: now)
        }
        endedRooms = endedRooms.filter { $0.value.until > now }
        if rooms[hello.room] == nil, hello.resume != nil, let ended = endedRooms[hello.room] {
            // A participant that lost its link just before the end would otherwise restart the
            // room from its `resume`: tell it the activity ended.
            admission.disconnected(id)
            return [.send(id, .ended(by: ended.by)), .close(id)]
        }
        if configuration.onlyReservedRooms, configuration.reservedRooms[hello.room] == nil {
            return refuse(id, CowatchError(.roomFull, "this server hosts its own room only, not \(hello.room)"), now: now)
        }
        let nonce = RoomSecret.nonce()
        let guarded = access(to: hello.room)
        if case .secret = guarded, let lockout = admission.authLockout(of: id, room: hello.room, name: hello.name, now: now) {
            // This name got the secret wrong too often from this address: said at once (it tries nothing).
            return refuse(id, lockout, now: now)
        }
        handshakes[id] = Handshake(hello: hello, nonce: nonce, access: guarded)
        let features = offeredFeatures(hello)
        return [.send(id, .challenge(.init(protocolVersion: common.upperBound, features: features, nonce: nonce, access: guarded)))]
    }

    /// The optional features both sides speak (chat only when this server offers it).
    private func offeredFeatures(_ hello: ClientMessage.Hello) -> [String] {
        hello.features.filter {
            WireFeature.all.contains($0) && (configuration.chat || $0 != WireFeature.chat)
                && (configuration.journal.enabled || $0 != WireFeature.journal)
                && (configuration.streams || $0 != WireFeature.stream)
        }
    }

    private static func describe(_ range: ClosedRange<Int>) -> String {
        range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound)–\(range.upperBound)"
    }

    private mutating func authenticate(_ id: ConnectionID, _ auth: ClientMessage.Auth, now: Double) -> [Output] {
        guard var handshake = handshakes[id] else {
            return refuse(id, CowatchError(.protocolViolation, "auth without a challenge"), now: now)
        }
        let hello = handshake.hello
        let current = access(to: hello.room)
        guard current == handshake.access else {
            // The room changed meanwhile (created, or given a secret): challenge again, a few times.
            guard handshake.challenges < 3 else {
                return refuse(id, CowatchError(.serverBusy, "room \(hello.room) keeps changing; try again"), now: now)
            }
            handshake.challenges += 1
            handshake.nonce = RoomSecret.nonce()
            handshake.access = current
            handshakes[id] = handshake
            return [.send(id, .challenge(.init(nonce: handshake.nonce, access: current)))]
        }
        var verifier: RoomVerifier?
        switch current {
        case .secret:
            if let lockout = admission.authLockout(of: id, room: hello.room, name: hello.name, now: now) {
                return refuse(id, lockout, now: now)
            }
            verifier = records[hello.room]?.verifier
            guard let verifier, let proof = auth.proof,
                RoomSecret.matches(proof, RoomSecret.proof(
                    key: verifier.key, side: .client, room: hello.room, name: hello.name, clientNonce: hello.nonce,
                    serverNonce: handshake.nonce, fingerprint: configuration.certificateFingerprint))
            else {
                handshakes[id] = nil
                admission.authFailed(id, room: hello.room, name: hello.name, error: CowatchError(
                    .authFailed, auth.proof == nil
                        ? "room \(hello.room) needs its secret (--room-secret-file, or the invite link)"
                        : "wrong secret for room \(hello.room) (if its host changed it, ask for the new invite)"), now: now)
                return []
            }
        case .open:
            break
        case .new:
            verifier = auth.create
        }
        return join(id, handshake, offered: verifier, now: now)
    }

    /// The id of the hello's token when it verifies for its room and name.
    func provenTokenID(_ hello: ClientMessage.Hello) -> String? {
        guard let token = hello.token, tokens.verify(token, room: hello.room, name: hello.name) else { return nil }
        return SessionTokens.id(of: token)
    }

    /// Admits an authenticated participant. `offered`: the verifier a creator gave (or the
    /// room's own, when the joiner proved it).
    private mutating func join(_ id: ConnectionID, _ handshake: Handshake, offered: RoomVerifier?, now: Double) -> [Output] {
        let hello = handshake.hello
        let address = admission.address(of: id) ?? ""
        let provenID = provenTokenID(hello)
        let reservedHost = configuration.reservedRooms[hello.room].map { reserved in
            hello.token.map { RoomSecret.matches($0, reserved) } ?? false
        }
        var outputs: [Output] = []
        // The owner's and operators' names belong to their tokens (the reserved host's to its own).
        if reservedHost != true, records[hello.room]?.reserves(hello.name, against: provenID) == true {
            return refuse(id, CowatchError(.nameTaken, "the name \(hello.name) is already taken by someone with a role in room \(hello.room)"), now: now)
        }
        // Every other name belongs to the token that last joined under it, also while its person
        // is away (one in the room now is for the check below: only its own token replaces it).
        if reservedHost != true, rooms[hello.room]?.playback.member(named: hello.name) == nil,
            records[hello.room]?.names.refuses(hello.name, tokenID: provenID) == true
        {
            return refuse(id, CowatchError(
                .nameTaken,
                "the name \(hello.name) belongs to someone who was in room \(hello.room), and only they get it back; join under another name"),
                now: now)
        }
        if let room = rooms[hello.room], let previous = room.playback.member(named: hello.name) {
            // The same name is in the room. Only the token that connection was given may replace
            // it (a reconnect while the old connection still looks alive); anyone else, even a
            // former holder of the name, is a newcomer with a taken name.
            guard provenID != nil, let held = joined[previous]?.token, let given = hello.token, RoomSecret.matches(given, held) else {
                return refuse(id, CowatchError(.nameTaken, "a participant named \(hello.name) is already in room \(hello.room)"), now: now)
            }
            outputs += disconnected(previous, now: now) + [.close(previous)]
        }
        let createsRecord = records[hello.room] == nil
        if rooms[hello.room] == nil {
            if reservedHost == false {
                return refuse(id, CowatchError(.serverBusy, "room \(hello.room) opens when its host is in; try again in a moment"), now: now)
            }
            let created = rooms.values.filter { $0.creatorAddress == address }.count
            let remembered = records.values.filter { $0.creatorAddress == address }.count
            guard created < configuration.admission.maxRoomsPerAddress, !createsRecord || remembered < configuration.maxRecordsPerAddress else {
                return refuse(id, CowatchError(.serverBusy, "too many rooms from \(address)"), now: now)
            }
            if rooms.count >= configuration.maxRooms {
                // Rooms whose members all went silent give way (squatters' sockets that say nothing).
                guard let silent = silentRoom(now: now) else {
                    return refuse(id, CowatchError(.roomFull, "the server has no room for another room"), now: now)
                }
                outputs += evict(rooms[silent]?.playback.memberIDs ?? [], now: now)
            }
            if createsRecord, records.count >= configuration.maxRecords, !forgetOldestDormantRecord() {
                return refuse(id, CowatchError(.roomFull, "the server remembers too many rooms"), now: now)
            }
        } else {
            let playback = rooms[hello.room]!.playback
            guard playback.memberCount(from: address) < configuration.maxMembersPerAddress else {
                return refuse(id, CowatchError(
                    .roomFull, "room \(hello.room) already holds \(configuration.maxMembersPerAddress) members from your address"), now: now)
            }
            if playback.memberIDs.count >= configuration.maxParticipantsPerRoom {
                // A member that says nothing (a dead link, or a squatter's socket) makes room.
                guard let silent = playback.longestSilent(longerThan: configuration.silentEviction, now: now) else {
                    return refuse(id, CowatchError(.roomFull, "room \(hello.room) is full"), now: now)
                }
                outputs += evict([silent], now: now)
            }
        }

        // The same token on every reconnect: roles are bound to it.
        let token = provenID != nil ? hello.token! : tokens.issue(room: hello.room, name: hello.name)
        let tokenID = SessionTokens.id(of: token)
        var record = records[hello.room] ?? RoomRecord(
            verifier: offered, owner: hello.name, ownerToken: tokenID, creatorAddress: address,
            playlist: RoomPlaylist(countdown: configuration.playlistCountdown))
        var role = record.role(of: hello.name, tokenID: tokenID) ?? .member
        if reservedHost == true {
            // The host owns its room, also with a token from after its own restart.
            record.owner = hello.name
            record.ownerToken = tokenID
            record.operators[hello.name] = nil
            role = .owner
        }
        // The name is this token's now, for as long as the room is remembered.
        record.names.hold(hello.name, tokenID: tokenID, address: address, limit: configuration.maxHeldNames) { name in
            name != hello.name && rooms[hello.room]?.playback.member(named: name) != nil
        }
        if role == .owner, record.verifier == nil, let offered {
            // The owner brings back a room that slept without a secret, now with one. Anyone else's
            // verifier for an existing record is ignored: it would lock the members out.
            record.verifier = offered
        }
        let changed = record.persisted != records[hello.room]?.persisted
        record.dormantSince = nil
        records[hello.room] = record

        var room = rooms[hello.room] ?? {
            // A room that restarts (the server lost it) carries on from where the group was: on
            // the word of someone who was in it (the token proves that) and may control playback,
            // else from the place kept with its record; else from the start.
            let mayControl = !configuration.playback.managed || role.isPrivileged
            let told = provenID != nil && mayControl ? hello.resume.map {
                GroupTimeline(seq: 0, position: $0.position, reference: now, rate: $0.rate, playing: $0.playing)
            } : nil
            let start = told ?? record.timeline?.resumed(for: hello.activity, now: now)
            // The room's first media is each participant's own; a creator cannot pose it as a
            // switch (`id` > 0) made by someone else.
            var activity = hello.activity ?? Activity(url: "unknown")
            activity.id = 0
            activity.openedBy = nil
            return HostedRoom(
                playback: RoomPlayback(
                    activity: activity, timeline: start ?? .initial(at: now), now: now, configuration: configuration.playback),
                creatorAddress: address)
        }()
        if rooms[hello.room] == nil {
            // A room (re)starting: its playlist finds out whether the room plays its entry.
            records[hello.room]?.playlist.roomStarted(with: room.playback.activity)
        }
        outputs += room.playback.join(id, name: hello.name, stallKey: address, role: role, status: hello.status, now: now)
            .map(Self.output)
        store(room, as: hello.room)
        handshakes[id] = nil
        let features = Set(offeredFeatures(hello))
        joined[id] = Joined(
            room: hello.room, name: hello.name, token: token, deadlines: hello.features.contains(WireFeature.actionDeadline),
            features: features, sender: SessionTokens.sender(ofID: tokenID))
        admission.joined(id, now: now)
        // Proved with the room's own verifier, never with one a joiner merely offered.
        let proof = records[hello.room]?.verifier.map {
            RoomSecret.proof(
                key: $0.key, side: .server, room: hello.room, name: hello.name, clientNonce: hello.nonce,
                serverNonce: handshake.nonce, fingerprint: configuration.certificateFingerprint)
        }
        let welcome = ServerMessage.welcome(.init(
            name: hello.name, room: hello.room, timeline: room.playback.timeline, participants: room.playback.participants(),
            activity: room.playback.activity, policy: room.playback.policy, token: token, role: role, proof: proof))
        // The room's recent chat, after the welcome, marked as history.
        var history: [Output] = []
        if features.contains(WireFeature.chat) {
            for line in chatHistory[hello.room] ?? [] {
                var old = line
                old.history = true
                history.append(.sendMessage(id, .chat(old), reliable: true))
            }
        }
        if features.contains(WireFeature.journal) {
            // The room's attachments, so a late joiner can fetch them (GroupSessionJournal).
            for attachment in journal.attachments(in: hello.room) {
                history.append(.sendMessage(id, .attachmentAdded(attachment, history: true), reliable: true))
            }
        }
        if features.contains(WireFeature.playlist) {
            // The list and its current entry, in the sync lane: the next `applied` may name it.
            history += playlistWelcome(id, room: hello.room)
        }
        if features.contains(WireFeature.stream) {
            history += sharesWelcome(id, room: hello.room)
        }
        return [.send(id, welcome)] + history + outputs + (changed ? [.saveRecords] : [])
    }

    /// Makes space for a new record by forgetting the dormant one that slept longest.
    private mutating func forgetOldestDormantRecord() -> Bool {
        guard let oldest = records.filter({ $0.value.dormantSince != nil }).min(by: { $0.value.dormantSince! < $1.value.dormantSince! })
        else { return false }
        records[oldest.key] = nil
        return true
    }

    // MARK: In a room

    private mutating func inRoom(_ message: ClientMessage, from id: ConnectionID, _ membership: Joined, now: Double) -> [Output] {
        if case .report(let drift, let rtt) = message {
            // Every member, every second: changed in place (a copy of the room would copy its
            // member table on write); it moves no deadline.
            rooms[membership.room]?.playback.report(drift: drift, rtt: rtt, from: id, now: now)
            return []
        }
        if case .streamStatus(let report) = message {
            // Telemetry like `report`: kept in place, shown in the next participant list.
            guard membership.features.contains(WireFeature.stream) else { return [.send(id, .unsupported(type: "stream_status"))] }
            rooms[membership.room]?.playback.streamReported(report, from: id)
            return []
        }
        guard var room = rooms[membership.room] else { return [] }
        let role = room.playback.role(of: id) ?? .member
        var outputs: [RoomPlayback.Output] = []
        switch message {
        case .action(let action):
            if let refusal = check(action, from: id, in: membership.room, role: role, deadlineRequired: membership.deadlines, now: now) {
                return [.send(id, .refused(actionID: action.id, code: refusal.code.rawValue, message: refusal.message))]
            }
            outputs = room.playback.apply(action, from: id, now: now)
        case .ready(let seq):
            outputs = room.playback.landed(seq: seq, from: id, now: now)
        case .report(let drift, let rtt):
            room.playback.report(drift: drift, rtt: rtt, from: id, now: now)
        case .status(let status):
            let newStall = status.stall != nil && status.stall != .loading
            let mayHold = !newStall || admission.allowStall(from: id, in: membership.room, now: now)
            outputs = room.playback.statusChanged(status, of: id, mayHold: mayHold, now: now)
        case .media(let activity, let info):
            outputs = room.playback.mediaReported(info, activity: activity, by: id)
            playlistMediaReported(info, activity: activity, room: membership.room)
        case .end(let requestID):
            let request = Request(connection: id, id: answerID(requestID, membership))
            let ownerPresent = records[membership.room]?.owner.flatMap { room.playback.member(named: $0) } != nil
            let openRoom = records[membership.room]?.verifier == nil
            guard role.isPrivileged || (openRoom && !ownerPresent) else {
                return notPermitted(request, "only the room's owner and operators may end it for everyone")
            }
            // Without its owner, an open room is ended by those who were watching, never by a
            // newcomer to an evening others were in before them.
            guard role.isPrivileged || !room.playback.hasSomeoneBefore(id) else {
                return notPermitted(
                    request,
                    "you joined after others who are still here: only the owner, an operator or whoever was here first may end it")
            }
            return end(membership.room, by: membership.name, answering: request, now: now)
        case .role(let name, let newRole, let requestID):
            return setRole(of: name, to: newRole, by: Request(connection: id, id: answerID(requestID, membership)), membership, now: now)
        case .kick(let name, let requestID):
            return kick(name, by: Request(connection: id, id: answerID(requestID, membership)), membership, now: now)
        case .chat(let requestID, let text):
            return chat(text, requestID: requestID, from: id, membership, now: now)
        case .message(let message):
            return relay(message, from: id, membership, now: now)
        case .detach(let requestID, let attachment):
            return detach(attachment, requestID: requestID, from: id, membership, role: role, managed: room.playback.policy.managed)
        case .playlistEdit(let request):
            return playlistEdit(request, from: id, membership, now: now)
        case .playlistHave(let version, let have):
            return playlistHave(version: version, have: have, from: id, membership, now: now)
        case .playlistEnded(let activity, let position):
            return playlistEnded(activity: activity, position: position, from: id, membership, now: now)
        case .share(let file, let activity):
            return share(file, activity: activity, from: id, membership, role: role, managed: room.playback.policy.managed)
        case .unshare(let fingerprint):
            return unshare(fingerprint, from: id, membership)
        default:
            return []
        }
        store(room, as: membership.room)
        return outputs.map(Self.output)
    }

    /// Why an action may not go ahead, if it may not.
    private mutating func check(
        _ action: ClientMessage.ActionRequest, from id: ConnectionID, in room: String, role: Role, deadlineRequired: Bool, now: Double
    ) -> CowatchError? {
        if deadlineRequired, action.deadline == nil {
            return CowatchError(.expired, "the \(action.kind.rawValue) carries no deadline, so it may be stale")
        }
        if let deadline = action.deadline, now > deadline {
            return CowatchError(.expired, "the \(action.kind.rawValue) arrived \(Int(((now - deadline) * 1000).rounded())) ms after its sender gave up")
        }
        if configuration.managed && !role.isPrivileged {
            return CowatchError(.notPermitted, "in this managed room only the owner and operators may \(action.kind.rawValue)")
        }
        if action.kind == .open, let activity = action.activity {
            for url in [activity.url] + (activity.fallbackURL.map { [$0] } ?? []) where !Self.isNetworkURL(url) {
                return CowatchError(.notPermitted, "a room opens network URLs only (http, https, …), never local paths or file:")
            }
        }
        // Last, so refused actions do not spend the budget.
        if !admission.allowAction(from: id, in: room, now: now) {
            return CowatchError(.rateLimited, "too many actions; wait a moment")
        }
        return nil
    }

    /// Schemes of network protocols mpv speaks. Everything else (file:, mpv's av://, edl://,
    /// lavfi, devices, …) could make a player read local data, so a room never opens it.
    static let networkSchemes: Set<String> = [
        "http", "https", "ftp", "ftps", "sftp", "rtmp", "rtmps", "rtsp", "rtsps", "srt", "mms", "mmsh", "smb", "ytdl",
    ]

    /// `scheme://host…` with a network scheme and a host.
    static func isNetworkURL(_ url: String) -> Bool {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return false }
        let scheme = url[..<colon].lowercased()
        let rest = url[colon...].dropFirst(3)
        guard let host = rest.first, host != "/" else { return false }
        return networkSchemes.contains(scheme)
    }

    static func output(_ output: RoomPlayback.Output) -> Output {
        switch output {
        case .send(let id, let message): .send(id, message)
        }
    }
}
