/// A Cowatch daemon's side of a Syncplay server's protocol: the whole conversation as a state
/// machine. Each event method takes the time (local monotonic seconds) and returns the
/// `Action`s the shell carries out in order; the machine never reads a clock or a socket.
///
/// What it does as Syncplay's own client does (`syncplay/protocols.py`, `client.py`):
/// - STARTTLS first (`.send` → `"true"`: the shell starts TLS, then Hello; `"false"` or a
///   pre-1.6.3 server's error: plaintext, said loudly, or refused when TLS is required).
/// - Every server `State` is answered with this viewer's own, echoing the server's stamp.
/// - ignoringOnTheFly both ways: after a local change (`localChange`) the client sends its
///   counter and, until the server echoes it, sends no playstate and follows none; a server's
///   forced state (`{"server": N}`) is followed, counts as nobody's action of ours, and is echoed
///   once in the next answer.
///
/// Where it does better: it estimates the server's clock from the echoed stamps (each `State`
/// is one exchange: our echoed stamp, the server's stamp, our arrival), so the room's position
/// is placed on our own clock rather than shifted by half an averaged round trip; and it keeps
/// one timeline for the room, moved only by a pause, a play, a seek (`doSeek`, or a jump of
/// more than `seekThreshold`, where Syncplay itself reads a seek), never by the once-a-second
/// jitter of the server's "slowest member" position. Each change is kept as the server stamped
/// it (a position at an instant of the server's clock) and placed again on our clock as the
/// clock estimate improves (`refineWindow`), and our own change is taken back as the server
/// placed it once it echoes it: every daemon follows the one anchor, the server's, through its
/// own estimate, so two daemons that follow the same server's changes land on the same timeline
/// whatever our report of the change missed. And it reports its playing positions moved by the
/// server's own estimate of its delay, mirrored (`SyncplayDelayMirror`): the server adds that
/// estimate to every playing position, so a true report would be placed ahead of the truth.
///
/// Threading: a value type; one owner.
public struct SyncplayClient: Sendable {
    public struct Configuration: Sendable {
        public var username: String
        public var room: String
        /// The MD5 hex of the server password (Syncplay's scheme), or nil.
        public var passwordHash: String?
        /// Refuse a server without TLS instead of going on in plaintext.
        public var requireTLS: Bool
        /// Ask for STARTTLS at all (false only for tests of plaintext servers).
        public var askTLS: Bool
        /// The numeric version we claim (`realversion`): chat and every feature need ≥ 1.5.0.
        public var realVersion: String
        /// A server silent this long (seconds) is gone; Syncplay's own bound.
        public var stateTimeout: Double
        /// A jump of the room's position (seconds) against its timeline that is a seek.
        public var seekThreshold: Double
        /// Syncplay's bound on a chat line (characters); a server may say a smaller one.
        public var maxChatLength: Int
        /// How long after a change (seconds) its placement on our clock follows the clock estimate.
        public var refineWindow: Double
        /// The least move of that placement (seconds) worth a new timeline.
        public var refineStep: Double

        public init(
            username: String, room: String, passwordHash: String? = nil, requireTLS: Bool = false, askTLS: Bool = true,
            realVersion: String = "1.7.3", stateTimeout: Double = 12.5, seekThreshold: Double = 1, maxChatLength: Int = 150,
            refineWindow: Double = 30, refineStep: Double = 0.001
        ) {
            self.username = username
            self.room = room
            self.passwordHash = passwordHash
            self.requireTLS = requireTLS
            self.askTLS = askTLS
            self.realVersion = realVersion
            self.stateTimeout = stateTimeout
            self.seekThreshold = seekThreshold
            self.maxChatLength = maxChatLength
            self.refineWindow = refineWindow
            self.refineStep = refineStep
        }
    }

    public enum Phase: Sendable, Equatable {
        case idle
        /// STARTTLS asked, no answer yet.
        case askedTLS
        /// Hello sent, the server's not yet seen.
        case greeted
        case joined
        case ended
    }

    /// This viewer's player as the shell reads it when an answer is due.
    public struct PlayerReading: Sendable, Equatable {
        /// nil while a file is still opening: the room's position is reported instead.
        public var position: Double?
        public var paused: Bool

        public init(position: Double?, paused: Bool) {
            self.position = position
            self.paused = paused
        }
    }

    public enum Action: Sendable, Equatable {
        case send([SyncplayCommand])
        /// Start TLS on the connection now, before sending anything else.
        case startTLS
        /// The server has no TLS and we go on in plaintext: say so, loudly.
        case plaintext
        case joined(username: String, room: String, motd: String?)
        /// The room's timeline changed: make the player follow it.
        case follow(SyncplayTimeline)
        case notice(SyncplayNotice)
        /// The server's whole list of users (answer to `List`).
        case users([SyncplayListedUser])
        case chat(from: String, message: String)
        case playlist(files: [String], by: String?)
        case playlistIndex(Int, by: String?)
        /// The server made the managed room `room` for us: we are in it now, controlling it with
        /// `password` (tell the viewer both: others join with `+base:HASH`, controllers with the password).
        case managedRoomCreated(room: String, password: String)
        /// Drop the connection: the server refused us, said an error, went silent or broke the protocol.
        case fail(CowatchError)
    }

    public let configuration: Configuration
    public private(set) var phase: Phase = .idle
    /// The name the server gave us (it appends `_` to a taken one).
    public private(set) var username: String
    /// The room's timeline on our clock, once the server said where it is.
    public internal(set) var timeline: SyncplayTimeline?
    /// The server's clock against ours.
    public internal(set) var serverClock = ReferenceClockEstimator()
    /// The last round trip (seconds), as Syncplay measures its own.
    public internal(set) var roundTrip: Double = 0
    /// The server's estimate of our delay, mirrored; what we report is corrected by it.
    public internal(set) var delays = SyncplayDelayMirror()
    public private(set) var serverFeatures = SyncplayFeatures()
    /// The room we are in (a managed room's `+base:HASH` once made).
    public private(set) var room: String

    private var file: SyncplayFile?
    /// Whether this viewer said it is ready.
    public private(set) var ready = false
    var clientIgnoring = 0
    var serverIgnoring = 0
    var lastStateAt: Double?
    /// The password of the managed room we are in, when we have it (typed as
    /// `+base:HASH:PASSWORD`, or the room we made): control is claimed with it once welcomed.
    public private(set) var controlPassword: String?
    /// The password of our `manage` request, until the server names the new room.
    private var askedToManage: String?
    /// The timeline's change as the server stamped it (a position at an instant of its clock), and
    /// when (ours) we heard it: the timeline is placed again from it as the clock estimate
    /// improves. nil for our own change until the server echoes it.
    var anchor: (position: Double, stamp: Double, since: Double)?
    /// We moved into the managed room we made and bring our timeline: the new room's states are
    /// not followed, and the server's forced one (paused at 0) is answered with it, as our seek.
    /// How many unforced states may pass first (a server that forces none gets it after them).
    var carryingTimeline: Int?
    static let carryingStates = 3

    public init(configuration: Configuration) {
        self.configuration = configuration
        username = configuration.username
        room = SyncplayManagedRoom.parse(configuration.room)?.room ?? configuration.room
        controlPassword = SyncplayManagedRoom.parse(configuration.room)?.password
    }

    // MARK: Events

    /// The TCP connection is up.
    public mutating func connected(now: Double) -> [Action] {
        lastStateAt = now
        if configuration.askTLS {
            phase = .askedTLS
            return [.send([.tls(.send)])]
        }
        return plaintext()
    }

    /// One line from the server, decoded.
    public mutating func received(_ commands: [SyncplayCommand], player: PlayerReading, now: Double) -> [Action] {
        var actions: [Action] = []
        for command in commands where phase != .ended {
            actions += received(command, player: player, now: now)
        }
        return actions
    }

    /// A line that could not be decoded: Syncplay drops such a peer; we drop the connection too,
    /// saying why (the shell reconnects).
    public mutating func receivedBadLine(_ error: CowatchError) -> [Action] {
        end(CowatchError(error.code, "the Syncplay server sent a line Cowatch cannot read: \(error.message)"))
    }

    /// This viewer paused, played or sought (`seek`) at `position`: the room hears of it at once.
    public mutating func localChange(paused: Bool, position: Double, seek: Bool, now: Double) -> [Action] {
        timeline = SyncplayTimeline(position: position, at: now, paused: paused, setBy: username)
        anchor = nil
        guard phase == .joined else { return [] }
        return [.send([.state(change(paused: paused, position: position, seek: seek, now: now))])]
    }

    /// Our change as the server hears it, counted (ignoringOnTheFly): it carries no echo of the
    /// server's stamp, so the server adds the forward delay of our last answer to it.
    mutating func change(paused: Bool, position: Double, seek: Bool, now: Double) -> SyncplayState {
        clientIgnoring += 1
        let reported = delays.reported(position, paused: paused, delay: delays.forwardDelay)
        return SyncplayState(
            ping: SyncplayState.Ping(clientLatencyCalculation: now, clientRtt: delays.clientRtt),
            playstate: SyncplayState.Playstate(position: reported, paused: paused, doSeek: seek ? true : nil),
            ignoring: SyncplayState.Ignoring(server: takeServerIgnoring(), client: clientIgnoring))
    }

    /// The file this viewer plays (base name, duration, size), said now and on every join.
    public mutating func fileChanged(_ file: SyncplayFile) -> [Action] {
        self.file = file
        guard phase == .joined else { return [] }
        return [.send([.set([.file(file)]), .list(nil)])]
    }

    /// This viewer is ready (or not) to start.
    public mutating func readinessChanged(_ ready: Bool) -> [Action] {
        self.ready = ready
        guard phase == .joined else { return [] }
        return [.send([.set([.ready(SyncplayReady(isReady: ready, manuallyInitiated: true))])])]
    }

    /// A chat line from this viewer. Errors (thrown, nothing sent): `invalid-argument` for an
    /// empty line, one with line breaks or controls, or one longer than the server's bound;
    /// `not-in-room` before the server welcomed us.
    public func chat(_ text: String) throws(CowatchError) -> [Action] {
        guard phase == .joined else { throw CowatchError(.notInRoom, "not in the Syncplay room yet") }
        let limit = serverFeatures.maxChatMessageLength ?? configuration.maxChatLength
        guard !text.isEmpty, text.count <= limit, ControlCharacters.isClean(text) else {
            throw CowatchError(.invalidArgument, "a Syncplay chat line is one line of 1 to \(limit) characters")
        }
        return [.send([.chat(SyncplayChat(message: text))])]
    }

    /// Make a managed room controlled with `password` (`AB-123-456`; see
    /// `SyncplayManagedRoom.newPassword`) from the base name of the room we are in (`film` for
    /// `film` or `+film:HASH`), as Syncplay's "Create managed room" does. The server answers with
    /// the new room's name (`managedRoomCreated`); we move there with our timeline and claim it,
    /// and its `controllerAuth` verdict comes as a `controller` notice. Errors: `invalid-argument`
    /// for a password servers refuse; `not-in-room` before the welcome; `unsupported` from a server
    /// that says it has no managed rooms.
    public mutating func manage(password: String) throws(CowatchError) -> [Action] {
        guard phase == .joined else { throw CowatchError(.notInRoom, "not in the Syncplay room yet") }
        guard serverFeatures.managedRooms != false else { throw .syncplayNoManagedRooms() }
        guard SyncplayManagedRoom.isPassword(password) else {
            throw CowatchError(.invalidArgument, "a Syncplay room password looks like AB-123-456")
        }
        askedToManage = password
        let base = SyncplayManagedRoom.base(of: room)
        return [.send([.set([.controllerAuth(SyncplayControllerAuth(room: base, password: password))])])]
    }

    /// Time passes: a server silent for `stateTimeout` is gone.
    public mutating func tick(now: Double) -> [Action] {
        guard phase != .ended, phase != .idle, let last = lastStateAt, now - last > configuration.stateTimeout else { return [] }
        return end(CowatchError(.timeout, "the Syncplay server said nothing for \(Int(configuration.stateTimeout)) s"))
    }

    /// The room's position now, on our clock (nil before the server said where it is).
    public func roomPosition(at now: Double) -> Double? { timeline?.position(at: now) }

    // MARK: Commands

    private mutating func received(_ command: SyncplayCommand, player: PlayerReading, now: Double) -> [Action] {
        switch command {
        case .tls(let answer):
            guard phase == .askedTLS else { return [] }
            switch answer {
            case .accepted: return [.startTLS] + hello()
            case .refused, .send: return plaintext()
            }
        case .error(let message):
            if phase == .askedTLS, message.contains("startTLS") { return plaintext() }
            return end(CowatchError(phase == .joined ? .protocolViolation : .authFailed, "the Syncplay server said: \(message)"))
        case .hello(let hello):
            guard phase == .greeted else { return [] }
            phase = .joined
            username = hello.username
            serverFeatures = hello.features
            var settings: [SyncplaySetting] = [.ready(SyncplayReady(isReady: ready, manuallyInitiated: false))]
            if let file { settings.append(.file(file)) }
            if let controlPassword { settings.append(.controllerAuth(SyncplayControllerAuth(room: room, password: controlPassword))) }
            return [.joined(username: hello.username, room: hello.room, motd: hello.motd), .send([.set(settings), .list(nil)])]
        case .set(let settings):
            var actions: [Action] = []
            for each in settings { actions += setting(each, now: now) }
            return actions
        case .list(let users):
            return users.map { [.users($0)] } ?? []
        case .chat(let chat):
            return [.chat(from: chat.username ?? "", message: chat.message)]
        case .state(let state):
            return self.state(state, player: player, now: now)
        }
    }

    private mutating func plaintext() -> [Action] {
        guard !configuration.requireTLS || !configuration.askTLS else {
            return end(CowatchError(.tlsFailed, "the Syncplay server offers no TLS, and TLS is required (--syncplay-require-tls)"))
        }
        return (configuration.askTLS ? [.plaintext] : []) + hello()
    }

    private mutating func hello() -> [Action] {
        phase = .greeted
        let hello = SyncplayHello(
            username: configuration.username, passwordHash: configuration.passwordHash, room: room,
            realVersion: configuration.realVersion, features: .cowatchClient)
        return [.send([.hello(hello)])]
    }

    private mutating func end(_ error: CowatchError) -> [Action] {
        phase = .ended
        return [.fail(error)]
    }

    private mutating func setting(_ setting: SyncplaySetting, now: Double) -> [Action] {
        switch setting {
        case .user(let update):
            switch update.event {
            case .joined?: return [.notice(.joined(update.username)), .send([.list(nil)])]
            case .left?: return [.notice(.left(update.username)), .send([.list(nil)])]
            case nil: return [.send([.list(nil)])]  // a new file or room: the list says it
            }
        case .ready(let ready):
            guard let name = ready.username, let isReady = ready.isReady else { return [] }
            return [.notice(.ready(name, isReady))]
        case .playlistChange(let files, let user):
            return [.playlist(files: files, by: user)]
        case .playlistIndex(let index, let user):
            return index.map { [.playlistIndex($0, by: user)] } ?? []
        case .controllerAuth(let auth):
            guard let user = auth.user, let success = auth.success else { return [] }
            return [.notice(.controller(user, success))]
        case .newControlledRoom(let roomName, let password):
            // The answer to our `manage`: move into the new room and claim it.
            // Only the room we asked for, under a well-formed name.
            guard password == askedToManage, let parsed = SyncplayManagedRoom.parse(roomName), parsed.password == nil else { return [] }
            askedToManage = nil
            room = roomName
            controlPassword = password
            // Two lines: in one `Set` the server takes the keys in the line's (sorted) order, and
            // would check the claim against the room we are leaving.
            // A new room starts paused at 0, and the server forces that on whoever enters it (and
            // reads nothing of theirs until they echo it): the answer to that forced state is our
            // timeline, as our seek, once the claim is in (the server reads lines in order).
            carryingTimeline = timeline == nil ? nil : Self.carryingStates
            // Said last: what the owner adds goes to the new room, after the move and the claim.
            return [
                .send([.set([.room(name: roomName, password: nil)])]),
                .send([.set([.controllerAuth(SyncplayControllerAuth(room: roomName, password: password))])]),
                .managedRoomCreated(room: roomName, password: password),
            ]
        case .room, .file, .features:
            return []
        }
    }

    /// The server's counter to echo once, then forget.
    mutating func takeServerIgnoring() -> Int? {
        defer { serverIgnoring = 0 }
        return serverIgnoring == 0 ? nil : serverIgnoring
    }
}

/// The room's playback as a line on our clock: `position` at local instant `at`, advancing at
/// 1× unless paused (Syncplay has no speed).
public struct SyncplayTimeline: Sendable, Equatable {
    public var position: Double
    public var at: Double
    public var paused: Bool
    /// Who made the change that set it.
    public var setBy: String?

    public init(position: Double, at: Double, paused: Bool, setBy: String?) {
        self.position = position
        self.at = at
        self.paused = paused
        self.setBy = setBy
    }

    public func position(at now: Double) -> Double { paused ? position : position + (now - at) }
}

/// Who did what in a Syncplay room, for the notices.
public enum SyncplayNotice: Sendable, Equatable {
    case paused(String, at: Double)
    case played(String, at: Double)
    case sought(String, to: Double)
    case joined(String)
    case left(String)
    case ready(String, Bool)
    /// A controller's password was (or was not) accepted.
    case controller(String, Bool)
}
