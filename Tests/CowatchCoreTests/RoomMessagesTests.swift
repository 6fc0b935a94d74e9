@testable import CowatchCore
import Testing

@Suite("Chat and messenger: the server's relay and the daemon's side")
struct RoomMessagesTests: SequencerTesting {
    /// Joins `names` (connections 1…n) speaking `features`.
    func room(_ names: [String], features: [String], configuration: RoomSequencer.Configuration = .init()) -> RoomSequencer {
        var configuration = configuration
        configuration.admission.idleTimeout = 1e9
        var sequencer = RoomSequencer(configuration: configuration)
        for (index, name) in names.enumerated() {
            _ = sequencer.enter(
                .hello(.init(features: features, room: "r", name: name, activity: Activity(url: "/films/night.mkv"))),
                from: index + 1, now: 0)
        }
        return sequencer
    }

    @Test("a chat line reaches everyone who speaks chat; the sender's copy carries its id; late joiners get the history")
    func chatLine() {
        var sequencer = room(["alice", "bob"], features: [WireFeature.chat])
        _ = sequencer.enter(.hello(.init(room: "r", name: "old", activity: Activity(url: "x"))), from: 3, now: 0)
        let outputs = sequencer.received(.chat(id: 77, text: "popcorn?"), from: 1, now: 1)
        #expect(messages(outputs, to: 1) == [.chat(ChatLine(from: "alice", text: "popcorn?", id: 77))])
        #expect(messages(outputs, to: 2) == [.chat(ChatLine(from: "alice", text: "popcorn?"))])
        #expect(messages(outputs, to: 3).isEmpty)  // an older daemon hears nothing it cannot read
        #expect(outputs.allSatisfy { if case .sendMessage(_, _, true) = $0 { true } else { false } })

        let late = sequencer.enter(
            .hello(.init(features: [WireFeature.chat], room: "r", name: "carol", activity: Activity(url: "x"))), from: 4, now: 2)
        let toCarol = messages(late, to: 4)
        guard case .welcome = toCarol.first else {
            Issue.record("no welcome first: \(toCarol)")
            return
        }
        #expect(toCarol.dropFirst().first == .chat(ChatLine(from: "alice", text: "popcorn?", history: true)))
    }

    @Test("the history keeps the last lines only, and goes with the room")
    func history() {
        var configuration = RoomSequencer.Configuration()
        configuration.chatHistory = 3
        configuration.admission.chatBurst = 100
        var sequencer = room(["alice"], features: [WireFeature.chat], configuration: configuration)
        for index in 0..<5 { _ = sequencer.received(.chat(id: index, text: "line \(index)"), from: 1, now: 1) }
        let late = sequencer.enter(
            .hello(.init(features: [WireFeature.chat], room: "r", name: "bob", activity: Activity(url: "x"))), from: 2, now: 2)
        let lines = messages(late, to: 2).compactMap { if case .chat(let line) = $0 { line.text } else { nil } }
        #expect(lines == ["line 2", "line 3", "line 4"])
        _ = sequencer.disconnected(1, now: 3)
        _ = sequencer.disconnected(2, now: 3)
        let again = sequencer.enter(
            .hello(.init(features: [WireFeature.chat], room: "r", name: "carol", activity: Activity(url: "x"))), from: 3, now: 4)
        #expect(!messages(again, to: 3).contains { if case .chat = $0 { true } else { false } })
    }

    @Test("--no-chat: the feature is not offered, and a chat line gets unsupported; the connection lives")
    func noChat() {
        var configuration = RoomSequencer.Configuration()
        configuration.chat = false
        configuration.admission.idleTimeout = 1e9
        var sequencer = RoomSequencer(configuration: configuration)
        _ = sequencer.connected(1, now: 0)
        let greeting = sequencer.received(
            .hello(.init(features: [WireFeature.chat, WireFeature.messages], room: "r", name: "a", activity: Activity(url: "x"))),
            from: 1, now: 0)
        guard case .send(1, .challenge(let challenge)) = greeting.first else {
            Issue.record("no challenge")
            return
        }
        #expect(challenge.features == [WireFeature.messages])
        _ = sequencer.received(.auth(.init()), from: 1, now: 0)
        #expect(messages(sequencer.received(.chat(id: 1, text: "hi"), from: 1, now: 1), to: 1) == [.unsupported(type: "chat")])
        #expect(sequencer.joined[1] != nil)
    }

    @Test("chat is budgeted per participant: five, then one a second; the sixth is refused to its sender alone")
    func chatBudget() {
        var sequencer = room(["alice", "bob"], features: [WireFeature.chat])
        for index in 0..<5 {
            #expect(messages(sequencer.received(.chat(id: index, text: "x"), from: 1, now: 1), to: 2).count == 1)
        }
        let sixth = sequencer.received(.chat(id: 5, text: "x"), from: 1, now: 1)
        #expect(messages(sixth, to: 2).isEmpty)
        guard case .refused(5, "rate-limited", _)? = messages(sixth, to: 1).first else {
            Issue.record("not refused: \(sixth)")
            return
        }
        #expect(messages(sequencer.received(.chat(id: 6, text: "x"), from: 1, now: 2.1), to: 2).count == 1)
    }

    @Test("a message to some reaches only them, untouched; a reliable one is acknowledged with who got it")
    func messageToSome() {
        var sequencer = room(["alice", "bob", "carol"], features: [WireFeature.messages])
        let payload = "}{ not json at all, and the server does not care"
        let outputs = sequencer.received(
            .message(RoomMessage(id: 9, topic: "note", payload: payload, reliable: true, to: ["carol", "nobody"])), from: 1, now: 1)
        #expect(messages(outputs, to: 2).isEmpty)
        let alice = SessionTokens.sender(ofID: SessionTokens.id(of: sequencer.joined[1]!.token))
        #expect(
            messages(outputs, to: 3) == [.message(RoomMessage(id: 9, topic: "note", payload: payload, reliable: true, from: "alice", sender: alice))])
        // The acknowledgement waits for carol's copy to be written (DeliveryTrackerTests).
        #expect(messages(outputs, to: 1).isEmpty)
        #expect(outputs.last == .acknowledgeWhenWritten(.init(sender: 1, messageID: 9, recipients: [(3, "carol")])))
    }

    @Test("unreliable messages are droppable, unacknowledged, and silently dropped over budget; reliable ones are refused")
    func unreliable() {
        var configuration = RoomSequencer.Configuration()
        configuration.admission.messageBurst = 2
        configuration.admission.messageRate = 1
        var sequencer = room(["alice", "bob"], features: [WireFeature.messages], configuration: configuration)
        let first = sequencer.received(.message(RoomMessage(id: 1, topic: "cursor", payload: "[1,2]", reliable: false)), from: 1, now: 1)
        let alice = SessionTokens.sender(ofID: SessionTokens.id(of: sequencer.joined[1]!.token))
        #expect(first == [.sendMessage(2, .message(RoomMessage(id: 1, topic: "cursor", payload: "[1,2]", reliable: false, from: "alice", sender: alice)), reliable: false)])
        _ = sequencer.received(.message(RoomMessage(id: 2, topic: "cursor", payload: "[1,3]", reliable: false)), from: 1, now: 1)
        #expect(sequencer.received(.message(RoomMessage(id: 3, topic: "cursor", payload: "[1,4]", reliable: false)), from: 1, now: 1).isEmpty)
        let reliable = sequencer.received(.message(RoomMessage(id: 4, topic: "state", payload: "{}", reliable: true)), from: 1, now: 1)
        guard case .refused(4, "rate-limited", _)? = messages(reliable, to: 1).first else {
            Issue.record("not refused: \(reliable)")
            return
        }
        #expect(messages(reliable, to: 2).isEmpty)
        // A payload's bytes count too: 2 MiB a burst by default.
        var bytes = room(["alice", "bob"], features: [WireFeature.messages])
        let big = String(repeating: "x", count: RoomMessage.maxPayloadBytes)
        var delivered = 0
        for index in 0..<40 {
            let out = bytes.received(.message(RoomMessage(id: index, topic: "blob", payload: big, reliable: false)), from: 1, now: 1)
            delivered += messages(out, to: 2).count
        }
        #expect(delivered == 32)
    }

    @Test("the daemon resends unacknowledged reliable messages after a reconnect and drops copies it already delivered")
    func resendAndDuplicates() throws {
        var coordinator = RoomCoordinator(name: "alice", room: "r", activity: Activity(url: "x"))
        _ = coordinator.connected(now: 0)
        _ = coordinator.received(.challenge(.init(protocolVersion: 3, features: [WireFeature.messages], nonce: String(repeating: "ab", count: 32), access: .open)), now: 0)
        let welcome = ServerMessage.Welcome(
            name: "alice", room: "r", timeline: .initial(at: 0), participants: [], activity: Activity(url: "x"))
        _ = coordinator.received(.welcome(welcome), now: 0)
        let first = try coordinator.send(topic: "state", payload: "{\"n\":1}", reliable: true, to: nil, now: 1)
        let second = try coordinator.send(topic: "state", payload: "{\"n\":2}", reliable: true, to: nil, now: 1)
        _ = try coordinator.send(topic: "cursor", payload: "[0,0]", reliable: false, to: nil, now: 1)
        #expect(coordinator.received(.messageAck(id: first.id, delivered: ["bob"]), now: 2) == [.messageDelivered(id: first.id, to: ["bob"])])
        // The link drops before the second is acknowledged; the next session sends it again, alone.
        _ = coordinator.connected(now: 3)
        _ = coordinator.received(.challenge(.init(protocolVersion: 3, features: [WireFeature.messages], nonce: String(repeating: "cd", count: 32), access: .open)), now: 3)
        let resent = coordinator.received(.welcome(welcome), now: 3).compactMap { action -> RoomMessage? in
            if case .send(.message(let message)) = action { message } else { nil }
        }
        #expect(resent.map(\.id) == [second.id])

        let copy = RoomMessage(id: 42, topic: "state", payload: "{}", reliable: true, from: "bob")
        #expect(coordinator.received(.message(copy), now: 4) == [.message(copy)])
        #expect(coordinator.received(.message(copy), now: 4).isEmpty)
        var other = copy
        other.from = "carol"
        #expect(coordinator.received(.message(other), now: 4) == [.message(other)])
    }

    @Test("after a reconnect queued messages wait for the others we were with, up to a grace")
    func resendWaitsForPeers() throws {
        func rejoin(_ coordinator: inout RoomCoordinator, participants: [String], now: Double) -> [RoomCoordinator.Action] {
            _ = coordinator.connected(now: now)
            _ = coordinator.received(.challenge(.init(protocolVersion: 3, features: [WireFeature.messages], nonce: String(repeating: "ab", count: 32), access: .open)), now: now)
            let welcome = ServerMessage.Welcome(
                name: "alice", room: "r", timeline: .initial(at: 0), participants: participants.map(Self.participant),
                activity: Activity(url: "x"))
            return coordinator.received(.welcome(welcome), now: now)
        }
        var coordinator = RoomCoordinator(name: "alice", room: "r", activity: Activity(url: "x"))
        _ = rejoin(&coordinator, participants: ["alice", "bob"], now: 0)
        let first = try coordinator.send(topic: "state", payload: "{}", reliable: true, to: nil, now: 1)
        // The server restarts; we are back before bob.
        _ = coordinator.connected(now: 2)
        let early = try coordinator.send(topic: "state", payload: "{}", reliable: true, to: nil, now: 2.1)
        #expect(early.actions.isEmpty, "nothing goes on a link not yet welcomed")
        _ = coordinator.received(.challenge(.init(protocolVersion: 3, features: [WireFeature.messages], nonce: String(repeating: "cd", count: 32), access: .open)), now: 2.2)
        let welcome = ServerMessage.Welcome(
            name: "alice", room: "r", timeline: .initial(at: 0), participants: [Self.participant("alice")], activity: Activity(url: "x"))
        #expect(Self.sent(coordinator.received(.welcome(welcome), now: 2.2)).isEmpty)
        #expect(Self.sent(coordinator.tick(now: 3, sample: nil)).isEmpty)
        let back = coordinator.received(.participants(["alice", "bob"].map(Self.participant)), now: 3.5)
        #expect(Self.sent(back) == [first.id, early.id])

        // Someone who does not come back holds them for the grace only.
        _ = coordinator.connected(now: 10)
        let third = try coordinator.send(topic: "state", payload: "{}", reliable: true, to: nil, now: 10)
        _ = coordinator.received(.challenge(.init(protocolVersion: 3, features: [WireFeature.messages], nonce: String(repeating: "ef", count: 32), access: .open)), now: 10)
        #expect(Self.sent(coordinator.received(.welcome(welcome), now: 10)).isEmpty)
        #expect(Self.sent(coordinator.tick(now: 10 + RoomCoordinator.peersReturnGrace - 0.1, sample: nil)).isEmpty)
        #expect(Self.sent(coordinator.tick(now: 10 + RoomCoordinator.peersReturnGrace, sample: nil)).contains(third.id))
    }

    static func participant(_ name: String) -> ParticipantInfo {
        ParticipantInfo(name: name, state: "joined", status: .init(), role: .member)
    }

    /// The ids of the reliable messages sent by `actions`.
    static func sent(_ actions: [RoomCoordinator.Action]) -> [Int] {
        actions.compactMap { action -> Int? in
            if case .send(.message(let message)) = action, message.reliable { message.id } else { nil }
        }
    }

    @Test("without the server's chat feature the daemon refuses a chat line at once")
    func chatUnsupported() {
        var coordinator = RoomCoordinator(name: "alice", room: "r", activity: Activity(url: "x"))
        #expect(throws: CowatchError(.unsupported, "")) { try coordinator.chat("hi", now: 0) }
    }
}
