import Testing

@testable import CowatchCore

@Suite("Roles, managed rooms and what a participant may make others do")
struct RoomRolesTests: SequencerTesting {
    func refusal(_ outputs: [Output], to id: Int) -> String? {
        for case .send(id, .refused(_, let code, _)) in outputs { return code }
        return nil
    }

    @Test("in a managed room members watch; the owner's operators control playback")
    func managed() {
        var configuration = RoomSequencer.Configuration()
        configuration.managed = true
        var sequencer = room(["alice", "bob"], configuration: configuration)
        let denied = sequencer.received(.action(.init(id: 1, kind: .pause, position: 3)), from: 2, now: 1)
        #expect(refusal(denied, to: 2) == "not-permitted")
        #expect(messages(denied, to: 1).isEmpty)  // nobody else hears of it
        #expect(sequencer.timeline(of: "r")?.seq == 0)
        // Only the owner names operators.
        #expect(refusal(sequencer.received(.role(name: "bob", role: .operator), from: 2, now: 2), to: 2) == "not-permitted")
        let named = sequencer.received(.role(name: "bob", role: .operator), from: 1, now: 2)
        #expect(messages(named, to: 2) == [.notice(Notice(actor: "alice", action: .op, others: ["bob"]))])
        #expect(applied(sequencer.received(.action(.init(id: 2, kind: .play)), from: 2, now: 3), to: 1).count == 1)
        _ = sequencer.received(.role(name: "bob", role: .member), from: 1, now: 4)
        #expect(refusal(sequencer.received(.action(.init(id: 3, kind: .pause, position: 3)), from: 2, now: 5), to: 2) == "not-permitted")
        #expect(sequencer.snapshot()["r"]?.map(\.role) == [.owner, .member])
    }

    @Test("end needs the owner or an operator, unless the room has no secret and its owner left")
    func endPermission() {
        var sequencer = room(["alice", "bob", "carol"])
        #expect(refusal(sequencer.received(.end(), from: 2, now: 1), to: 2) == "not-permitted")
        #expect(sequencer.snapshot()["r"]?.count == 3)
        _ = sequencer.disconnected(1, now: 2)
        let ended = sequencer.received(.end(), from: 2, now: 3)
        #expect(messages(ended, to: 3) == [.ended(by: "bob")])
    }

    @Test("kick: owners and operators remove members; the kicked stay out for a while")
    func kick() {
        var configuration = RoomSequencer.Configuration()
        configuration.kickCooldown = 60
        var sequencer = room(["alice", "bob", "mallory"], configuration: configuration)
        let malloryToken = sequencer.joined[3]!.token
        #expect(refusal(sequencer.received(.kick(name: "bob"), from: 3, now: 1), to: 3) == "not-permitted")
        _ = sequencer.received(.role(name: "bob", role: .operator), from: 1, now: 1)
        let kicked = sequencer.received(.kick(name: "mallory"), from: 2, now: 2)
        #expect(kicked.contains(.close(3)))
        #expect(kicked.contains { if case .send(3, .error(code: "kicked", _)) = $0 { true } else { false } })
        #expect(messages(kicked, to: 1) == [.notice(Notice(actor: "bob", action: .kick, others: ["mallory"]))])
        #expect(sequencer.snapshot()["r"]?.map(\.name) == ["alice", "bob"])
        // An operator cannot remove the owner, nor another operator.
        #expect(refusal(sequencer.received(.kick(name: "alice"), from: 2, now: 3), to: 2) == "not-permitted")
        // Mallory comes back at once with her session: she hears she was removed, and for how long.
        let again = sequencer.enter(.hello(.init(room: "r", name: "mallory", token: malloryToken)), from: 4, now: 10)
        #expect(messages(again, to: 4) == [.error(code: "kicked", message: "you were removed from room r; try again in 52 s")])
        // Her name stays out too (the room knows it as the one removed), without a word of "you were removed".
        let name = sequencer.enter(.hello(.init(room: "r", name: "mallory")), from: 5, now: 10)
        guard case .error(code: "name-taken", let message) = messages(name, to: 5).first else {
            Issue.record("the kicked name got in: \(name)")
            return
        }
        #expect(message.contains("the name mallory was removed from room r") && message.contains("52 s") && !message.contains("you were"))
        // Once the cool-down is over, she is back.
        let later = sequencer.enter(.hello(.init(room: "r", name: "mallory", token: malloryToken)), from: 6, now: 63)
        guard case .welcome = messages(later, to: 6).first else {
            Issue.record("not let back after the cool-down: \(later)")
            return
        }
    }

    @Test("a reserved room (cowatchd --host) is created only by its host, with the token its server gave it")
    func reservedRoom() {
        var configuration = RoomSequencer.Configuration()
        let token = SessionTokens(key: configuration.tokenKey).issue(room: "night", name: "alice")
        configuration.reservedRooms = ["night": token]
        configuration.onlyReservedRooms = true
        var sequencer = RoomSequencer(configuration: configuration)
        // Another token of alice's (valid under the key) is not the reserved one.
        let other = SessionTokens(key: configuration.tokenKey).issue(room: "night", name: "alice")
        for (id, hello) in [
            (1, ClientMessage.Hello(room: "night", name: "mallory")), (2, .init(room: "night", name: "alice")),
            (7, .init(room: "night", name: "alice", token: other)),
        ] {
            let early = sequencer.enter(.hello(hello), from: id, now: 0)
            #expect(early.contains { if case .send(id, .error(code: "server-busy", _)) = $0 { true } else { false } })
        }
        // Other rooms are not served at all.
        let elsewhere = sequencer.enter(.hello(.init(room: "mine", name: "mallory")), from: 8, now: 0)
        #expect(elsewhere.contains { if case .send(8, .error(code: "room-full", _)) = $0 { true } else { false } })
        let host = sequencer.enter(.hello(.init(room: "night", name: "alice", token: token)), from: 3, now: 1)
        guard case .welcome(let welcome) = messages(host, to: 3).first else {
            Issue.record("the host could not open its room: \(host)")
            return
        }
        #expect(welcome.role == .owner && welcome.token == token)
        guard case .welcome = messages(sequencer.enter(.hello(.init(room: "night", name: "bob")), from: 4, now: 2), to: 4).first else {
            Issue.record("a guest could not join once the host was in")
            return
        }
    }

    @Test("a kick keeps out the one removed, not the address: others behind it (a household's NAT) get in")
    func kickSharedAddress() {
        var sequencer = room(["alice", "bob"])  // both on the same address in these tests
        let token = sequencer.joined[1]!.token
        _ = sequencer.received(.kick(name: "bob"), from: 1, now: 1)
        _ = sequencer.disconnected(1, now: 2)  // alice's link drops
        let stranger = sequencer.enter(.hello(.init(room: "r", name: "carol")), from: 5, now: 3)
        guard case .welcome = messages(stranger, to: 5).first else {
            Issue.record("someone else behind bob's address was kept out: \(stranger)")
            return
        }
        let owner = sequencer.enter(.hello(.init(room: "r", name: "alice", token: token)), from: 6, now: 3)
        guard case .welcome(let welcome) = messages(owner, to: 6).first else {
            Issue.record("the owner was kept out by her own kick: \(owner)")
            return
        }
        #expect(welcome.role == .owner)
        #expect(sequencer.snapshot()["r"]?.map(\.name).sorted() == ["alice", "carol"])
    }

    @Test("end forgets the room's kicks: the owner, and everyone, may start the evening again at once")
    func endForgetsKicks() {
        var sequencer = room(["alice", "bob", "carol"])
        let (aliceToken, bobToken) = (sequencer.joined[1]!.token, sequencer.joined[2]!.token)
        _ = sequencer.received(.kick(name: "bob"), from: 1, now: 1)
        _ = sequencer.received(.end(), from: 1, now: 2)
        _ = sequencer.disconnected(3, now: 2)
        let owner = sequencer.enter(.hello(.init(room: "r", name: "alice", token: aliceToken, activity: Activity(url: "x"))), from: 10, now: 3)
        guard case .welcome(let welcome) = messages(owner, to: 10).first else {
            Issue.record("the owner could not start the room again after end: \(owner)")
            return
        }
        #expect(welcome.role == .owner)
        let bob = sequencer.enter(.hello(.init(room: "r", name: "bob", token: bobToken)), from: 11, now: 3)
        guard case .welcome = messages(bob, to: 11).first else {
            Issue.record("a kick outlived the end of the room: \(bob)")
            return
        }
    }

    @Test("roles belong to tokens: nobody takes the owner's or an operator's name, even while they are away")
    func rolesBoundToTokens() {
        var sequencer = room(["alice", "bob", "carol"])
        let aliceToken = sequencer.joined[1]!.token
        _ = sequencer.received(.role(name: "bob", role: .operator), from: 1, now: 1)
        let bobToken = sequencer.joined[2]!.token
        // Naming someone who is not here is refused: the role is bound to the token they hold now.
        #expect(refusal(sequencer.received(.role(name: "nobody", role: .operator), from: 1, now: 1), to: 1) == "invalid-argument")
        _ = sequencer.disconnected(1, now: 2)
        _ = sequencer.disconnected(2, now: 2)
        // Mallory takes their names while they are gone (with or without a token of her own).
        let forged = SessionTokens(key: sequencer.configuration.tokenKey).issue(room: "r", name: "alice")
        for (id, name, token) in [(10, "alice", nil), (11, "bob", nil), (12, "alice", forged)] as [(Int, String, String?)] {
            let squat = sequencer.enter(.hello(.init(room: "r", name: name, token: token)), from: id, now: 3)
            #expect(squat.contains { if case .send(id, .error(code: "name-taken", _)) = $0 { true } else { false } }, "\(name)")
        }
        // They come back with their own tokens, and their roles.
        for (id, name, token, role) in [(20, "alice", aliceToken, Role.owner), (21, "bob", bobToken, .operator)] {
            let back = sequencer.enter(.hello(.init(room: "r", name: name, token: token)), from: id, now: 4)
            guard case .welcome(let welcome) = messages(back, to: id).first else {
                Issue.record("\(name) could not come back: \(back)")
                continue
            }
            #expect(welcome.role == role && welcome.token == token)
        }
    }

    @Test("a room that slept without a secret: a stranger cannot own it, give it a secret, or pose its media as a switch")
    func dormantOpenRoom() throws {
        var sequencer = room(["alice"])
        _ = sequencer.disconnected(1, now: 1)
        #expect(sequencer.records["r"]?.dormantSince == 1)
        let verifier = RoomVerifier(salt: String(repeating: "1", count: 32), key: String(repeating: "2", count: 64))
        let fake = Activity(id: 9, url: "/home/alice/secret.mkv", openedBy: "alice")
        let outputs = sequencer.enter(
            .hello(.init(room: "r", name: "mallory", activity: fake)), from: 5, now: 2, auth: .init(create: verifier))
        guard case .welcome(let welcome) = messages(outputs, to: 5).first else {
            Issue.record("no welcome: \(outputs)")
            return
        }
        #expect(welcome.role == .member && welcome.proof == nil)
        #expect(sequencer.records["r"]?.verifier == nil && sequencer.records["r"]?.owner == "alice")
        // A brand-new room's first media is its creator's own: never a switch by someone else.
        var fresh = RoomSequencer()
        let created = fresh.enter(.hello(.init(room: "s", name: "mallory", activity: fake)), from: 1, now: 0)
        guard case .welcome(let first) = messages(created, to: 1).first else {
            Issue.record("no welcome for the creator: \(created)")
            return
        }
        #expect(first.activity.id == 0 && first.activity.openedBy == nil)
    }

    @Test("a reconnecting client answers the new connection's challenge; a challenge after the welcome is refused")
    func challengesPerConnection() {
        var coordinator = RoomCoordinator(name: "bob", room: "r", activity: Activity(url: "a.mkv"))
        let challenge = ServerMessage.challenge(.init(nonce: String(repeating: "a", count: 64), access: .open))
        let welcome = ServerMessage.welcome(.init(name: "bob", room: "r", timeline: .initial(at: 0), participants: [], activity: Activity(url: "a.mkv")))
        for _ in 0..<2 {
            _ = coordinator.connected(now: 0)
            #expect(coordinator.received(challenge, now: 0) == [.send(.auth(.init()))])
            _ = coordinator.received(welcome, now: 0)
        }
        #expect(coordinator.received(challenge, now: 1) == [.failed(CowatchError(.protocolViolation, ""))])
    }

    @Test("a client with a secret refuses a room that turns out to have none")
    func downgrade() {
        var coordinator = RoomCoordinator(name: "bob", room: "r", activity: Activity(url: "a.mkv"), secret: "our long secret")
        _ = coordinator.connected(now: 0)
        let actions = coordinator.received(.challenge(.init(nonce: String(repeating: "a", count: 64), access: .open)), now: 0)
        #expect(actions == [.failed(CowatchError(.authFailed, ""))])
    }

    @Test("room records are capped: the oldest dormant ones go first, and one address cannot fill them")
    func recordCaps() {
        var configuration = RoomSequencer.Configuration()
        configuration.maxRecords = 4
        configuration.maxRecordsPerAddress = 3
        configuration.admission.idleTimeout = 1e9
        var sequencer = RoomSequencer(configuration: configuration)
        var id = 1
        func create(_ room: String, from address: String, at now: Double) -> [Output] {
            id += 1
            _ = sequencer.connected(id, address: address, now: now)
            let outputs = sequencer.enter(.hello(.init(room: room, name: "n\(id)")), from: id, now: now)
            _ = sequencer.disconnected(id, now: now + 0.5)
            return outputs
        }
        for (index, room) in ["a", "b", "c"].enumerated() { _ = create(room, from: "churner", at: Double(index)) }
        let fourth = create("d", from: "churner", at: 4)
        #expect(fourth.contains { if case .send(_, .error(code: "server-busy", _)) = $0 { true } else { false } })
        _ = create("e", from: "friend", at: 5)
        _ = create("f", from: "friend", at: 6)  // over the total: the oldest dormant record ("a") goes
        #expect(sequencer.records.count == 4 && sequencer.records["a"] == nil && sequencer.records["f"] != nil)
    }

    @Test("a room opens network URLs only: never a local path or file:")
    func openURLs() {
        var sequencer = room(["alice", "bob"])
        for url in ["/etc/passwd", "film.mkv", "file:///home/bob/film.mkv", "FILE:///x", "av://lavfi:sine", "edl://a;b", "://x"] {
            let outputs = sequencer.received(.action(.init(id: 1, kind: .open, activity: Activity(url: url))), from: 2, now: 1)
            #expect(refusal(outputs, to: 2) == "not-permitted", "\(url)")
        }
        let https = sequencer.received(.action(.init(id: 2, kind: .open, activity: Activity(url: "https://example.org/a.mkv"))), from: 2, now: 1)
        #expect(applied(https, to: 1).count == 1)
        let badFallback = sequencer.received(
            .action(.init(id: 3, kind: .open, activity: Activity(url: "https://example.org/b.mkv", fallbackURL: "/tmp/b.mkv"))), from: 2, now: 9)
        #expect(refusal(badFallback, to: 2) == "not-permitted")
    }

    @Test("an action that arrives after its sender gave up is dropped")
    func deadlines() {
        var sequencer = room(["alice", "bob"])
        let late = sequencer.received(.action(.init(id: 1, kind: .seek, position: 0, deadline: 10)), from: 2, now: 20)
        #expect(refusal(late, to: 2) == "expired")
        #expect(messages(late, to: 1).isEmpty)
        let inTime = sequencer.received(.action(.init(id: 2, kind: .seek, position: 0, deadline: 21)), from: 2, now: 20.5)
        #expect(applied(inTime, to: 1).count == 1)
    }

    @Test("a peer that negotiated action deadlines must send them")
    func deadlineRequired() {
        var sequencer = RoomSequencer()
        _ = sequencer.enter(.hello(.init(features: [WireFeature.actionDeadline], room: "r", name: "a")), from: 1, now: 0)
        let bare = sequencer.received(.action(.init(id: 1, kind: .pause, position: 1)), from: 1, now: 1)
        #expect(refusal(bare, to: 1) == "expired")
        let dated = sequencer.received(.action(.init(id: 2, kind: .pause, position: 1, deadline: 4)), from: 1, now: 1)
        #expect(applied(dated, to: 1).count == 1)
    }

    @Test("20 seeks a second: five go through, the rest are refused and reach nobody")
    func seekFlood() {
        var sequencer = room(["alice", "griefer"])
        _ = sequencer.received(.action(.init(id: 0, kind: .play)), from: 1, now: 0)
        var applies = 0
        var refused = 0
        for index in 0..<60 {
            let now = 1 + Double(index) * 0.05
            let outputs = sequencer.received(.action(.init(id: index + 1, kind: .seek, position: 10, from: 0)), from: 2, now: now)
            applies += applied(outputs, to: 1).count
            if refusal(outputs, to: 2) == "rate-limited" { refused += 1 }
        }
        // 3 s of 20/s: the burst of 5 and about one a second.
        #expect(applies <= 8 && applies >= 5)
        #expect(refused == 60 - applies)
    }

    @Test("re-joining to claim buffering again and again cannot keep the group held")
    func stallChurn() {
        var sequencer = room(["alice", "bob"])
        _ = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 0)
        var held = 0.0
        var now = 10.0
        var id = 100
        // A stranger joins every 2 s (new name each time, same address) and says it is buffering.
        while now < 130 {
            _ = sequencer.enter(.hello(.init(room: "r", name: "s\(id)")), from: id, now: now)
            _ = sequencer.received(.status(.init(stall: .buffering)), from: id, now: now + 0.1)
            for step in 1...19 {
                let t = now + Double(step) * 0.1
                _ = sequencer.tick(now: t)
                if sequencer.timeline(of: "r")?.playing == false { held += 0.1 }
            }
            _ = sequencer.disconnected(id, now: now + 2)
            id += 1
            now += 2
        }
        // Newcomers' stalls never hold the playing group.
        #expect(held < 1)
    }

    @Test("an unknown message type gets unsupported; the connection lives")
    func unknownTypes() {
        var sequencer = room(["alice"])
        #expect(sequencer.received(.unknown(type: "chat"), from: 1, now: 1) == [.send(1, .unsupported(type: "chat"))])
        #expect(sequencer.received(.unsupported(type: "whatever"), from: 1, now: 1).isEmpty)
        #expect(sequencer.snapshot()["r"]?.count == 1)
    }

    @Test("versions: the highest common one is chosen; features are intersected")
    func negotiation() {
        var sequencer = RoomSequencer()
        _ = sequencer.connected(1, now: 0)
        let outputs = sequencer.received(.hello(.init(versions: 1...9, features: ["roles", "teleport"], room: "r", name: "a")), from: 1, now: 0)
        guard case .send(1, .challenge(let challenge)) = outputs.first else {
            Issue.record("no challenge: \(outputs)")
            return
        }
        #expect(challenge.protocolVersion == wireProtocolVersion)
        #expect(challenge.features == ["roles"])
        #expect(challenge.access == .new)
    }

    @Test("a handshake that never finishes is closed at the hello deadline")
    func helloTimeout() {
        var sequencer = RoomSequencer()
        _ = sequencer.connected(1, address: "idle", now: 0)
        _ = sequencer.connected(2, address: "idle", now: 0)
        _ = sequencer.received(.hello(.init(room: "r", name: "a")), from: 2, now: 1)
        let expired = sequencer.tick(now: 5)
        #expect(expired.contains(.close(1)) && expired.contains(.close(2)))
        #expect(sequencer.connectionCount == 0)
    }
}
