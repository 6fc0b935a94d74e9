import Testing

@testable import CowatchCore

/// Issue 22, item 1 (the server's half): a name belongs to the session token that last joined
/// under it for as long as the room is remembered; message ids are per token.
@Suite("Names held by tokens while their people step out")
struct HeldNamesTests: SequencerTesting {
    /// alice (1, the owner) and bob (2) in room "r"; bob's connection then ends (a blip, or `leave`).
    func bobSteppedOut(configuration: RoomSequencer.Configuration = .init()) -> (RoomSequencer, bobToken: String) {
        var sequencer = room(["alice", "bob"], configuration: configuration)
        let token = sequencer.joined[2]!.token
        _ = sequencer.disconnected(2, now: 5)
        return (sequencer, token)
    }

    func welcomed(_ outputs: [Output], _ id: Int) -> ServerMessage.Welcome? {
        for case .send(id, .welcome(let welcome)) in outputs { return welcome }
        return nil
    }

    func refusal(_ outputs: [Output], _ id: Int) -> (code: String, message: String)? {
        for case .send(id, .error(let code, let message)) in outputs { return (code, message) }
        return nil
    }

    @Test("bob steps out: a hello as bob without his token, or with another one, is name-taken, and says whose it is")
    func outsiderRefused() {
        var (sequencer, bobToken) = bobSteppedOut()
        let tokens = SessionTokens(key: sequencer.configuration.tokenKey)
        let hellos: [(String, ClientMessage.Hello)] = [
            ("no token", .init(room: "r", name: "bob")),
            // A token the server signed for bob in this room, but not the one that holds the name.
            ("another token for bob", .init(room: "r", name: "bob", token: tokens.issue(room: "r", name: "bob"))),
            // A real token, but for another name (it does not verify for bob).
            ("mallory's token", .init(room: "r", name: "bob", token: tokens.issue(room: "r", name: "mallory"))),
            // bob's token in another room proves nothing here.
            ("a token of another room", .init(room: "r", name: "bob", token: tokens.issue(room: "elsewhere", name: "bob"))),
        ]
        for (index, (what, hello)) in hellos.enumerated() {
            let id = 10 + index
            let outputs = sequencer.enter(.hello(hello), from: id, now: 10)
            let refused = refusal(outputs, id)
            #expect(refused?.code == "name-taken", "\(what): \(outputs)")
            #expect(refused?.message.contains("belongs to someone who was in room r") == true, "\(what): \(String(describing: refused))")
            #expect(outputs.contains(.close(id)))
            #expect(messages(outputs, to: 1).isEmpty, "alice hears nothing of \(what)")
        }
        #expect(sequencer.snapshot()["r"]?.map(\.name) == ["alice"])
        // bob's own token gets it back, with the same token.
        let back = sequencer.enter(.hello(.init(room: "r", name: "bob", token: bobToken)), from: 20, now: 11)
        #expect(welcomed(back, 20)?.name == "bob")
        #expect(welcomed(back, 20)?.token == bobToken)
        #expect(sequencer.snapshot()["r"]?.map(\.name) == ["alice", "bob"])
    }

    @Test("a reconnect after a blip gets the name back, whether or not the server noticed the old link die")
    func reconnectAfterBlip() {
        var sequencer = room(["alice", "bob"])
        let bobToken = sequencer.joined[2]!.token
        // The old link still looks alive: the token replaces it.
        let replaced = sequencer.enter(.hello(.init(room: "r", name: "bob", token: bobToken)), from: 3, now: 5)
        #expect(welcomed(replaced, 3)?.name == "bob")
        #expect(replaced.contains(.close(2)))
        // It dies and is noticed; an impostor comes first; then bob's daemon reconnects.
        _ = sequencer.disconnected(3, now: 6)
        #expect(refusal(sequencer.enter(.hello(.init(room: "r", name: "bob")), from: 4, now: 7), 4)?.code == "name-taken")
        let back = sequencer.enter(.hello(.init(room: "r", name: "bob", token: bobToken)), from: 5, now: 8)
        #expect(welcomed(back, 5)?.name == "bob")
        // A pause is bob's again, as alice sees it.
        let paused = sequencer.received(.action(.init(id: 1, kind: .pause, position: 42)), from: 5, now: 9)
        #expect(messages(paused, to: 1).contains { if case .applied(_, let notice, _, _) = $0 { notice?.actor == "bob" } else { false } })
    }

    @Test("a free name still works without a token; a daemon's first join takes it")
    func freeName() {
        var (sequencer, _) = bobSteppedOut()
        let carol = sequencer.enter(.hello(.init(room: "r", name: "carol")), from: 3, now: 10)
        #expect(welcomed(carol, 3)?.name == "carol")
        // And now carol's is held too.
        _ = sequencer.disconnected(3, now: 11)
        #expect(refusal(sequencer.enter(.hello(.init(room: "r", name: "carol")), from: 4, now: 12), 4)?.code == "name-taken")
    }

    @Test("held while the room is remembered: through its sleep and a restart, forgotten with it and at its end")
    func heldAsLongAsTheRecord() {
        var configuration = RoomSequencer.Configuration()
        configuration.dormantRoomMemory = 100
        var (sequencer, bobToken) = bobSteppedOut(configuration: configuration)
        _ = sequencer.disconnected(1, now: 6)  // the room empties and sleeps
        #expect(refusal(sequencer.enter(.hello(.init(room: "r", name: "bob")), from: 3, now: 10), 3)?.code == "name-taken")
        // A restarted server gets the holds back from the records it saved.
        let saved = sequencer.recordsForSaving(now: 20).mapValues(\.persisted)
        #expect(saved["r"]?.names.holder(of: "bob") == SessionTokens.id(of: bobToken))
        var restarted = RoomSequencer(configuration: configuration, records: saved, now: 30)
        #expect(refusal(restarted.enter(.hello(.init(room: "r", name: "bob")), from: 1, now: 31), 1)?.code == "name-taken")
        #expect(welcomed(restarted.enter(.hello(.init(room: "r", name: "bob", token: bobToken)), from: 2, now: 32), 2)?.name == "bob")
        // Forgotten with the record: after the room slept dormantRoomMemory, the name is free.
        _ = sequencer.tick(now: 200)
        #expect(welcomed(sequencer.enter(.hello(.init(room: "r", name: "bob")), from: 4, now: 200), 4)?.name == "bob")
        // And an end starts a new evening: nobody's name is kept from the one that ended.
        var ended = room(["alice", "bob"])
        _ = ended.disconnected(2, now: 1)
        _ = ended.received(.end(), from: 1, now: 2)
        #expect(welcomed(ended.enter(.hello(.init(room: "r", name: "bob")), from: 3, now: 3), 3)?.name == "bob")
    }

    @Test("holds travel in a cluster's directory record and back, checked")
    func directoryRecord() throws {
        var (sequencer, bobToken) = bobSteppedOut()
        _ = sequencer.tick(now: 6)
        let record = try #require(sequencer.directoryRecord(of: "r"))
        let back = try #require(RoomSequencer.RoomRecord(directoryJSON: record.directoryJSON))
        #expect(back.names == record.names && back.names.holder(of: "bob") == SessionTokens.id(of: bobToken))
        // Hostile entries are left out; past the bound only the newest are kept.
        var json = record.directoryJSON.objectValue!
        json["names"] = .array([
            .array([.string("bad name!"), .string(String(repeating: "a", count: 32))]),
            .array([.string("eve"), .string("not hex")]), .string("x"),
            .array([.string("old"), .string(String(repeating: "b", count: 32))]),
            .array([.string("new"), .string(String(repeating: "c", count: 32))]),
        ])
        let checked = try #require(RoomSequencer.RoomRecord(directoryJSON: .object(json), maxNames: 1))
        #expect(checked.names.holds.map(\.name) == ["new"])
    }

    @Test("bounded: a flood of names pushes out its own holds, never those of people away or in the room")
    func bound() {
        var configuration = RoomSequencer.Configuration()
        configuration.maxHeldNames = 4
        configuration.admission.idleTimeout = 1e9
        var sequencer = RoomSequencer(configuration: configuration)
        func enter(_ name: String, _ id: Int, from address: String, token: String? = nil, now: Double) -> [Output] {
            _ = sequencer.connected(id, address: address, now: now)
            return sequencer.enter(.hello(.init(room: "r", name: name, token: token)), from: id, now: now)
        }
        _ = enter("alice", 1, from: "198.51.100.1", now: 0)
        _ = enter("bob", 2, from: "198.51.100.2", now: 0)
        let bobToken = sequencer.joined[2]!.token
        _ = sequencer.disconnected(2, now: 1)
        // One address joins under 50 names, each leaving again.
        for index in 0..<50 {
            let id = 100 + index
            #expect(welcomed(enter("x\(index)", id, from: "203.0.113.9", now: 2 + Double(index)), id) != nil)
            _ = sequencer.disconnected(id, now: 2 + Double(index))
            #expect(sequencer.records["r"]!.names.count <= 4)
        }
        #expect(sequencer.records["r"]!.names.holds.map(\.name) == ["alice", "bob", "x48", "x49"])
        #expect(refusal(enter("bob", 200, from: "203.0.113.9", now: 60), 200)?.code == "name-taken")
        #expect(welcomed(enter("bob", 201, from: "198.51.100.2", token: bobToken, now: 61), 201)?.name == "bob")

        // Everyone held is in the room: a newcomer gets in, unheld, and nobody's hold goes.
        var full = RoomSequencer(configuration: configuration)
        for (index, name) in ["a", "b", "c", "d", "e"].enumerated() {
            _ = full.connected(index + 1, address: "192.0.2.\(index)", now: 0)
            #expect(welcomed(full.enter(.hello(.init(room: "r", name: name)), from: index + 1, now: 0), index + 1) != nil)
        }
        #expect(full.records["r"]!.names.holds.map(\.name) == ["a", "b", "c", "d"])
    }

    @Test("message ids are per token: recipients tell two sessions under one name apart")
    func messageIDsPerToken() {
        var configuration = RoomSequencer.Configuration()
        configuration.admission.idleTimeout = 1e9
        var sequencer = RoomSequencer(configuration: configuration)
        for (id, name) in [(1, "alice"), (2, "bob")] {
            _ = sequencer.enter(.hello(.init(features: [WireFeature.messages], room: "r", name: name)), from: id, now: 0)
        }
        let bobToken = sequencer.joined[2]!.token
        let sent = sequencer.received(.message(RoomMessage(id: 7, topic: "t", payload: "{}", reliable: true)), from: 2, now: 1)
        guard case .message(let copy)? = messages(sent, to: 1).first else {
            Issue.record("not delivered: \(sent)")
            return
        }
        #expect(copy.from == "bob" && copy.sender == SessionTokens.sender(ofID: SessionTokens.id(of: bobToken)))
        #expect(copy.sender?.utf8.count == 2 * SessionTokens.senderBytes && !bobToken.contains(copy.sender!))
        // The same name under another token (once the room forgot bob's): another sender.
        _ = sequencer.disconnected(2, now: 2)
        _ = sequencer.received(.end(), from: 1, now: 3)
        for (id, name) in [(3, "alice"), (4, "bob")] {
            _ = sequencer.enter(.hello(.init(features: [WireFeature.messages], room: "r", name: name)), from: id, now: 40)
        }
        let again = sequencer.received(.message(RoomMessage(id: 7, topic: "t", payload: "{}", reliable: true)), from: 4, now: 41)
        guard case .message(let other)? = messages(again, to: 3).first else {
            Issue.record("not delivered: \(again)")
            return
        }
        #expect(other.from == "bob" && other.sender != copy.sender)

        // The receiving daemon drops a resent copy from one session, never another session's same id.
        var alice = RoomCoordinator(name: "alice", room: "r", activity: Activity(url: "x"))
        #expect(alice.received(.message(copy), now: 50) == [.message(copy)])
        #expect(alice.received(.message(copy), now: 50).isEmpty)
        #expect(alice.received(.message(other), now: 50) == [.message(other)])
    }

    @Test("a delivered message's sender survives the wire, and a hostile one is a protocol violation")
    func senderOnTheWire() throws {
        let message = ServerMessage.message(RoomMessage(id: 3, topic: "t", payload: "{}", reliable: true, from: "bob", sender: "0123456789abcdef"))
        #expect(try ServerMessage.decode(line: message.encoded()) == message)
        let hostile = #"{"type":"message","id":3,"topic":"t","payload":"{}","reliable":true,"from":"bob","sender":"../../x"}"#
        #expect(throws: CowatchError.self) { try ServerMessage.decode(line: Array(hostile.utf8)) }
    }
}
