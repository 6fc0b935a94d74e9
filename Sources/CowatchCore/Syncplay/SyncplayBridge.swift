/// A Syncplay room presented to a Cowatch daemon as a Cowatch room: the daemon's coordinator
/// speaks its own protocol (hello, time requests, actions, chat, status) and hears a room
/// server's messages (challenge, welcome, `applied`, notices, participants, chat), while this
/// machine speaks Syncplay to the real server through `SyncplayClient`. The daemon, its player,
/// its drift controller, notices and control socket stay as they are.
///
/// How the two models meet:
/// - The reference clock is the daemon's own clock: time requests are answered here with no
///   offset, and the room's timeline is placed on our clock by `SyncplayClient` (which estimates
///   the Syncplay server's clock from its stamps). Two daemons in one Syncplay room thus land on
///   the same timeline to within their clock estimates.
/// - Each change of the room's timeline (someone's pause, play or seek, or a jump the server
///   forced) is an `applied` with the next sequence number and a notice naming who did it.
/// - The daemon's own pause, play and seek become Syncplay state changes and are applied at
///   once, as the server would echo them. Speed, open, end, roles and kick do not exist in
///   Syncplay: refused `unsupported`, with a sentence that says so.
/// - Chat lines go out as Syncplay chat (150 characters); our own line comes back from the
///   server and confirms the daemon's request.
/// - Everyone the server lists is a participant in state `syncplay`, with its readiness, its
///   controller flag as `operator`, and its reported position against the room's as its drift.
///
/// Threading: a value type; one owner (the connection's driver task).
public struct SyncplayBridge: Sendable {
    public enum Action: Sendable, Equatable {
        /// One line to the Syncplay server.
        case syncplay([SyncplayCommand])
        /// Start TLS on the connection now, before the next line (`SyncplayClient.Action.startTLS`).
        case startTLS
        /// A room server's message for the daemon's coordinator.
        case deliver(ServerMessage)
        /// The server has no TLS: going on in plaintext (the shell says so, loudly).
        case plaintext
        /// The server made a managed room for us (see `SyncplayClient.Action.managedRoomCreated`):
        /// we are in it now. The shell keeps both for its reconnects (and never logs the password).
        case managedRoomCreated(room: String, password: String)
        /// The answer to `manage`: the managed room we control (`SyncplayBridge+Managed.swift`).
        case managed(SyncplayControlledRoom)
        /// `manage` failed: the server refused the claim.
        case manageRefused(CowatchError)
        /// End the connection with this error (after delivering what came before).
        case fail(CowatchError)
        /// Find this machine's files of these names (its media directories, its own media) and
        /// say what was found with `identified`, before the next event.
        case identify([String])
    }

    public internal(set) var client: SyncplayClient
    /// The daemon's name (its hello's), which its coordinator knows itself by; Syncplay may have
    /// given us another (`_` appended to a taken one, cut to 16 characters).
    var daemonName: String?
    private var daemonActivity: Activity?
    private var authed = false
    var welcomed = false
    private var seq = 0
    // The shared playlist (`SyncplayBridge+Playlist.swift`): Syncplay's names and index, the
    // entry id each name has in the daemon's list, and the identities of this machine's files.
    var sharedNames: [String] = []
    var sharedIndex: Int?
    var entryIDs: [String: PlaylistEntry.ID] = [:]
    var nextEntryID: PlaylistEntry.ID = 1
    var identities: [String: MediaIdentity] = [:]
    var identifying: Set<String> = []
    var playlistVersion = 0
    /// The room activity delivered last, and the one the current entry was opened as.
    var activityID = 0
    var currentEntryActivity: Int?
    /// The file name of what the daemon plays: its own media's, then each entry's it switched to.
    var playingName: String?
    /// The last timeline delivered to the daemon.
    private var delivered: GroupTimeline?
    /// The daemon's last reported drift (seconds, player − timeline), until the timeline changes.
    private var lastDrift: Double?
    private var users: [SyncplayListedUser] = []
    /// The server accepted our password for this managed room (or lists us as a controller).
    var controlling = false
    /// Our `manage` on its way (`SyncplayBridge+Managed.swift`).
    var managing: Managing?
    /// The shared list we carry into the managed room we made, until the server echoes it.
    var carryingList = false
    /// Our chat lines on their way to the server, to confirm with the daemon's ids when they come back.
    private var pendingChat: [(id: Int, text: String)] = []
    static let pendingChatLimit = 16

    public init(configuration: SyncplayClient.Configuration) {
        client = SyncplayClient(configuration: configuration)
    }

    // MARK: Syncplay side

    /// The TCP connection to the Syncplay server is up.
    public mutating func connected(now: Double) -> [Action] {
        translate(client.connected(now: now), now: now)
    }

    /// One decoded line from the Syncplay server.
    public mutating func received(_ commands: [SyncplayCommand], now: Double) -> [Action] {
        translate(client.received(commands, player: playerReading(now: now), now: now), now: now)
    }

    /// A line that could not be decoded.
    public mutating func receivedBadLine(_ error: CowatchError) -> [Action] {
        translate(client.receivedBadLine(error), now: 0)
    }

    /// Time passes (the shell calls it about twice a second): a silent server is gone.
    public mutating func tick(now: Double) -> [Action] {
        translate(client.tick(now: now), now: now)
    }

    // MARK: Daemon side

    /// A message from the daemon's coordinator, as it would go to a Cowatch room server.
    public mutating func fromDaemon(_ message: ClientMessage, now: Double) -> [Action] {
        switch message {
        case .hello(let hello):
            daemonName = hello.name
            daemonActivity = hello.activity
            playingName = hello.activity.map { Self.fileName(Self.baseName($0.url)) }
            var actions = translate(client.readinessChanged(hello.status.ready), now: now)
            activityID = hello.activity?.id ?? 0
            let challenge = ServerMessage.Challenge(
                features: [WireFeature.chat, WireFeature.playlist], nonce: String(repeating: "0", count: 64), access: .open)
            actions.append(.deliver(.challenge(challenge)))
            return actions
        case .auth:
            authed = true
            return welcomeIfDue(now: now)
        case .timeRequest(let id, let t1):
            // Our clock is the reference: the reply's midpoint is the request's, no offset.
            let middle = t1 <= now ? (t1 + now) / 2 : now
            return [.deliver(.timeReply(id: id, t1: t1, t2: middle, t3: middle))]
        case .action(let request):
            return action(request, now: now)
        case .status(let status):
            return translate(client.readinessChanged(status.ready), now: now)
        case .media(_, let info):
            let name = daemonActivity.map { Self.baseName($0.url) } ?? "media"
            let file = SyncplayFile(name: name, duration: info.duration, size: info.size.map(Double.init))
            return translate(client.fileChanged(file), now: now)
        case .report(let drift, _):
            lastDrift = drift
            return []
        case .chat(let id, let text):
            do {
                let actions = try client.chat(text)
                pendingChat.append((id, text))
                if pendingChat.count > Self.pendingChatLimit { pendingChat.removeFirst() }
                return translate(actions, now: now)
            } catch {
                return [.deliver(.refused(actionID: id, code: error.code.rawValue, message: error.message))]
            }
        case .end(let id):
            return [Self.unsupported(id, "a Syncplay room cannot be ended for everyone: leave it instead")]
        case .role(_, _, let id):
            return [Self.unsupported(id, "a Syncplay room has no operators: its controllers are those who know the room's password")]
        case .kick(_, let id):
            return [Self.unsupported(id, "nobody can be removed from a Syncplay room")]
        case .message(let message):
            return [Self.unsupported(message.id, "a Syncplay room carries no messages")]
        case .detach(let id, _):
            return [Self.unsupported(id, "a Syncplay room keeps no attachments")]
        case .playlistEdit(let request):
            return playlistEdit(request, now: now)
        case .playlistEnded(let activity, _):
            return playlistEnded(activity: activity, now: now)
        case .share, .unshare, .streamStatus:
            // Never sent: the bridge's challenge does not offer `stream`.
            return []
        case .ready, .bye, .playlistHave, .transfer, .stream, .streamServe, .unsupported, .unknown:
            return []
        }
    }

    /// The daemon asked the group to play, pause or seek (anything else is refused).
    private mutating func action(_ request: ClientMessage.ActionRequest, now: Double) -> [Action] {
        guard welcomed, let current = client.timeline else {
            return [.deliver(.refused(actionID: request.id, code: CowatchError.Code.notInRoom.rawValue, message: "not in the Syncplay room yet"))]
        }
        if let refusal = notControlling(request.id) { return [refusal] }
        let here = current.position(at: now)
        let paused: Bool
        let position: Double
        let notice: Notice
        let name = daemonName ?? client.username
        switch request.kind {
        case .pause:
            paused = true
            position = Self.checkedPosition(request.position) ?? here
            notice = Notice(actor: name, action: .pause, position: position)
        case .play:
            paused = false
            position = here
            notice = Notice(actor: name, action: .play, position: position)
        case .seek:
            guard let target = Self.checkedPosition(request.position) else {
                return [Self.refused(request.id, .invalidArgument, "a seek needs a position")]
            }
            paused = current.paused
            position = target
            notice = Notice(actor: name, action: .seek, position: target, from: here, to: target)
        case .speed:
            return [Self.unsupported(request.id, "Syncplay has no playback speed: everyone in a Syncplay room plays at 1×")]
        case .open:
            return [Self.unsupported(request.id, "switching media in a Syncplay room is not supported from Cowatch yet")]
        }
        // Pressing play says "ready", as in a Cowatch room (the coordinator counts it so) and as
        // Syncplay's own client does.
        var actions = request.kind == .play && !client.ready ? translate(client.readinessChanged(true), now: now) : []
        actions += translate(client.localChange(paused: paused, position: position, seek: request.kind == .seek, now: now), now: now)
        actions.append(.deliver(.applied(timeline: nextTimeline(client.timeline), notice: notice, actionID: request.id)))
        return actions
    }

    // MARK: Translation

    mutating func translate(_ actions: [SyncplayClient.Action], now: Double) -> [Action] {
        var result: [Action] = []
        for action in actions {
            switch action {
            case .send(let commands):
                result.append(.syncplay(commands))
            case .startTLS:
                result.append(.startTLS)
            case .plaintext:
                result.append(.plaintext)
            case .joined:
                result += welcomeIfDue(now: now)
            case .follow(let timeline):
                lastDrift = nil
                if welcomed {
                    // The notice, when someone made it, comes next (SyncplayClient says it after the follow).
                    result.append(.deliver(.applied(timeline: nextTimeline(timeline), notice: nil, actionID: nil)))
                } else {
                    result += welcomeIfDue(now: now)
                }
            case .notice(let notice):
                let more = self.notice(notice, after: &result)
                result += more
            case .users(let users):
                self.users = users.filter { $0.room == client.room }
                if let me = self.users.first(where: { $0.username == client.username }) { controlling = me.controller }
                if welcomed { result.append(.deliver(.participants(participants(now: now)))) }
            case .chat(let from, let message):
                result += chat(from: from, message: message)
            case .playlist(let files, let by):
                guard !skipsNewRoomList(by: by) else { continue }
                result += syncplayList(files, by: by)
            case .playlistIndex(let index, let by):
                result += syncplayIndex(index, by: by, now: now)
            case .managedRoomCreated(let room, let password):
                result += managedRoomCreated(room: room, password: password)
            case .fail(let error):
                result.append(.fail(error))
            }
        }
        return result
    }

    /// A Syncplay notice as the daemon hears it: pause, play and seek ride on the `applied` just
    /// made for them (its notice filled in); the others are notices of their own.
    private mutating func notice(_ notice: SyncplayNotice, after previous: inout [Action]) -> [Action] {
        let translated: Notice
        switch notice {
        case .paused(let name, let at): translated = Notice(actor: Self.shown(name), action: .pause, position: at)
        case .played(let name, let at): translated = Notice(actor: Self.shown(name), action: .play, position: at)
        case .sought(let name, let to):
            translated = Notice(actor: Self.shown(name), action: .seek, position: to, from: lastSeekOrigin, to: to)
        case .joined(let name):
            guard name != client.username else { return [] }
            return [.deliver(.notice(Notice(actor: Self.shown(name), action: .join)))]
        case .left(let name):
            guard name != client.username else { return [] }
            return [.deliver(.notice(Notice(actor: Self.shown(name), action: .leave)))]
        case .ready(let name, let ready):
            guard name != client.username else { return [] }
            return [.deliver(.notice(Notice(actor: Self.shown(name), action: ready ? .ready : .unready)))]
        case .controller(let name, let success):
            guard name == client.username else { return [] }  // shown in the participant list (operator)
            controlling = success
            return claimAnswered(success)
        }
        if case .deliver(.applied(let timeline, nil, nil, nil))? = previous.last {
            previous[previous.count - 1] = .deliver(.applied(timeline: timeline, notice: translated, actionID: nil))
            return []
        }
        return [.deliver(.notice(translated))]
    }

    /// Where the group was before the last timeline change (a seek notice's `from`).
    private var lastSeekOrigin: Double?

    mutating func nextTimeline(_ timeline: SyncplayTimeline?) -> GroupTimeline {
        seq += 1
        let line = timeline ?? SyncplayTimeline(position: 0, at: 0, paused: true, setBy: nil)
        lastSeekOrigin = delivered?.position(at: line.at)
        let next = GroupTimeline(seq: seq, position: line.position, reference: line.at, rate: 1, playing: !line.paused)
        delivered = next
        return next
    }

    /// The welcome, once the daemon said hello and answered the challenge, the Syncplay server
    /// let us in, and it said where the room is.
    private mutating func welcomeIfDue(now: Double) -> [Action] {
        guard !welcomed, authed, client.phase == .joined, let name = daemonName, client.timeline != nil else { return [] }
        welcomed = true
        // The daemon's own media; when the room's list has a current entry, the list says it is
        // that entry (and the daemon loads its copy of it, if its own media is another file).
        let activity = daemonActivity ?? Activity(url: "media")
        if currentName != nil { currentEntryActivity = activity.id }
        let welcome = ServerMessage.Welcome(
            name: name, room: client.room, timeline: nextTimeline(client.timeline), participants: participants(now: now),
            activity: activity, token: String(repeating: "0", count: 64))
        playlistVersion += 1
        return [.deliver(.welcome(welcome)), .deliver(.playlist(playlistState(), change: nil, requestID: nil))]
    }

    private func participants(now: Double) -> [ParticipantInfo] {
        let room = client.roomPosition(at: now)
        var list = users.map { user in
            let mine = user.username == client.username
            var drift = lastDrift
            if !mine { drift = user.position.flatMap { position in room.map { position - $0 } } }
            return ParticipantInfo(
                name: mine ? (daemonName ?? user.username) : Self.shown(user.username), state: "syncplay", drift: drift,
                status: ParticipantStatus(ready: user.isReady ?? false), role: user.controller ? .operator : .member)
        }
        if let name = daemonName, !list.contains(where: { $0.name == name }) {
            list.insert(ParticipantInfo(name: name, state: "syncplay", drift: lastDrift), at: 0)
        }
        return list
    }

    private mutating func chat(from: String, message: String) -> [Action] {
        if from == client.username, let index = pendingChat.firstIndex(where: { $0.text == message }) {
            let id = pendingChat[index].id
            pendingChat.removeSubrange(...index)
            return [.deliver(.chat(ChatLine(from: daemonName ?? from, text: message, id: id)))]
        }
        let text = Self.shown(message)
        guard !text.isEmpty else { return [] }
        return [.deliver(.chat(ChatLine(from: Self.shown(from), text: text)))]
    }

    /// What Syncplay is told of this viewer's player when an answer is due: the room's position
    /// moved by the daemon's last measured drift (its player follows the room to within it), so
    /// a player that is still opening its file never drags the room back to 0.
    private func playerReading(now: Double) -> SyncplayClient.PlayerReading {
        guard let timeline = client.timeline else { return SyncplayClient.PlayerReading(position: nil, paused: true) }
        let drift = lastDrift.flatMap { $0.isFinite && abs($0) < 3600 ? $0 : nil } ?? 0
        return SyncplayClient.PlayerReading(position: max(0, timeline.position(at: now) + drift), paused: timeline.paused)
    }

    // MARK: Helpers

    /// A peer's name or line as people may see it: without characters that could make it read
    /// as someone else's (direction overrides, invisible characters).
    static func shown(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.filter { !ControlCharacters.isUnfitForDisplay($0) }))
    }

    /// In a managed room we do not control, Syncplay's server would undo our change: refused
    /// here, saying why (as a Cowatch managed room refuses a member).
    func notControlling(_ id: Int?) -> Action? {
        guard !controlling, SyncplayManagedRoom.parse(client.room) != nil else { return nil }
        return Self.refused(
            id, .notPermitted,
            "this Syncplay room is managed: only its controllers may pause, play, seek or change its playlist (the room's password, given with --syncplay-room-password-file, makes you one)")
    }

    static func baseName(_ url: String) -> String {
        url.split(separator: "/").last.map(String.init) ?? url
    }

    static func checkedPosition(_ value: Double?) -> Double? {
        guard let value, value.isFinite, value >= 0, value < 1e9 else { return nil }
        return value
    }

    static func unsupported(_ id: Int?, _ message: String) -> Action {
        refused(id, .unsupported, message)
    }

    static func refused(_ id: Int?, _ code: CowatchError.Code, _ message: String) -> Action {
        .deliver(.refused(actionID: id, code: code.rawValue, message: message))
    }
}
