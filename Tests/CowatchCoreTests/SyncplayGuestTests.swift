import Testing

@testable import CowatchCore

/// Issue 24, part 2: a stock Syncplay client as a participant of a Cowatch room.
@Suite("Syncplay: a Syncplay client's guest machine in a Cowatch room")
struct SyncplayGuestTests {
    static func sent(_ actions: [SyncplayGuest.Action]) -> [SyncplayCommand] {
        actions.flatMap { action -> [SyncplayCommand] in
            if case .syncplay(let commands) = action { return commands }
            return []
        }
    }

    static func toRoom(_ actions: [SyncplayGuest.Action]) -> [ClientMessage] {
        actions.compactMap { if case .cowatch(let message) = $0 { message } else { nil } }
    }

    static func states(_ actions: [SyncplayGuest.Action]) -> [SyncplayState] {
        sent(actions).compactMap { if case .state(let state) = $0 { state } else { nil } }
    }

    static func closes(_ actions: [SyncplayGuest.Action]) -> CowatchError? {
        for case .close(let error) in actions { return error }
        return nil
    }

    static let playing = GroupTimeline(seq: 3, position: 100, reference: 10, rate: 1, playing: true)

    /// A guest whose client "carol" said hello for room "movies" and was welcomed at `now` 10
    /// into a room playing from 100 s (alice there too).
    static func welcomed(_ configuration: SyncplayGuest.Configuration = .init()) -> SyncplayGuest {
        var guest = SyncplayGuest(configuration: configuration)
        _ = guest.connected(now: 0)
        _ = guest.received([.hello(SyncplayHello(username: "carol", room: "movies", realVersion: "1.6.9"))], now: 1)
        _ = guest.roomConnected(now: 1)
        _ = guest.fromRoom(.challenge(.init(nonce: "00", access: .open)), now: 1)
        _ = guest.fromRoom(.welcome(.init(
            name: "carol", room: "movies", timeline: playing,
            participants: [ParticipantInfo(name: "alice", state: "joined", role: .owner), ParticipantInfo(name: "carol", state: "joined")],
            activity: Activity(url: "film.mkv"))), now: 10)
        // The room's (empty) list follows the welcome: the client is greeted then.
        _ = guest.fromRoom(.playlist(PlaylistState(), change: nil, requestID: nil), now: 10)
        return guest
    }

    @Test("a reconnect gives the room back the session token its first connection was given, so the name stays its own")
    func reconnectCarriesToken() {
        var first = Self.welcomed()
        let kept = first.fromRoom(.welcome(.init(
            name: "carol", room: "movies", timeline: Self.playing, participants: [], activity: Activity(url: "film.mkv"), token: "t0ken")), now: 11)
        #expect(kept.contains(.keepToken("t0ken")))
        var again = SyncplayGuest(configuration: .init())
        _ = again.connected(now: 20)
        _ = again.received([.hello(SyncplayHello(username: "carol", room: "movies", realVersion: "1.6.9"))], now: 20)
        again.token = "t0ken"
        guard case .hello(let said)? = Self.toRoom(again.roomConnected(now: 20)).first else {
            Issue.record("no hello")
            return
        }
        #expect(said.token == "t0ken")
        var stranger = SyncplayGuest(configuration: .init())
        _ = stranger.received([.hello(SyncplayHello(username: "carol", room: "movies", realVersion: "1.6.9"))], now: 20)
        guard case .hello(let fresh)? = Self.toRoom(stranger.roomConnected(now: 20)).first else {
            Issue.record("no hello")
            return
        }
        #expect(fresh.token == nil, "a client the gateway has no token for proves nothing")
    }

    @Test("STARTTLS is answered no without a certificate clients accept; hello opens the room connection; the welcome answers Syncplay's way")
    func joining() {
        var guest = SyncplayGuest(configuration: .init())
        #expect(Self.sent(guest.received([.tls(.send)], now: 0)) == [.tls(.refused)])
        let hello = guest.received([.hello(SyncplayHello(username: "carol smith", room: "movies", realVersion: "1.6.9"))], now: 0.1)
        #expect(hello == [.connectRoom("movies")])
        #expect(guest.name == "carol_smith", "a Syncplay name becomes a Cowatch participant name")
        let roomHello = Self.toRoom(guest.roomConnected(now: 0.2))
        guard case .hello(let said)? = roomHello.first else {
            Issue.record("no hello: \(roomHello)")
            return
        }
        #expect(said.room == "movies" && said.name == "carol_smith" && said.client.hasPrefix("syncplay"))
        #expect(Self.toRoom(guest.fromRoom(.challenge(.init(nonce: "00", access: .new)), now: 0.3)) == [.auth(.init())])
        let welcome = guest.fromRoom(.welcome(.init(
            name: "carol_smith", room: "movies", timeline: Self.playing, participants: [], activity: Activity(url: "film.mkv"), token: "t0ken")), now: 0.4)
        #expect(welcome == [.keepToken("t0ken")], "the greeting waits for the room's list")
        let greeting = guest.fromRoom(.playlist(PlaylistState(), change: nil, requestID: nil), now: 0.4)
        let commands = Self.sent(greeting)
        let helloIndex = commands.firstIndex { if case .hello = $0 { true } else { false } }
        let emptyPlaylist = commands.firstIndex(of: .set([.playlistChange(files: [], user: nil)]))
        #expect(helloIndex != nil && emptyPlaylist != nil && emptyPlaylist! < helloIndex!, "as Syncplay's server: the empty list before its Hello")
        #expect(Self.states(greeting).last?.playstate?.paused == false && Self.states(greeting).last?.ignoring?.server != nil,
            "the room's state, forced")
    }

    @Test("refused: a wrong server password, a room name Cowatch does not take, a room with a secret")
    func refusals() {
        var guest = SyncplayGuest(configuration: .init(passwordHash: SyncplayPassword.hash("right")))
        let wrong = guest.received([.hello(SyncplayHello(username: "eve", passwordHash: SyncplayPassword.hash("wrong"), room: "r", realVersion: "1.6.9"))], now: 0)
        #expect(Self.sent(wrong) == [.error("Wrong password supplied")] && Self.closes(wrong)?.code == .authFailed)
        var badRoom = SyncplayGuest(configuration: .init())
        let room = badRoom.received([.hello(SyncplayHello(username: "eve", room: "+base:0123456789AB", realVersion: "1.6.9"))], now: 0)
        #expect(Self.closes(room)?.code == .invalidArgument)
        var secret = SyncplayGuest(configuration: .init())
        _ = secret.received([.hello(SyncplayHello(username: "eve", room: "r", realVersion: "1.6.9"))], now: 0)
        let guarded = secret.fromRoom(.challenge(.init(nonce: "00", access: .secret(salt: "aa"))), now: 0)
        #expect(Self.closes(guarded)?.code == .authFailed && Self.toRoom(guarded).isEmpty, "no proof is attempted")
    }

    @Test("a State each second from the room's timeline, with the client's stamp echoed plus the time held")
    func states() throws {
        var guest = Self.welcomed()
        _ = guest.received([.state(SyncplayState(
            ping: .init(latencyCalculation: 10, clientLatencyCalculation: 5000, clientRtt: 0.02),
            playstate: .init(position: 100.5, paused: false), ignoring: .init(server: 1)))], now: 10.5)
        #expect(guest.tick(now: 10.9).isEmpty, "not yet a second")
        let state = try #require(Self.states(guest.tick(now: 11.2)).first)
        #expect(abs((state.playstate?.position ?? 0) - 101.2) < 1e-9 && state.playstate?.paused == false)
        #expect(abs((state.ping?.clientLatencyCalculation ?? 0) - 5000.7) < 1e-9, "the stamp plus 0.7 s held")
        #expect(Self.closes(guest.tick(now: 30)) != nil, "silent for 12.5 s: gone")
    }

    @Test("the client's pause, play and seek become the room's actions; the room's answer is echoed, not forced")
    func clientChanges() throws {
        var guest = Self.welcomed()
        // It echoes our welcome's forced state first.
        _ = guest.received([.state(SyncplayState(playstate: .init(position: 100, paused: false), ignoring: .init(server: 1)))], now: 10.1)
        let pause = Self.toRoom(guest.received([.state(SyncplayState(
            playstate: .init(position: 102, paused: true), ignoring: .init(client: 1)))], now: 12))
        guard case .action(let request)? = pause.first else {
            Issue.record("no action: \(pause)")
            return
        }
        #expect(request.kind == .pause && request.position == 102)
        let applied = guest.fromRoom(.applied(
            timeline: GroupTimeline(seq: 4, position: 102, reference: 12.05, rate: 1, playing: false),
            notice: Notice(actor: "carol", action: .pause, position: 102), actionID: request.id), now: 12.01)
        let echo = try #require(Self.states(applied).first)
        #expect(echo.ignoring?.client == 1 && echo.ignoring?.server == nil, "its counter echoed, nothing forced")
        #expect(echo.playstate?.paused == true, "the pause, though the room scheduled it a moment ahead: never a stale play it would follow")
        let seek = Self.toRoom(guest.received([.state(SyncplayState(playstate: .init(position: 40, paused: true, doSeek: true), ignoring: .init(client: 2)))], now: 13))
        #expect(seek.contains { if case .action(let r) = $0 { r.kind == .seek && r.position == 40 } else { false } }, "\(seek)")
    }

    @Test("someone's change in the room is forced on the client with who did it; until it echoes, its states are not read")
    func roomChanges() throws {
        var guest = Self.welcomed()
        _ = guest.received([.state(SyncplayState(playstate: .init(position: 100, paused: false), ignoring: .init(server: 1)))], now: 10.1)
        let pause = guest.fromRoom(.applied(
            timeline: GroupTimeline(seq: 4, position: 101, reference: 11, rate: 1, playing: false),
            notice: Notice(actor: "alice", action: .pause, position: 101), actionID: nil), now: 11)
        let forced = try #require(Self.states(pause).first)
        #expect(forced.playstate?.paused == true && forced.playstate?.setBy == "alice" && forced.ignoring?.server == 2)
        // A state made before it heard of the pause: ignored, nothing asked of the room.
        let stale = guest.received([.state(SyncplayState(playstate: .init(position: 101.5, paused: false)))], now: 11.05)
        #expect(Self.toRoom(stale).isEmpty)
        // Once it echoed, a paused client that stays where the room is asks nothing.
        let settled = guest.received([.state(SyncplayState(playstate: .init(position: 101, paused: true), ignoring: .init(server: 2)))], now: 11.2)
        #expect(!Self.toRoom(settled).contains { if case .action = $0 { true } else { false } })
    }

    @Test("a refused change puts the client back and says why; a client far off is put back; its position is drift telemetry")
    func guards() throws {
        var guest = Self.welcomed()
        _ = guest.received([.state(SyncplayState(playstate: .init(position: 100, paused: false), ignoring: .init(server: 1)))], now: 10.1)
        let asked = Self.toRoom(guest.received([.state(SyncplayState(playstate: .init(position: 101, paused: true), ignoring: .init(client: 1)))], now: 11))
        guard case .action(let request)? = asked.first else {
            Issue.record("no action")
            return
        }
        let refused = guest.fromRoom(.refused(actionID: request.id, code: "not-permitted", message: "in this managed room only the owner and operators may pause"), now: 11.01)
        #expect(Self.sent(refused).contains { if case .chat(let chat) = $0 { chat.message.contains("managed room") } else { false } })
        #expect(Self.states(refused).first?.playstate?.paused == false, "put back: the room plays on")
        let echoed = Self.states(refused).first?.ignoring?.server
        // Close to the room: telemetry only.
        let near = Self.toRoom(guest.received([.state(SyncplayState(playstate: .init(position: 102.2, paused: false), ignoring: .init(server: echoed)))], now: 12))
        #expect(near.contains { if case .report(let drift?, _) = $0 { abs(drift - 0.2) < 0.01 } else { false } }, "\(near)")
        // Six seconds behind: put back with a forced seek.
        let far = guest.received([.state(SyncplayState(playstate: .init(position: 97, paused: false)))], now: 13)
        #expect(Self.states(far).contains { $0.playstate?.doSeek == true && $0.ignoring?.server != nil })
    }

    @Test("joins, leaves, readiness and chat reach the client; its chat and readiness reach the room; the user list has everyone")
    func people() {
        var guest = Self.welcomed()
        #expect(Self.sent(guest.fromRoom(.notice(Notice(actor: "bob", action: .join)), now: 11))
            == [.set([.user(SyncplayUserUpdate(username: "bob", room: "movies", event: .joined))])])
        #expect(Self.sent(guest.fromRoom(.notice(Notice(actor: "bob", action: .ready)), now: 11))
            == [.set([.ready(SyncplayReady(username: "bob", isReady: true, manuallyInitiated: true))])])
        #expect(Self.sent(guest.fromRoom(.chat(ChatLine(from: "alice", text: "hi")), now: 11)) == [.chat(SyncplayChat(username: "alice", message: "hi"))])
        #expect(Self.toRoom(guest.received([.chat(SyncplayChat(message: "hello"))], now: 11)).contains { if case .chat(_, "hello") = $0 { true } else { false } })
        #expect(Self.toRoom(guest.received([.set([.ready(SyncplayReady(isReady: true, manuallyInitiated: true))])], now: 11))
            == [.status(ParticipantStatus(ready: true))])
        _ = guest.received([.set([.file(SyncplayFile(name: "film.mkv", duration: 75, size: 1000))])], now: 11)
        guard case .list(let users?)? = Self.sent(guest.received([.list(nil)], now: 11)).first else {
            Issue.record("no list")
            return
        }
        #expect(Set(users.map(\.username)) == ["alice", "carol"] && users.allSatisfy { $0.room == "movies" && $0.file?.name == "film.mkv" })
        #expect(users.first { $0.username == "alice" }?.controller == true)
    }

    @Test("a room at another speed is said once to the client, which cannot follow it")
    func speed() {
        var guest = Self.welcomed()
        let faster = guest.fromRoom(.applied(
            timeline: GroupTimeline(seq: 4, position: 101, reference: 11, rate: 1.5, playing: true),
            notice: Notice(actor: "alice", action: .speed, rate: 1.5), actionID: nil), now: 11)
        #expect(Self.sent(faster).contains { if case .chat(let chat) = $0 { chat.message.contains("1.50x") } else { false } })
    }
}
