import Testing

@testable import CowatchCore

/// `request-ids` on the server: end, role and kick answered to their sender with the id it gave;
/// a client without the feature gets the answers it always got.
@Suite("Request ids for end, roles and kick (server)")
struct RoomRequestIDsTests: SequencerTesting {
    /// Room "r" on connections 1…n; `modern` names the ones whose hello offers `request-ids`.
    func room(_ names: [String], modern: Set<String>) -> RoomSequencer {
        var configuration = RoomSequencer.Configuration()
        configuration.admission.idleTimeout = 1e9
        var sequencer = RoomSequencer(configuration: configuration)
        for (index, name) in names.enumerated() {
            let features = modern.contains(name) ? [WireFeature.requestIDs] : []
            _ = sequencer.enter(
                .hello(.init(features: features, room: "r", name: name, activity: Activity(url: "/films/night.mkv"))),
                from: index + 1, now: 0)
        }
        return sequencer
    }

    /// The refusals to `id`: (the id they name, the code).
    func refusals(_ outputs: [Output], to id: Int) -> [(Int?, String)] {
        messages(outputs, to: id).compactMap { if case .refused(let named, let code, _) = $0 { (named, code) } else { nil } }
    }

    @Test("the feature is offered to a client that asks for it, and only then")
    func negotiated() {
        var sequencer = RoomSequencer()
        _ = sequencer.connected(1, now: 0)
        _ = sequencer.connected(2, now: 0)
        let modern = sequencer.received(.hello(.init(features: [WireFeature.requestIDs], room: "r", name: "a")), from: 1, now: 0)
        let old = sequencer.received(.hello(.init(features: [WireFeature.roles], room: "r", name: "b")), from: 2, now: 0)
        guard case .send(1, .challenge(let offered)) = modern.first, case .send(2, .challenge(let plain)) = old.first else {
            Issue.record("no challenges: \(modern) \(old)")
            return
        }
        #expect(offered.features == [WireFeature.requestIDs])
        #expect(plain.features == [WireFeature.roles])
    }

    @Test("op and deop with an id: everyone hears the notice, the sender then hears done with its id")
    func roles() {
        var sequencer = room(["alice", "bob", "carol"], modern: ["alice", "bob"])
        let op = Notice(actor: "alice", action: .op, others: ["bob"])
        let named = sequencer.received(.role(name: "bob", role: .operator, id: 5), from: 1, now: 1)
        #expect(messages(named, to: 1) == [.notice(op), .done(id: 5)])
        #expect(messages(named, to: 2) == [.notice(op)])  // the id is the sender's alone
        #expect(messages(named, to: 3) == [.notice(op)])
        let deop = sequencer.received(.role(name: "bob", role: .member, id: 6), from: 1, now: 2)
        #expect(messages(deop, to: 1) == [.notice(Notice(actor: "alice", action: .deop, others: ["bob"])), .done(id: 6)])
    }

    @Test("a refused role request is refused with its id")
    func refusedRoles() {
        var sequencer = room(["alice", "bob", "carol"], modern: ["alice", "bob"])
        let notOwner = sequencer.received(.role(name: "carol", role: .operator, id: 9), from: 2, now: 1)
        #expect(refusals(notOwner, to: 2).map(\.0) == [9])
        #expect(refusals(notOwner, to: 2).map(\.1) == ["not-permitted"])
        #expect(messages(notOwner, to: 1).isEmpty && messages(notOwner, to: 3).isEmpty)
        let nobody = sequencer.received(.role(name: "nobody", role: .operator, id: 10), from: 1, now: 1)
        #expect(refusals(nobody, to: 1).map(\.0) == [10])
        #expect(refusals(nobody, to: 1).map(\.1) == ["invalid-argument"])
        let owner = sequencer.received(.role(name: "alice", role: .member, id: 0), from: 1, now: 1)
        #expect(refusals(owner, to: 1).map(\.0) == [0])
    }

    @Test("kick with an id: the removed one is closed, the sender hears the notice and then done")
    func kick() {
        var sequencer = room(["alice", "bob", "mallory"], modern: ["alice", "bob"])
        let notice = Notice(actor: "alice", action: .kick, others: ["mallory"])
        let kicked = sequencer.received(.kick(name: "mallory", id: 11), from: 1, now: 1)
        #expect(messages(kicked, to: 1) == [.notice(notice), .done(id: 11)])
        #expect(messages(kicked, to: 2) == [.notice(notice)])
        #expect(kicked.contains(.close(3)))
        let refused = sequencer.received(.kick(name: "alice", id: 12), from: 2, now: 2)
        #expect(refusals(refused, to: 2).map(\.0) == [12])
        #expect(refusals(refused, to: 2).map(\.1) == ["not-permitted"])
        let nobody = sequencer.received(.kick(name: "nobody", id: 13), from: 1, now: 2)
        #expect(refusals(nobody, to: 1).map(\.0) == [13])
        #expect(refusals(nobody, to: 1).map(\.1) == ["invalid-argument"])
    }

    @Test("end with an id: the sender hears done before ended; a refused end names its id")
    func end() {
        var sequencer = room(["alice", "bob", "carol"], modern: ["alice", "bob"])
        let refused = sequencer.received(.end(id: 4), from: 2, now: 1)
        #expect(refusals(refused, to: 2).map(\.0) == [4])
        #expect(refusals(refused, to: 2).map(\.1) == ["not-permitted"])
        let ended = sequencer.received(.end(id: 3), from: 1, now: 2)
        #expect(messages(ended, to: 1) == [.done(id: 3), .ended(by: "alice")])
        #expect(messages(ended, to: 2) == [.ended(by: "alice")])
        #expect(messages(ended, to: 3) == [.ended(by: "alice")])
        // The sender's answers come before its connection closes.
        let closing = ended.firstIndex(of: .close(1))
        #expect(closing != nil && closing! > ended.firstIndex(of: .send(1, .done(id: 3)))!)
    }

    @Test("a client without the feature gets today's answers, even if it sends ids")
    func oldClient() {
        var sequencer = room(["alice", "bob", "carol"], modern: [])
        let op = Notice(actor: "alice", action: .op, others: ["bob"])
        #expect(messages(sequencer.received(.role(name: "bob", role: .operator), from: 1, now: 1), to: 1) == [.notice(op)])
        // An id it was never offered changes nothing: no done, no id in a refusal.
        let deop = Notice(actor: "alice", action: .deop, others: ["bob"])
        #expect(messages(sequencer.received(.role(name: "bob", role: .member, id: 7), from: 1, now: 2), to: 1) == [.notice(deop)])
        let refused = sequencer.received(.kick(name: "nobody", id: 8), from: 1, now: 2)
        #expect(refusals(refused, to: 1).map(\.0) == [nil])
        #expect(refusals(sequencer.received(.end(), from: 3, now: 3), to: 3).map(\.0) == [nil])
        let kicked = sequencer.received(.kick(name: "carol"), from: 1, now: 3)
        #expect(messages(kicked, to: 1) == [.notice(Notice(actor: "alice", action: .kick, others: ["carol"]))])
        let ended = sequencer.received(.end(id: 9), from: 1, now: 4)
        #expect(messages(ended, to: 1) == [.ended(by: "alice")])
    }

    @Test("a modern and an old client in one room: each hears the answers it speaks")
    func mixedRoom() {
        var sequencer = room(["alice", "bob", "carol"], modern: ["bob"])
        _ = sequencer.received(.role(name: "bob", role: .operator), from: 1, now: 1)
        let byBob = sequencer.received(.kick(name: "carol", id: 21), from: 2, now: 2)
        let notice = Notice(actor: "bob", action: .kick, others: ["carol"])
        #expect(messages(byBob, to: 2) == [.notice(notice), .done(id: 21)])
        #expect(messages(byBob, to: 1) == [.notice(notice)])
    }

    @Test("an id out of bounds is a protocol violation: the connection is closed with that code")
    func hostileIDs() {
        for line in [
            #"{"type":"kick","name":"bob","id":2147483648}"#, #"{"type":"end","id":-1}"#,
            #"{"type":"role","name":"bob","role":"operator","id":0.5}"#,
        ] {
            var sequencer = room(["alice", "bob"], modern: ["alice", "bob"])
            let outputs = sequencer.receivedLine(Array(line.utf8), from: 1, now: 1)
            #expect(outputs.contains { if case .send(1, .error(code: "protocol-violation", _)) = $0 { true } else { false } }, "\(line)")
            #expect(outputs.contains(.close(1)), "\(line)")
            #expect(sequencer.snapshot()["r"]?.map(\.name) == ["bob"], "\(line)")
        }
        var sequencer = room(["alice", "bob"], modern: ["alice", "bob"])
        let largest = sequencer.receivedLine(Array(#"{"type":"kick","name":"bob","id":2147483647}"#.utf8), from: 1, now: 1)
        #expect(messages(largest, to: 1).last == .done(id: wireMaxRequestID))
    }
}
