/// A stock Syncplay client as a participant of a Cowatch room: the server's side of Syncplay's
/// protocol towards the client, and a Cowatch participant's side of the room protocol towards
/// the room server (the gateway runs beside the room server, on its clock). Each event method
/// takes the time (the room server's clock, seconds) and returns the `Action`s the shell carries
/// out in order; the machine reads no clock and no socket.
///
/// What the Syncplay client sees is what Syncplay's own server would say:
/// - STARTTLS answered "false" (stock clients refuse a certificate no authority signed, so the
///   gateway offers TLS only with a real one: `Configuration.tls`), then the `Hello` exchange.
///   The server password, when one is set, is checked as Syncplay does (its MD5).
/// - Once the room welcomed it: a `State` about once a second from the room's timeline, with who
///   made the last change; a change of the room (someone's pause, play or seek) at once, forced,
///   with the server's ignoringOnTheFly counter, exactly as Syncplay's server forces one.
/// - Its own pauses, plays and seeks (`doSeek`, or a paused flag that differs) become the room's
///   actions: the room decides, roles apply (a member of a managed room is refused and put back
///   with a forced state, as Syncplay's server does to a non-controller). Its reported positions
///   are telemetry (its drift, in `cowatch participants`), never the room's position; one that
///   drifts past Syncplay's own thresholds (4 s ahead, 5 s behind) is put back with a forced state.
/// - Joins, leaves, readiness and chat both ways; the user list from the room's participants.
/// - The room's playlist as Syncplay's shared playlist (`SyncplayPlaylistView`: names, the current
///   entry as its index), with who changed it; the client loads each entry from its own media
///   directories. Its own changes become room edits under its role (remove, move, add a URL,
///   choose the current entry); what names cannot say (a file the room does not list) is refused
///   in its chat and its list put back. A room whose list is empty leaves the client its own.
/// - Roles as Syncplay's controllers (`SyncplayGuest+Controllers.swift`): owners and operators
///   listed as controllers, someone made an operator announced with `controllerAuth`'s success,
///   someone made a member again with the whole list; the client's own claim (`controllerAuth`
///   with a password) is refused, saying how control is given in a Cowatch room.
/// - A room with a secret (`SyncplayGuest+Secret.swift`): only for a client that gave the
///   Syncplay password, with the secret the gateway was given or the verifier key its server
///   keeps for the room (`Configuration.secretRooms`).
///
/// Threading: a value type; one owner (the connection's driver task).
public struct SyncplayGuest: Sendable {
    public struct Configuration: Sendable {
        /// The MD5 hex of the gateway's Syncplay password (`--syncplay-password-file`); nil: none asked.
        public var passwordHash: String?
        /// A certificate stock clients accept is in place: STARTTLS is answered "true".
        public var tls: Bool
        /// Shown as Syncplay's message of the day.
        public var motd: String
        /// A client silent this long (seconds) is gone; Syncplay's own bound.
        public var stateTimeout: Double
        /// Seconds between the room's `State`s.
        public var stateInterval: Double
        /// How far ahead (seconds) a client may drift before it is put back (Syncplay's seek-back threshold).
        public var aheadLimit: Double
        /// How far behind before it is put back (Syncplay's fast-forward threshold).
        public var behindLimit: Double
        /// The secret of the room this gateway serves, when it may let Syncplay clients into it:
        /// only beside a Syncplay password (`passwordHash`), which they proved instead (a hosting
        /// daemon's own room). Without it, a room with a secret turns them away.
        public var roomSecret: RoomSecretValue?
        /// The rooms with a secret a client that gave the Syncplay password (`passwordHash`) may
        /// join through the verifier key the server keeps for the room (`cowatch-server
        /// --syncplay-secret-rooms`): the guest asks for it (`Action.lookUpVerifier`). None by default.
        public var secretRooms: SyncplaySecretRooms

        public init(
            passwordHash: String? = nil, tls: Bool = false, motd: String = "This is a Cowatch room, joined from Syncplay.",
            stateTimeout: Double = 12.5, stateInterval: Double = 1, aheadLimit: Double = 4, behindLimit: Double = 5
        ) {
            self.passwordHash = passwordHash
            self.tls = tls
            self.motd = motd
            self.stateTimeout = stateTimeout
            self.stateInterval = stateInterval
            self.aheadLimit = aheadLimit
            self.behindLimit = behindLimit
            roomSecret = nil
            secretRooms = .none
        }
    }

    public enum Action: Sendable, Equatable {
        /// One line to the Syncplay client.
        case syncplay([SyncplayCommand])
        /// Start TLS with the client now (after the line just sent).
        case startTLS
        /// Open the room connection for `room` (its hello follows from `roomConnected`).
        case connectRoom(String)
        /// A message to the room server.
        case cowatch(ClientMessage)
        /// Close both connections (after what was sent), for this reason.
        case close(CowatchError)
        /// The room's session token for this client: give it back (`token`) when the same client
        /// comes again, so its name is still its own.
        case keepToken(String)
        /// Find the verifier the server keeps for this room (salt and key; never logged) and give
        /// it to `storedVerifier` (nil when there is none).
        case lookUpVerifier(room: String)
    }

    public let configuration: Configuration
    /// Syncplay's name for the client, as the room knows it once welcomed.
    public private(set) var name: String?
    public private(set) var room: String?
    /// The session token an earlier connection of this client was given (set by the shell before
    /// `roomConnected`, from what it kept for the client's address and name).
    public var token: String?
    /// This connection's nonce for the room's handshake (random, set by the shell before
    /// `roomConnected`).
    public var nonce = String(repeating: "0", count: 64)
    /// The room server's certificate fingerprint as the room connection saw it (the secret's
    /// proof binds it), set by the shell before `roomConnected`.
    public var serverFingerprint = ""
    var clientVersion = SyncplayHello.compatibleVersion
    private var welcomed = false
    var timelines: TimelinePair?
    var participants: [ParticipantInfo] = []
    private var ready = false
    var file: SyncplayFile?
    /// Who made the room's last change (`setBy`).
    var setBy: String?
    private var lastStateSent: Double?
    private var lastHeard: Double?
    /// The client's last clock stamp, to echo; and its round trip as it said it.
    private var clientStamp: Double?
    /// When that stamp arrived: the echo adds the time we held it, as Syncplay's server does.
    private var clientStampAt: Double = 0
    /// The media's name as the room has it (its activity), for the user list's files.
    private var mediaName: String?
    /// A held timeline (after a seek) this client has not yet said it landed on.
    private var holdingSeq: Int?
    /// The client's round trip and forward delay, measured as Syncplay's server measures them.
    private var ping = SyncplayServerPing()
    /// When a client that drifted too far was last put back.
    private var lastPutBack = -Double.infinity
    /// ignoringOnTheFly: our forced change not yet echoed by the client; its change to echo.
    private var serverIgnoring = 0
    private var forcedCount = 0
    private var clientIgnoringToEcho: Int?
    var nextRequestID = 0
    /// Our action requests waiting for the room, by id.
    private var pendingActions: Set<Int> = []
    /// The room speaks `playlist` (its challenge said so): the client's greeting waits for the
    /// room's list, which comes right after the welcome, so the client hears it before Hello.
    private var roomSpeaksPlaylist = false
    /// The Syncplay lines that greet the client (readiness, playlist, Hello, the first State)
    /// have been sent.
    var greeted = false
    private var welcomedAt = 0.0
    /// The room's playlist, as last received, and the view of it the client was shown.
    var playlist: PlaylistState?
    var view = SyncplayPlaylistView()
    /// The list and index the client has now (what we sent it, or what it sent us).
    var clientNames: [String] = []
    var clientIndex: Int?
    /// Our playlist edits waiting for the room, by id.
    var pendingEdits: Set<Int> = []
    /// The client's list to make again on the room's newest list (our edit met a list that
    /// changed since: `stale-playlist`); once.
    var retryFiles: [String]?
    /// The client's list behind the edit on its way (what a retry makes again).
    var retryCandidate: [String]?
    /// Chat lines that came before the greeting (the room's history), said after it.
    var heldChat: [Action] = []
    static let heldChatLimit = 64
    /// The room's challenge waiting for the verifier the server keeps (`lookUpVerifier`).
    var pendingSecret: PendingSecret?
    /// The room lets only owners and operators control playback (its welcome said so).
    var managedRoom = false
    /// Who the client was told is a controller (the last `List`, then `controllerAuth`s).
    var toldControllers: Set<String> = []
    /// How long a greeting waits for the room's list before going without it (seconds).
    static let playlistWait = 2.0

    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    // MARK: The Syncplay client

    /// The client connected (TCP).
    public mutating func connected(now: Double) -> [Action] {
        lastHeard = now
        return []
    }

    /// One decoded line from the client.
    public mutating func received(_ commands: [SyncplayCommand], now: Double) -> [Action] {
        lastHeard = now
        var actions: [Action] = []
        for command in commands {
            actions += received(command, now: now)
            if actions.contains(where: { if case .close = $0 { true } else { false } }) { break }
        }
        return actions
    }

    /// A line that could not be decoded: Syncplay's server says why and drops the client.
    public mutating func receivedBadLine(_ error: CowatchError) -> [Action] {
        [.syncplay([.error(error.message)]), .close(error)]
    }

    /// Time passes: a `State` is due each second; a silent client is gone.
    public mutating func tick(now: Double) -> [Action] {
        if let lastHeard, now - lastHeard > configuration.stateTimeout {
            return [.close(CowatchError(.timeout, "the Syncplay client said nothing for \(Int(configuration.stateTimeout)) s"))]
        }
        if welcomed, !greeted, now - welcomedAt > Self.playlistWait { return greet(now: now) }
        guard greeted, now - (lastStateSent ?? -.infinity) >= configuration.stateInterval else { return [] }
        return [.syncplay([.state(state(now: now, doSeek: false))])]
    }

    private mutating func received(_ command: SyncplayCommand, now: Double) -> [Action] {
        switch command {
        case .tls:
            guard name == nil else { return [] }
            return configuration.tls ? [.syncplay([.tls(.accepted)]), .startTLS] : [.syncplay([.tls(.refused)])]
        case .hello(let hello):
            return self.hello(hello)
        case .state(let state):
            return clientState(state, now: now)
        case .chat(let chat):
            guard welcomed else { return [] }
            nextRequestID += 1
            return [.cowatch(.chat(id: nextRequestID, text: String(chat.message.prefix(ChatLine.maxBytes / 4))))]
        case .set(let settings):
            var actions: [Action] = []
            for setting in settings {
                switch setting {
                case .ready(let readiness) where readiness.username == nil || readiness.username == name:
                    ready = readiness.isReady ?? false
                    if welcomed { actions.append(.cowatch(.status(ParticipantStatus(ready: ready)))) }
                case .file(let file):
                    self.file = file
                    // Syncplay's server tells the room, the client too: it then lists and plays on.
                    if let name { actions.append(.syncplay([.set([.user(SyncplayUserUpdate(username: name, room: room, file: Self.listed(file)))])])) }
                case .playlistChange(let files, _):
                    actions += clientPlaylist(files)
                case .playlistIndex(let index, _):
                    actions += clientPlaylistIndex(index)
                case .controllerAuth:
                    // Its room and password are not read: no answer depends on them.
                    actions += controllerClaim()
                default:
                    break  // changing rooms: not offered to Syncplay clients
                }
            }
            return actions
        case .list:
            return listLines()
        case .error:
            return [.close(CowatchError(.ioError, "the Syncplay client said goodbye with an error"))]
        }
    }

    private mutating func hello(_ hello: SyncplayHello) -> [Action] {
        guard name == nil else { return [] }
        if let expected = configuration.passwordHash, hello.passwordHash?.lowercased() != expected.lowercased() {
            return refuse(.authFailed, "Wrong password supplied")
        }
        guard let realVersion = hello.realVersion ?? Optional(hello.version), Self.atLeast(realVersion, 1, 2, 255) || hello.version == SyncplayHello.compatibleVersion
        else {
            return refuse(.unsupportedVersion, "Syncplay clients before 1.2.255 cannot join")
        }
        clientVersion = realVersion
        let wanted = Self.participantName(hello.username)
        guard RoomName.isValid(hello.room) else {
            return refuse(.invalidArgument, "A Cowatch room name is 1-64 letters, digits, '.', '_' or '-'")
        }
        name = wanted
        room = hello.room
        return [.connectRoom(hello.room)]
    }

    mutating func refuse(_ code: CowatchError.Code, _ message: String) -> [Action] {
        [.syncplay([.error(message)]), .close(CowatchError(code, message))]
    }

    /// The client's answer to a `State`, or a change of its own.
    private mutating func clientState(_ state: SyncplayState, now: Double) -> [Action] {
        guard welcomed else { return [] }
        if let stamp = state.ping?.clientLatencyCalculation, stamp.isFinite {
            clientStamp = stamp
            clientStampAt = now
        }
        if let stamp = state.ping?.latencyCalculation { ping.received(echoed: stamp, clientRtt: state.ping?.clientRtt, now: now) }
        if let echoed = state.ignoring?.server, echoed == serverIgnoring { serverIgnoring = 0 }
        if let counter = state.ignoring?.client { clientIgnoringToEcho = counter }
        // While a change we forced is not yet echoed, what the client says predates it.
        guard serverIgnoring == 0, let playstate = state.playstate, let paused = playstate.paused, let timelines else { return [] }
        // Where it was when it said so is where it is by now: Syncplay's server adds the same delay.
        let position = playstate.position + (paused ? 0 : ping.forwardDelay)
        let expected = Self.shown(timelines, at: now)
        if let seq = holdingSeq, abs(playstate.position - expected.position) < 1 {
            // It landed on the held position: the room may go on.
            holdingSeq = nil
            return [.cowatch(.ready(seq: seq))]
        }
        nextRequestID += 1
        let id = nextRequestID
        if paused == expected.playing {
            pendingActions.insert(id)
            return [.cowatch(.action(.init(id: id, kind: paused ? .pause : .play, position: max(0, position))))]
        }
        if playstate.doSeek == true {
            pendingActions.insert(id)
            return [.cowatch(.action(.init(id: id, kind: .seek, position: max(0, position), from: expected.position)))]
        }
        let drift = position - expected.position
        var actions: [Action] = [.cowatch(.report(drift: drift, rtt: ping.average))]
        // At most once a State interval: a client that answers a forced state at once, still off
        // (a player that cannot seek there), is not put back at the speed of the network.
        if expected.playing && (drift > configuration.aheadLimit || -drift > configuration.behindLimit),
            now - lastPutBack >= configuration.stateInterval
        {
            lastPutBack = now
            actions += forced(now: now, doSeek: true)
        }
        return actions
    }

    // MARK: The room

    /// The room connection is up: our hello.
    public mutating func roomConnected(now: Double) -> [Action] {
        guard let name, let room else { return [] }
        let hello = ClientMessage.Hello(
            features: [WireFeature.chat, WireFeature.roles, WireFeature.playlist, WireFeature.secretHMAC], room: room, name: name,
            client: "syncplay \(clientVersion)", nonce: nonce,
            // A reconnect of this client (same address, name and room) proves it is the one the
            // name belongs to: without the token the room holds the name against it.
            token: token, status: ParticipantStatus(ready: ready))
        return [.cowatch(.hello(hello))]
    }

    /// A message from the room server.
    public mutating func fromRoom(_ message: ServerMessage, now: Double) -> [Action] {
        switch message {
        case .challenge(let challenge):
            roomSpeaksPlaylist = challenge.features.contains(WireFeature.playlist)
            switch challenge.access {
            case .open, .new:
                return [.cowatch(.auth(.init()))]
            case .secret(let salt):
                return secretChallenge(salt: salt, serverNonce: challenge.nonce)
            }
        case .welcome(let welcome):
            welcomed = true
            name = welcome.name
            timelines = TimelinePair(welcome.timeline)
            participants = welcome.participants
            managedRoom = welcome.policy.managed
            mediaName = welcome.activity.displayTitle
            holdingSeq = welcome.timeline.holding ? welcome.timeline.seq : nil
            welcomedAt = now
            var actions: [Action] = [.keepToken(welcome.token)]
            if let file { actions.append(.cowatch(.media(activity: welcome.activity.id, MediaInfo(duration: file.duration, size: file.size.map { Int($0) })))) }
            return actions + (roomSpeaksPlaylist ? [] : greet(now: now))
        case .playlist(let state, let change, let requestID):
            if let requestID { pendingEdits.remove(requestID) }
            playlist = state
            view = SyncplayPlaylistView(state)
            guard greeted else { return welcomed ? greet(now: now) : [] }
            if let wanted = retryFiles, requestID == nil {
                retryFiles = nil
                clientNames = view.names
                return clientPlaylist(wanted, retrying: true)
            }
            return playlistLines(by: change?.actor ?? room ?? "Cowatch")
        case .applied(let timeline, let notice, let actionID, let activity):
            if let activity { mediaName = activity.displayTitle }
            guard var pair = timelines else { return [] }
            let before = Self.shown(pair, at: now)
            guard pair.advance(to: timeline, at: now) else { return [] }
            let after = Self.shown(pair, at: now)
            timelines = pair
            setBy = notice?.actor ?? setBy
            holdingSeq = timeline.holding ? timeline.seq : nil
            var actions: [Action] = []
            if timeline.rate != 1 && timeline.rate != pair.previous.rate { actions += rateWarning(timeline.rate) }
            if let actionID, pendingActions.remove(actionID) != nil {
                // Our own change: the client is there already; echo its counter.
                return actions + [.syncplay([.state(state(now: now, doSeek: false))])]
            }
            let jumped = abs(after.position - before.position) > 1
            guard notice != nil || jumped || after.playing != before.playing else {
                return actions  // the end of a hold: nothing the client would see
            }
            return actions + forced(now: now, doSeek: notice?.action == .seek || jumped)
        case .refused(let actionID, let code, let message):
            if let actionID, pendingEdits.remove(actionID) != nil {
                if code == CowatchError.Code.stalePlaylist.rawValue, let wanted = retryCandidate {
                    // The room's list moved on under the edit (a new current entry, someone's edit):
                    // made again on the list the room sends with the refusal.
                    retryCandidate = nil
                    retryFiles = wanted
                    return []
                }
                return Self.cowatchSays(message) + playlistLines(by: room ?? "Cowatch", always: true)
            }
            guard let actionID, pendingActions.remove(actionID) != nil else { return [] }
            // Put the client back where the room is, as Syncplay's server does to a non-controller.
            return [.syncplay([.chat(SyncplayChat(username: "Cowatch", message: String(message.prefix(150))))])] + forced(now: now, doSeek: true)
        case .notice(let notice):
            switch notice.action {
            case .join where notice.actor != name:
                // Syncplay's client adds a joiner as no controller: told again if it is one.
                toldControllers.remove(notice.actor)
                return [.syncplay([.set([.user(SyncplayUserUpdate(username: notice.actor, room: room, event: .joined))])])]
                    + syncControllers()
            case .leave where notice.actor != name:
                toldControllers.remove(notice.actor)
                return [.syncplay([.set([.user(SyncplayUserUpdate(username: notice.actor, room: room, event: .left))])])]
            case .op, .deop:
                return roleChanged(notice)
            case .ready, .unready:
                return [.syncplay([.set([.ready(SyncplayReady(username: notice.actor, isReady: notice.action == .ready, manuallyInitiated: true))])])]
            default:
                return []
            }
        case .participants(let list):
            participants = list
            return syncControllers()
        case .chat(let line):
            guard !line.history || welcomed else { return [] }
            let said = Action.syncplay([.chat(SyncplayChat(username: line.from, message: String(line.text.prefix(150))))])
            // The history a joiner gets comes before the client is greeted: it follows the Hello.
            guard greeted else {
                if heldChat.count < Self.heldChatLimit { heldChat.append(said) }
                return []
            }
            return [said]
        case .ended(let by):
            return refuse(.notInRoom, "\(by) ended the activity for everyone")
        case .error(let code, let message):
            return refuse(CowatchError.Code(rawValue: code), message)
        case .timeReply, .done, .message, .messageAck, .attachmentAdded, .attachmentRemoved, .transferReady, .transferDone, .redirect,
            .playlistAvailability, .shares, .streamWanted, .streamReady, .unsupported:
            return []
        case .unknown(let type):
            return [.cowatch(.unsupported(type: type))]
        }
    }

    // MARK: Helpers

    /// A `State` where the room is now, with the counters due.
    private mutating func state(now: Double, doSeek: Bool) -> SyncplayState {
        lastStateSent = now
        let expected = timelines.map { Self.shown($0, at: now) } ?? (position: 0, playing: false)
        let echo = clientStamp.map { $0 + max(0, now - clientStampAt) }
        var state = SyncplayState(
            ping: SyncplayState.Ping(latencyCalculation: now, clientLatencyCalculation: echo, serverRtt: ping.roundTrip),
            playstate: SyncplayState.Playstate(position: max(0, expected.position), paused: !expected.playing, doSeek: doSeek, setBy: setBy))
        if serverIgnoring != 0 || clientIgnoringToEcho != nil {
            state.ignoring = SyncplayState.Ignoring(server: serverIgnoring == 0 ? nil : serverIgnoring, client: clientIgnoringToEcho)
            clientIgnoringToEcho = nil
        }
        return state
    }

    /// A change the client must follow: sent at once, with our counter (ignoringOnTheFly).
    mutating func forced(now: Double, doSeek: Bool) -> [Action] {
        forcedCount += 1
        serverIgnoring = forcedCount
        return [.syncplay([.state(state(now: now, doSeek: doSeek))])]
    }

    /// Where the room is and whether it plays, as a Syncplay client is told: the newest timeline,
    /// even while it is scheduled a moment ahead (a Syncplay client takes every `State` for the
    /// room's word, and would undo a pause it hears of late); a group held after a seek (waiting
    /// for everyone to land, a moment) reads as playing on, so the client shows no pause nobody made.
    static func shown(_ timelines: TimelinePair, at now: Double) -> (position: Double, playing: Bool) {
        let current = timelines.current
        let playing = current.playing || current.holding
        return (playing ? max(0, current.position + (now - current.reference) * current.rate) : current.position, playing)
    }

    func rateWarning(_ rate: Double) -> [Action] {
        let text = "This Cowatch room plays at \(Notice.rateText(rate))x; Syncplay cannot change speed, so you will drift from it."
        return [.syncplay([.chat(SyncplayChat(username: "Cowatch", message: text))])]
    }

    func userList() -> [SyncplayListedUser] {
        guard let room else { return [] }
        let now = lastStateSent ?? 0
        let position = timelines?.expected(at: now).position
        // Everyone plays the room's media; our client's own file says its duration and size.
        let roomFile = mediaName.map { media in file?.name == media ? file! : SyncplayFile(name: media) }
        return participants.map { person in
            SyncplayListedUser(
                room: room, username: person.name, position: position.map { $0 + (person.drift ?? 0) },
                file: (person.name == name ? file : roomFile).map(Self.listed), controller: person.role.isPrivileged,
                isReady: person.status.ready, features: SyncplayFeatures())
        }
    }

    /// A file as Syncplay's client reads it in a list or a user update: it compares every file's
    /// `size` and `duration` with its own, and a missing one stops its OSD code (`KeyError`). An
    /// unknown size is 0 (Syncplay's "unknown: the same", `utils.sameFilesize`), an unknown
    /// duration 0 (only a file of another name lacks one: the client already says it differs).
    static func listed(_ file: SyncplayFile) -> SyncplayFile {
        var file = file
        if file.duration == nil { file.duration = 0 }
        if file.size == nil && file.sizeHash == nil { file.size = 0 }
        return file
    }

    /// What this gateway says it can do, as a Syncplay server.
    static var serverFeatures: SyncplayFeatures {
        var features = SyncplayFeatures()
        features.isolateRooms = true
        features.readiness = true
        // No Syncplay managed rooms (`+base:HASH`, made with a password): with this false a stock
        // client refuses "create managed room" itself, saying the server does not support it. Roles
        // reach it all the same (`controller` in the list, `controllerAuth` broadcasts), and its
        // "identify as operator" is answered with how control is given here.
        features.managedRooms = false
        features.persistentRooms = false
        features.chat = true
        features.maxChatMessageLength = 150
        features.maxUsernameLength = 16
        features.maxRoomNameLength = 35
        features.maxFilenameLength = 250
        return features
    }

    /// A Syncplay user name as a Cowatch participant name: letters, digits, `.`, `_`, `-` kept,
    /// anything else `_`, at most 16 characters (Syncplay's own bound).
    static func participantName(_ raw: String) -> String {
        let kept = raw.unicodeScalars.prefix(16).map { scalar -> Character in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "._-".unicodeScalars.contains(scalar))
                ? Character(scalar) : "_"
        }
        let name = String(kept)
        return name.isEmpty ? "syncplay" : name
    }

    static func atLeast(_ version: String, _ major: Int, _ minor: Int, _ patch: Int) -> Bool {
        let parts = version.split(separator: ".").map { Int($0) ?? 0 }
        let padded = parts + Array(repeating: 0, count: max(0, 3 - parts.count))
        return (padded[0], padded[1], padded[2]) >= (major, minor, patch)
    }
}
