import Testing

@testable import CowatchCore

/// Issue 24: a Syncplay room as the daemon's coordinator hears it, and the daemon's messages as
/// the Syncplay server hears them.
@Suite("Syncplay: the bridge between a daemon and a Syncplay room")
struct SyncplayBridgeTests {
    typealias Server = SyncplayClientTests

    static func delivered(_ actions: [SyncplayBridge.Action]) -> [ServerMessage] {
        actions.compactMap { if case .deliver(let message) = $0 { message } else { nil } }
    }

    static func sent(_ actions: [SyncplayBridge.Action]) -> [SyncplayCommand] {
        actions.flatMap { action -> [SyncplayCommand] in
            if case .syncplay(let commands) = action { return commands }
            return []
        }
    }

    /// A bridge whose daemon ("alice") said hello and answered the challenge, welcomed by the
    /// Syncplay server as "alice_", with the room playing from 100 s; returns the welcome.
    static func welcomed(now: Double = 1) -> (SyncplayBridge, ServerMessage.Welcome?) {
        var bridge = SyncplayBridge(configuration: .init(username: "alice", room: "movies", askTLS: false))
        _ = bridge.connected(now: 0)
        let hello = ClientMessage.Hello(room: "movies", name: "alice", activity: Activity(url: "film.mkv"))
        let challenge = delivered(bridge.fromDaemon(.hello(hello), now: 0))
        #expect(challenge.count == 1)
        _ = bridge.fromDaemon(.auth(.init()), now: 0)
        _ = bridge.received([.hello(SyncplayHello(username: "alice_", room: "movies", realVersion: "1.6.9"))], now: 0.1)
        let first = delivered(bridge.received(Server.serverState(position: 100, paused: false, stamp: 5000), now: now))
        for case .welcome(let welcome) in first { return (bridge, welcome) }
        return (bridge, nil)
    }

    @Test("the daemon is welcomed only once Syncplay let it in and said where the room is, under the daemon's own name")
    func welcome() throws {
        var bridge = SyncplayBridge(configuration: .init(username: "alice", room: "movies", askTLS: false))
        _ = bridge.connected(now: 0)
        let answer = Self.delivered(bridge.fromDaemon(.hello(ClientMessage.Hello(room: "movies", name: "alice")), now: 0))
        guard case .challenge(let challenge)? = answer.first else {
            Issue.record("no challenge: \(answer)")
            return
        }
        #expect(challenge.access == .open && challenge.features == [WireFeature.chat, WireFeature.playlist], "only what a Syncplay room can carry")
        #expect(Self.delivered(bridge.fromDaemon(.auth(.init()), now: 0)).isEmpty, "not before Syncplay's own welcome")
        #expect(Self.delivered(bridge.received([.hello(SyncplayHello(username: "alice_", room: "movies", realVersion: "1.6.9"))], now: 0.1)).isEmpty,
            "not before the room's state")
        let (_, welcome) = Self.welcomed()
        let room = try #require(welcome)
        #expect(room.name == "alice", "the coordinator knows itself by the daemon's name, whatever Syncplay appended")
        #expect(room.room == "movies" && room.timeline.playing && room.timeline.rate == 1)
        #expect(room.participants.contains { $0.name == "alice" && $0.state == "syncplay" })
    }

    @Test("time requests are answered on our own clock: no offset, the request's midpoint")
    func timeReplies() {
        var (bridge, _) = Self.welcomed()
        let reply = Self.delivered(bridge.fromDaemon(.timeRequest(id: 7, t1: 10), now: 10.5))
        #expect(reply == [.timeReply(id: 7, t1: 10, t2: 10.25, t3: 10.25)])
        let odd = Self.delivered(bridge.fromDaemon(.timeRequest(id: 8, t1: 50), now: 10))
        #expect(odd == [.timeReply(id: 8, t1: 50, t2: 10, t3: 10)], "a request from the future is not believed")
    }

    @Test("someone's pause and seek reach the daemon as applied timelines with who did it, in sequence")
    func othersChanges() throws {
        var (bridge, welcome) = Self.welcomed()
        let start = try #require(welcome).timeline
        // bob pauses at 103 s.
        let pause = Self.delivered(bridge.received(Server.serverState(position: 103, paused: true, stamp: 5003, setBy: "bob"), now: 4))
        guard case .applied(let paused, let notice, nil, nil)? = pause.first else {
            Issue.record("no applied: \(pause)")
            return
        }
        #expect(paused.seq == start.seq + 1 && !paused.playing && paused.position == 103)
        #expect(notice == Notice(actor: "bob", action: .pause, position: 103))
        // carol seeks to 600 s (doSeek): the notice says from where.
        let seek = Self.delivered(bridge.received(Server.serverState(position: 600, paused: true, stamp: 5005, doSeek: true, setBy: "carol"), now: 6))
        guard case .applied(let sought, let seekNotice?, nil, nil)? = seek.first else {
            Issue.record("no applied seek: \(seek)")
            return
        }
        #expect(sought.seq == paused.seq + 1 && sought.position == 600)
        #expect(seekNotice.actor == "carol" && seekNotice.action == .seek && seekNotice.to == 600 && seekNotice.from == 103)
        // The once-a-second state of an unchanged room moves nothing.
        #expect(Self.delivered(bridge.received(Server.serverState(position: 600, paused: true, stamp: 5006, setBy: "carol"), now: 7)).allSatisfy {
            if case .applied = $0 { false } else { true }
        })
    }

    @Test("the daemon's pause, play and seek go to Syncplay at once and are applied with its request id; speed, open, end, roles are refused")
    func ownActions() throws {
        var (bridge, _) = Self.welcomed()
        let pause = bridge.fromDaemon(.action(.init(id: 3, kind: .pause, position: 104)), now: 5)
        let state = try #require(Self.sent(pause).compactMap { if case .state(let state) = $0 { state } else { nil } }.first)
        #expect(state.playstate?.paused == true && state.playstate?.position == 104 && state.ignoring?.client == 1)
        guard case .applied(let timeline, let notice, 3, nil)? = Self.delivered(pause).last else {
            Issue.record("not applied: \(pause)")
            return
        }
        #expect(!timeline.playing && timeline.position == 104 && notice?.actor == "alice")
        let seek = bridge.fromDaemon(.action(.init(id: 4, kind: .seek, position: 30, from: 104)), now: 6)
        #expect(Self.sent(seek).contains { if case .state(let state) = $0 { state.playstate?.doSeek == true } else { false } })
        let playActions = bridge.fromDaemon(.action(.init(id: 5, kind: .play)), now: 7)
        #expect(Self.sent(playActions).contains(.set([.ready(SyncplayReady(isReady: true, manuallyInitiated: true))])))
        let play = Self.delivered(playActions)
        guard case .applied(let playing, _, 5, nil)? = play.last else {
            Issue.record("play not applied: \(play)")
            return
        }
        #expect(playing.playing && playing.position == 30, "play starts from where the room stands")
        #expect(bridge.client.ready, "pressing play says ready, as the coordinator counts it")
        for (message, id) in [
            (ClientMessage.action(.init(id: 6, kind: .speed, rate: 1.5)), 6), (.action(.init(id: 7, kind: .open, activity: Activity(url: "x"))), 7),
            (.end(id: 8), 8), (.role(name: "bob", role: .operator, id: 9), 9), (.kick(name: "bob", id: 10), 10),
        ] {
            let answer = Self.delivered(bridge.fromDaemon(message, now: 8))
            guard case .refused(id, let code, let text)? = answer.first else {
                Issue.record("not refused: \(message) → \(answer)")
                continue
            }
            #expect(code == "unsupported" && text.contains("Syncplay"))
            #expect(Self.sent(bridge.fromDaemon(message, now: 8)).isEmpty, "nothing of it reaches the server")
        }
    }

    @Test("an action before the welcome is refused not-in-room; a seek without a usable position invalid-argument")
    func earlyAndBadActions() {
        var bridge = SyncplayBridge(configuration: .init(username: "alice", room: "movies", askTLS: false))
        let early = Self.delivered(bridge.fromDaemon(.action(.init(id: 1, kind: .pause, position: 3)), now: 0))
        #expect(early == [.refused(actionID: 1, code: "not-in-room", message: "not in the Syncplay room yet")])
        var (joined, _) = Self.welcomed()
        for bad in [Double.nan, -1, .infinity, 1e300] {
            let answer = Self.delivered(joined.fromDaemon(.action(.init(id: 2, kind: .seek, position: bad)), now: 2))
            #expect(answer.first.map { if case .refused(2, "invalid-argument", _) = $0 { true } else { false } } == true, "\(bad): \(answer)")
        }
    }

    @Test("chat: our line is confirmed by its echo with the daemon's id; others' lines are shown without deceptive characters; a bad line is refused")
    func chat() {
        var (bridge, _) = Self.welcomed()
        let sent = bridge.fromDaemon(.chat(id: 12, text: "hello"), now: 2)
        #expect(Self.sent(sent) == [.chat(SyncplayChat(message: "hello"))])
        let echo = Self.delivered(bridge.received([.chat(SyncplayChat(username: "alice_", message: "hello"))], now: 2.1))
        #expect(echo == [.chat(ChatLine(from: "alice", text: "hello", id: 12))])
        let spoof = Self.delivered(bridge.received([.chat(SyncplayChat(username: "bob\u{202E}", message: "hi\u{202E}dlrow"))], now: 3))
        #expect(spoof == [.chat(ChatLine(from: "bob", text: "hidlrow"))])
        let long = Self.delivered(bridge.fromDaemon(.chat(id: 13, text: String(repeating: "x", count: 151)), now: 4))
        #expect(long.first.map { if case .refused(13, "invalid-argument", _) = $0 { true } else { false } } == true, "\(long)")
    }

    @Test("joins, leaves and readiness of others are notices; our own are not")
    func notices() {
        var (bridge, _) = Self.welcomed()
        let join = Self.delivered(bridge.received([.set([.user(SyncplayUserUpdate(username: "bob", room: "movies", event: .joined))])], now: 2))
        #expect(join.contains(.notice(Notice(actor: "bob", action: .join))))
        let mine = Self.delivered(bridge.received([.set([.ready(SyncplayReady(username: "alice_", isReady: true))])], now: 3))
        #expect(mine.isEmpty)
        let ready = Self.delivered(bridge.received([.set([.ready(SyncplayReady(username: "bob", isReady: true))])], now: 3))
        #expect(ready == [.notice(Notice(actor: "bob", action: .ready))])
    }

    @Test("the user list is the participants: Syncplay members with readiness, controllers as operators, drift from their position")
    func participants() {
        var (bridge, _) = Self.welcomed(now: 1)
        let list = Self.delivered(bridge.received([.list([
            SyncplayListedUser(room: "movies", username: "alice_", position: 100),
            SyncplayListedUser(room: "movies", username: "bob", position: 99.5, controller: true, isReady: true),
            SyncplayListedUser(room: "elsewhere", username: "eve", position: 3),
        ])], now: 1))
        guard case .participants(let people)? = list.first else {
            Issue.record("no participants: \(list)")
            return
        }
        #expect(people.map(\.name) == ["alice", "bob"], "our own entry under the daemon's name; other rooms left out")
        let bob = people.first { $0.name == "bob" }
        #expect(bob?.role == .operator && bob?.status.ready == true && bob?.state == "syncplay")
        #expect(abs((bob?.drift ?? 0) + 0.5) < 0.01, "bob is half a second behind the room: \(String(describing: bob?.drift))")
    }

    @Test("Syncplay hears the room's position moved by the daemon's measured drift (and by the server's delay estimate), never a loading player's 0")
    func reportedPosition() throws {
        var (bridge, _) = Self.welcomed(now: 1)
        // A first echo places the server's clock (and the timeline with it).
        _ = bridge.received(Server.serverState(position: 101, paused: false, stamp: 5001, echoed: 1.998), now: 2)
        _ = bridge.fromDaemon(.report(drift: 0.02, rtt: 0.001), now: 2.5)
        let answer = bridge.received(Server.serverState(position: 102, paused: false, stamp: 5002, echoed: 2.998), now: 3)
        let state = try #require(Self.sent(answer).compactMap { if case .state(let state) = $0 { state } else { nil } }.first)
        let position = try #require(state.playstate?.position)
        let room = try #require(bridge.client.roomPosition(at: 3))
        let delays = bridge.client.delays
        #expect(abs(position - (room + 0.02 + delays.oneWay - delays.forwardDelay)) < 1e-9 && state.playstate?.paused == false)
    }

    @Test("a wrong password ends the connection with auth-failed")
    func refused() {
        var bridge = SyncplayBridge(configuration: .init(username: "alice", room: "movies", passwordHash: "x", askTLS: false))
        _ = bridge.connected(now: 0)
        let actions = bridge.received([.error("Wrong password supplied")], now: 1)
        #expect(actions.contains { if case .fail(let error) = $0 { error.code == .authFailed } else { false } }, "\(actions)")
    }
}

@Suite("Syncplay: room links")
struct SyncplayAddressTests {
    @Test("syncplay://HOST[:PORT]/ROOM, the port 8999 by default, the room %-decoded")
    func parses() throws {
        #expect(try SyncplayAddress(parsing: "syncplay://syncplay.pl/movie%20night") == SyncplayAddress(host: "syncplay.pl", port: 8999, room: "movie night"))
        #expect(try SyncplayAddress(parsing: "SYNCPLAY://127.0.0.1:8995/r") == SyncplayAddress(host: "127.0.0.1", port: 8995, room: "r"))
        #expect(try SyncplayAddress(parsing: "syncplay://[::1]:9000/+base:0123456789AB") == SyncplayAddress(host: "::1", port: 9000, room: "+base:0123456789AB"))
    }

    @Test("bad links are refused with invalid-configuration, and a managed room's password never rides in one")
    func refuses() {
        for bad in [
            "cowatch://h/r", "syncplay://h", "syncplay://h/", "syncplay://:80/r", "syncplay://h:0/r", "syncplay://h:x/r", "syncplay://h:70000/r",
            "syncplay://h/%zz", "syncplay://h/%0a", "syncplay://h/" + String(repeating: "r", count: 36), "syncplay://h\u{0}/r",
            "syncplay://[::1/r", "syncplay://h/a%E2%80%AEb",
        ] {
            #expect(throws: CowatchError.self, "\(bad)") { try SyncplayAddress(parsing: bad) }
        }
        do {
            _ = try SyncplayAddress(parsing: "syncplay://h/+base:0123456789AB:AB-123-456")
            Issue.record("a password in the link was taken")
        } catch {
            #expect(error.code == .invalidConfiguration && error.message.contains("--syncplay-room-password-file") && !error.message.contains("AB-123-456"))
        }
    }
}
