import Testing

@testable import CowatchCore

/// Issue 24: a Cowatch daemon's side of Syncplay's protocol, as a machine fed with time.
@Suite("Syncplay: the client machine")
struct SyncplayClientTests {
    static let playing = SyncplayClient.PlayerReading(position: 10, paused: false)

    /// A client that has been welcomed into room "r" as "alice", over TLS.
    static func joined(_ configuration: SyncplayClient.Configuration = .init(username: "alice", room: "r")) -> SyncplayClient {
        var client = SyncplayClient(configuration: configuration)
        _ = client.connected(now: 0)
        _ = client.received([.tls(.accepted)], player: playing, now: 0.01)
        _ = client.received([.hello(SyncplayHello(username: configuration.username, room: configuration.room, realVersion: "1.7.3"))], player: playing, now: 0.02)
        return client
    }

    /// The one State a list of actions sends.
    static func sentState(_ actions: [SyncplayClient.Action]) -> SyncplayState? {
        for case .send(let commands) in actions {
            for case .state(let state) in commands { return state }
        }
        return nil
    }

    static func follows(_ actions: [SyncplayClient.Action]) -> [SyncplayTimeline] {
        actions.compactMap { if case .follow(let timeline) = $0 { timeline } else { nil } }
    }

    static func serverState(
        position: Double, paused: Bool, stamp: Double, echoed: Double? = nil, doSeek: Bool? = nil, setBy: String? = nil,
        ignoring: SyncplayState.Ignoring? = nil
    ) -> [SyncplayCommand] {
        [.state(SyncplayState(
            ping: .init(latencyCalculation: stamp, clientLatencyCalculation: echoed, serverRtt: 0),
            playstate: .init(position: position, paused: paused, doSeek: doSeek, setBy: setBy), ignoring: ignoring))]
    }

    @Test("STARTTLS first; Hello after the handshake; joined: readiness, file and the list")
    func connectOverTLS() {
        var client = SyncplayClient(configuration: .init(username: "alice", room: "r", passwordHash: "abc"))
        #expect(client.connected(now: 0) == [.send([.tls(.send)])])
        _ = client.fileChanged(SyncplayFile(name: "film.mkv", duration: 75, size: 1000))
        let afterTLS = client.received([.tls(.accepted)], player: Self.playing, now: 0.1)
        #expect(afterTLS.first == .startTLS)
        guard case .send(let hello)? = afterTLS.last, case .hello(let sent)? = hello.first else {
            Issue.record("no Hello: \(afterTLS)")
            return
        }
        #expect(sent.username == "alice" && sent.room == "r" && sent.passwordHash == "abc" && sent.version == "1.2.255")
        #expect(sent.realVersion.map { $0.split(separator: ".").allSatisfy { Int($0) != nil } } == true, "realversion must be numeric")
        #expect(sent.features.chat == true && sent.features.readiness == true && sent.features.sharedPlaylists == true)
        let welcomed = client.received(
            [.hello(SyncplayHello(username: "alice_", room: "r", realVersion: "1.6.9", motd: "hi"))], player: Self.playing, now: 0.2)
        #expect(client.phase == .joined && client.username == "alice_")
        #expect(welcomed.first == .joined(username: "alice_", room: "r", motd: "hi"))
        #expect(welcomed.last == .send([
            .set([.ready(SyncplayReady(isReady: false, manuallyInitiated: false)), .file(SyncplayFile(name: "film.mkv", duration: 75, size: 1000))]),
            .list(nil),
        ]))
    }

    @Test("a server without TLS: plaintext, said; refused when TLS is required; a pre-1.6.3 server's error counts as no")
    func plaintextServers() {
        var loose = SyncplayClient(configuration: .init(username: "a", room: "r"))
        _ = loose.connected(now: 0)
        let actions = loose.received([.tls(.refused)], player: Self.playing, now: 0.1)
        #expect(actions.first == .plaintext && loose.phase == .greeted)

        var old = SyncplayClient(configuration: .init(username: "a", room: "r"))
        _ = old.connected(now: 0)
        #expect(old.received([.error("Unknown command startTLS")], player: Self.playing, now: 0.1).first == .plaintext)

        var strict = SyncplayClient(configuration: .init(username: "a", room: "r", requireTLS: true))
        _ = strict.connected(now: 0)
        guard case .fail(let error)? = strict.received([.tls(.refused)], player: Self.playing, now: 0.1).first else {
            Issue.record("a required TLS was given up")
            return
        }
        #expect(error.code == .tlsFailed && strict.phase == .ended)
    }

    @Test("a refusal before the welcome (a wrong password) ends the session with the server's words")
    func refused() {
        var client = SyncplayClient(configuration: .init(username: "a", room: "r"))
        _ = client.connected(now: 0)
        _ = client.received([.tls(.accepted)], player: Self.playing, now: 0.1)
        let actions = client.received([.error("Wrong password supplied")], player: Self.playing, now: 0.2)
        guard case .fail(let error)? = actions.first else {
            Issue.record("\(actions)")
            return
        }
        #expect(error.code == .authFailed && error.message.contains("Wrong password supplied"))
    }

    @Test("every server State is answered: ours stamp new, where the player is; its stamp echoed once we measured a round trip")
    func answersEveryState() throws {
        var client = Self.joined()
        let actions = client.received(Self.serverState(position: 10, paused: false, stamp: 1000), player: Self.playing, now: 5)
        let answer = try #require(Self.sentState(actions))
        // The first answer echoes nothing: the server measures (and adds) nothing we cannot predict.
        #expect(answer.ping?.latencyCalculation == nil && answer.ping?.clientLatencyCalculation == 5)
        #expect(answer.playstate == .init(position: 10, paused: false))
        #expect(answer.ignoring == nil)
        let second = client.received(Self.serverState(position: 11, paused: false, stamp: 1001, echoed: 5.998), player: Self.playing, now: 6)
        #expect(try #require(Self.sentState(second)).ping?.latencyCalculation == 1001)
    }

    @Test("while the file opens, the room's position is reported, never 0")
    func loadingReportsTheRoom() throws {
        var client = Self.joined()
        _ = client.received(Self.serverState(position: 600, paused: false, stamp: 1000), player: Self.playing, now: 5)
        let opening = SyncplayClient.PlayerReading(position: nil, paused: true)
        let answer = try #require(Self.sentState(client.received(Self.serverState(position: 601, paused: false, stamp: 1001), player: opening, now: 6)))
        let reported = try #require(answer.playstate)
        #expect(abs(reported.position - 601) < 0.05 && reported.paused == false, "\(reported)")
    }

    @Test("our change: counter sent with it; no playstate followed or sent until the server echoes it")
    func clientIgnoringOnTheFly() throws {
        var client = Self.joined()
        _ = client.received(Self.serverState(position: 10, paused: false, stamp: 1000), player: Self.playing, now: 5)
        let change = client.localChange(paused: true, position: 10.5, seek: false, now: 5.5)
        let sent = try #require(Self.sentState(change))
        #expect(sent.playstate == .init(position: 10.5, paused: true) && sent.ignoring == .init(client: 1))
        // A State from before the server saw our change: neither followed nor answered with a playstate.
        let stale = client.received(Self.serverState(position: 11, paused: false, stamp: 1001), player: Self.playing, now: 6)
        #expect(Self.follows(stale).isEmpty)
        let staleAnswer = try #require(Self.sentState(stale))
        #expect(staleAnswer.playstate == nil && staleAnswer.ignoring == .init(client: 1))
        // The echo: followed again (and our own pause is no notice).
        let paused = SyncplayClient.PlayerReading(position: 10.5, paused: true)
        let echoed = client.received(
            Self.serverState(position: 10.5, paused: true, stamp: 1002, setBy: "alice", ignoring: .init(client: 1)), player: paused, now: 7)
        #expect(!echoed.contains { if case .notice = $0 { true } else { false } })
        let answer = try #require(Self.sentState(echoed))
        #expect(answer.playstate == .init(position: 10.5, paused: true) && answer.ignoring == nil)
    }

    @Test("a forced state: followed, announced, echoed once; it cancels our own pending change")
    func serverIgnoringOnTheFly() throws {
        var client = Self.joined()
        _ = client.received(Self.serverState(position: 10, paused: false, stamp: 1000), player: Self.playing, now: 5)
        _ = client.localChange(paused: false, position: 30, seek: true, now: 5.2)
        let forced = client.received(
            Self.serverState(position: 12, paused: true, stamp: 1001, setBy: "bob", ignoring: .init(server: 4)), player: Self.playing, now: 6)
        #expect(Self.follows(forced).map(\.paused) == [true])
        #expect(forced.contains(.notice(.paused("bob", at: 12))))
        let answer = try #require(Self.sentState(forced))
        #expect(answer.ignoring == .init(server: 4), "echoed once, and our change is forgotten")
        #expect(answer.playstate != nil)
        let next = try #require(Self.sentState(client.received(Self.serverState(position: 12, paused: true, stamp: 1002), player: Self.playing, now: 7)))
        #expect(next.ignoring == nil)
    }

    @Test("the room's timeline moves for a pause, a play and a seek, not for the position's jitter")
    func timelineMovesOnlyForChanges() {
        var client = Self.joined()
        // The first State places the timeline.
        #expect(Self.follows(client.received(Self.serverState(position: 100, paused: false, stamp: 1000), player: Self.playing, now: 50)).count == 1)
        // Jitter of the room's "slowest member" position: tens of milliseconds either way.
        for (index, jitter) in [0.04, -0.07, 0.02, -0.03, 0.09].enumerated() {
            let now = 51 + Double(index)
            let actions = client.received(Self.serverState(position: 100 + (now - 50) + jitter, paused: false, stamp: 1000 + (now - 50)), player: Self.playing, now: now)
            #expect(Self.follows(actions).isEmpty, "moved for \(jitter)")
        }
        // A seek by bob: followed and announced.
        let seek = client.received(Self.serverState(position: 400, paused: false, stamp: 1006, doSeek: true, setBy: "bob"), player: Self.playing, now: 56)
        #expect(Self.follows(seek).count == 1 && seek.contains(.notice(.sought("bob", to: 400))))
        // A jump past the threshold without doSeek (a member who skipped): followed, not announced.
        let jump = client.received(Self.serverState(position: 470, paused: false, stamp: 1007), player: Self.playing, now: 57)
        #expect(Self.follows(jump).count == 1 && !jump.contains { if case .notice = $0 { true } else { false } })
        // Play after a pause: announced with where.
        _ = client.received(Self.serverState(position: 471, paused: true, stamp: 1008, setBy: "bob"), player: Self.playing, now: 58)
        let play = client.received(Self.serverState(position: 471, paused: false, stamp: 1009, setBy: "carol"), player: Self.playing, now: 59)
        #expect(play.contains(.notice(.played("carol", at: 471))))
    }

    @Test("the server's clock is estimated from the echoed stamps: the room's position lands on our clock")
    func serverClockPlacesPositions() throws {
        var client = Self.joined()
        // The server's clock is ours + 1 000 000 s; 20 ms each way; it answers once a second.
        let offset = 1_000_000.0
        var lastSent = 0.0
        var actions: [SyncplayClient.Action] = []
        for second in 1...20 {
            let serverSend = Double(second) + offset
            let arrival = Double(second) + 0.02
            // Our last stamp arrived 20 ms after we sent it; the server adds the time it held it.
            let echoed = second == 1 ? nil : lastSent + (Double(second) - (lastSent + 0.02))
            // Position: the room started at 0 when the server's clock read `offset`.
            actions = client.received(
                Self.serverState(position: serverSend - offset, paused: false, stamp: serverSend, echoed: echoed), player: Self.playing, now: arrival)
            lastSent = try #require(Self.sentState(actions)?.ping?.clientLatencyCalculation)
            #expect(lastSent == arrival)
        }
        let estimate = try #require(client.serverClock.estimate(atLocal: 20.02))
        #expect(abs(estimate.offset - offset) < 0.001, "offset \(estimate.offset - offset)")
        // Where the room is now, to a millisecond (half a round trip would say the same here;
        // the difference shows on asymmetric, jittery paths).
        let position = try #require(client.roomPosition(at: 20.02))
        #expect(abs(position - 20.02) < 0.03, "position \(position)")
    }

    @Test("chat: one clean line within the server's bound; not before the welcome")
    func chatBounds() throws {
        let client = Self.joined()
        #expect(try client.chat("hello") == [.send([.chat(SyncplayChat(message: "hello"))])])
        for bad in ["", "two\nlines", String(repeating: "a", count: 151), "\u{1b}[2J"] {
            #expect(throws: CowatchError(.invalidArgument, "")) { try client.chat(bad) }
        }
        let early = SyncplayClient(configuration: .init(username: "a", room: "r"))
        #expect(throws: CowatchError(.notInRoom, "")) { try early.chat("hi") }
    }

    @Test("users, readiness, playlists and controllers become notices and actions")
    func settings() {
        var client = Self.joined()
        let joined = client.received([.set([.user(SyncplayUserUpdate(username: "bob", room: "r", event: .joined))])], player: Self.playing, now: 1)
        #expect(joined == [.notice(.joined("bob")), .send([.list(nil)])])
        #expect(client.received([.set([.ready(SyncplayReady(username: "bob", isReady: true))])], player: Self.playing, now: 1) == [.notice(.ready("bob", true))])
        #expect(client.received([.set([.playlistChange(files: ["a.mkv"], user: "bob")])], player: Self.playing, now: 1) == [.playlist(files: ["a.mkv"], by: "bob")])
        #expect(client.received([.set([.playlistIndex(index: 0, user: "bob")])], player: Self.playing, now: 1) == [.playlistIndex(0, by: "bob")])
        #expect(client.received([.set([.controllerAuth(.init(room: "+r:AB", user: "bob", success: false))])], player: Self.playing, now: 1) == [.notice(.controller("bob", false))])
        #expect(client.received([.chat(SyncplayChat(username: "bob", message: "hi"))], player: Self.playing, now: 1) == [.chat(from: "bob", message: "hi")])
    }

    @Test("a server silent for 12.5 s is gone; a bad line ends the session with its reason")
    func silenceAndBadLines() {
        var client = Self.joined()
        _ = client.received(Self.serverState(position: 1, paused: true, stamp: 1), player: Self.playing, now: 1)
        #expect(client.tick(now: 13).isEmpty)
        guard case .fail(let error)? = client.tick(now: 13.6).first else {
            Issue.record("silence was not noticed")
            return
        }
        #expect(error.code == .timeout && client.phase == .ended)

        var other = Self.joined()
        guard case .fail(let bad)? = other.receivedBadLine(CowatchError(.protocolViolation, "x")).first else {
            Issue.record("a bad line was ignored")
            return
        }
        #expect(bad.code == .protocolViolation && other.phase == .ended)
    }
}

extension SyncplayClientTests {
    @Test("the answer to a change it follows says the change, not the player read before it (the server would take a stale pause for ours)")
    func answerAfterFollowSaysTheRoom() throws {
        var client = Self.joined()
        _ = client.received(Self.serverState(position: 0, paused: true, stamp: 1000), player: .init(position: 0, paused: true), now: 5)
        // bob plays: the player, read just before, is still paused at 0.
        let actions = client.received(
            Self.serverState(position: 0, paused: false, stamp: 1001, setBy: "bob", ignoring: .init(server: 1)),
            player: .init(position: 0, paused: true), now: 6)
        let answer = try #require(Self.sentState(actions)?.playstate)
        #expect(answer.paused == false, "a stale pause in the answer pauses the room in bob's name")
        // A seek to 300: the answer says 300, not the old position that would drag the room back.
        let seek = client.received(
            Self.serverState(position: 300, paused: false, stamp: 1002, doSeek: true, setBy: "bob", ignoring: .init(server: 2)),
            player: .init(position: 1, paused: false), now: 7)
        let there = try #require(Self.sentState(seek)?.playstate)
        #expect(abs(there.position - 300) < 0.1, "\(there)")
    }
}

extension SyncplayClientTests {
    @Test("managed room names and passwords as servers check them", arguments: [
        ("+film:ABCDEF123456", "+film:ABCDEF123456", nil), ("+film:ABCDEF123456:AB-123-456", "+film:ABCDEF123456", "AB-123-456"),
        ("film", nil, nil), ("+film:abcdef123456", nil, nil), ("+film:ABCDEF12345", nil, nil), ("+:ABCDEF123456", nil, nil),
        ("+film:ABCDEF123456:ab-123-456", nil, nil), ("+film:ABCDEF123456:AB-1234-56", nil, nil), ("+a:ABCDEF123456:AB-123-456:x", nil, nil),
    ] as [(String, String?, String?)])
    func managedNames(typed: String, room: String?, password: String?) {
        let parsed = SyncplayManagedRoom.parse(typed)
        #expect(parsed?.room == room)
        #expect(parsed?.password == password)
    }

    @Test("new passwords have the servers' shape")
    func newPasswords() {
        var random = SplitMix(seed: 7)
        for _ in 0..<200 { #expect(SyncplayManagedRoom.isPassword(SyncplayManagedRoom.newPassword(using: &random))) }
    }

    @Test("manage: the claim, the server's new room joined and claimed; a room we did not ask for is ignored")
    func manage() throws {
        var client = Self.joined()
        #expect(throws: CowatchError(.invalidArgument, "")) { try client.manage(password: "secret") }
        #expect(try client.manage(password: "AB-123-456") == [.send([.set([.controllerAuth(.init(room: "r", password: "AB-123-456"))])])])
        #expect(client.received([.set([.newControlledRoom(roomName: "+evil:ABCDEF123456", password: "ZZ-000-000")])], player: Self.playing, now: 1).isEmpty)
        let made = client.received([.set([.newControlledRoom(roomName: "+r:ABCDEF123456", password: "AB-123-456")])], player: Self.playing, now: 1)
        #expect(made == [
            .send([.set([.room(name: "+r:ABCDEF123456", password: nil)])]),
            .send([.set([.controllerAuth(.init(room: "+r:ABCDEF123456", password: "AB-123-456"))])]),
            .managedRoomCreated(room: "+r:ABCDEF123456", password: "AB-123-456"),
        ])
        #expect(client.room == "+r:ABCDEF123456" && client.controlPassword == "AB-123-456")
    }

    @Test("manage from a managed room claims its base name (Syncplay's server would check the password against the room itself)")
    func manageFromManagedRoom() throws {
        var client = Self.joined(.init(username: "alice", room: "+film night:ABCDEF123456"))
        #expect(SyncplayManagedRoom.base(of: "+film night:ABCDEF123456") == "film night" && SyncplayManagedRoom.base(of: "film") == "film")
        #expect(try client.manage(password: "CD-000-111") == [.send([.set([.controllerAuth(.init(room: "film night", password: "CD-000-111"))])])])
        // A server that says it has no managed rooms is not asked.
        var features = SyncplayFeatures()
        features.managedRooms = false
        var old = SyncplayClient(configuration: .init(username: "alice", room: "r"))
        _ = old.connected(now: 0)
        _ = old.received([.tls(.accepted)], player: Self.playing, now: 0.01)
        _ = old.received([.hello(SyncplayHello(username: "alice", room: "r", realVersion: "1.7.0", features: features))], player: Self.playing, now: 0.02)
        #expect(throws: CowatchError(.unsupported, "")) { try old.manage(password: "CD-000-111") }
    }

    @Test("the move into the room we made carries our timeline: the new room's forced state (paused at 0) is answered with it as a counted seek, then its echo followed")
    func moveCarriesTheTimeline() throws {
        var client = Self.joined()
        _ = client.received(Self.serverState(position: 100, paused: false, stamp: 1000), player: Self.playing, now: 5)
        _ = try client.manage(password: "AB-123-456")
        let made = client.received([.set([.newControlledRoom(roomName: "+r:ABCDEF123456", password: "AB-123-456")])], player: Self.playing, now: 7)
        #expect(Self.sentState(made) == nil)
        // Syncplay says the new room's state to whoever enters twice, plain then forced: paused at 0.
        let plain = client.received(Self.serverState(position: 0, paused: true, stamp: 1001.9), player: Self.playing, now: 7.005)
        #expect(Self.follows(plain).isEmpty && Self.sentState(plain)?.playstate == nil, "\(plain)")
        let entered = client.received(
            Self.serverState(position: 0, paused: true, stamp: 1002, doSeek: true, ignoring: .init(server: 3)), player: Self.playing, now: 7.01)
        #expect(Self.follows(entered).isEmpty)
        let state = try #require(Self.sentState(entered))
        #expect(state.playstate?.doSeek == true && state.playstate?.paused == false && state.ignoring == .init(server: 3, client: 1))
        #expect(abs((state.playstate?.position ?? 0) - 102.01) < 0.01, "\(String(describing: state.playstate))")
        // A state from before the server read our seek is not followed either.
        #expect(Self.follows(client.received(Self.serverState(position: 0, paused: true, stamp: 1002.1), player: Self.playing, now: 7.1)).isEmpty)
        #expect(client.timeline?.paused == false)
        // The server's echo of our seek: the room plays on from where we were.
        let echo = client.received(
            Self.serverState(position: 102.2, paused: false, stamp: 1002.2, doSeek: true, setBy: "alice", ignoring: .init(server: 4, client: 1)),
            player: Self.playing, now: 7.2)
        #expect(client.timeline?.paused == false && abs((client.roomPosition(at: 7.2) ?? 0) - 102.2) < 0.05, "\(String(describing: client.timeline)) \(echo)")
        // Later states (the clock estimate refining the echo's placement) keep it there.
        for second in 1...3 {
            let now = 7.2 + Double(second)
            _ = client.received(
                Self.serverState(position: 102.2 + Double(second), paused: false, stamp: 1002.2 + Double(second), echoed: now - 0.002, setBy: "alice"),
                player: Self.playing, now: now)
            #expect(abs((client.roomPosition(at: now) ?? 0) - (102.2 + Double(second))) < 0.05, "\(String(describing: client.timeline))")
        }
    }

    @Test("a room typed with its password joins the room (without it) and claims control once welcomed")
    func typedPassword() {
        var client = SyncplayClient(configuration: .init(username: "carol", room: "+r:ABCDEF123456:AB-123-456"))
        _ = client.connected(now: 0)
        let hello = client.received([.tls(.accepted)], player: Self.playing, now: 0.1)
        guard case .send(let commands)? = hello.last, case .hello(let sent)? = commands.first else {
            Issue.record("\(hello)")
            return
        }
        #expect(sent.room == "+r:ABCDEF123456")
        let welcomed = client.received([.hello(SyncplayHello(username: "carol", room: "+r:ABCDEF123456", realVersion: "1.6.9"))], player: Self.playing, now: 0.2)
        guard case .send(let after)? = welcomed.last, case .set(let settings)? = after.first else {
            Issue.record("\(welcomed)")
            return
        }
        #expect(settings.contains(.controllerAuth(.init(room: "+r:ABCDEF123456", password: "AB-123-456"))))
    }
}
