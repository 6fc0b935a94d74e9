import Testing

@testable import CowatchCore

/// The participant's side of end, role and kick: by id with a server that speaks `request-ids`,
/// in order (with tombstones) with one that does not.
@Suite("Request ids for end, roles and kick (participant)")
struct RoomRequestTrackerTests {
    /// Bob, welcomed into room "r" by a server offering `features`.
    func joined(features: [String]) -> RoomCoordinator {
        var coordinator = RoomCoordinator(name: "bob", room: "r", activity: Activity(url: "a.mkv"))
        _ = coordinator.connected(now: 0)
        _ = coordinator.received(.challenge(.init(features: features, nonce: String(repeating: "a", count: 64), access: .open)), now: 0)
        _ = coordinator.received(
            .welcome(.init(name: "bob", room: "r", timeline: .initial(at: 0), participants: [], activity: Activity(url: "a.mkv"))),
            now: 0)
        return coordinator
    }

    func sent(_ actions: [RoomCoordinator.Action]) -> ClientMessage? {
        for case .send(let message) in actions { return message }
        return nil
    }

    func settled(_ actions: [RoomCoordinator.Action]) -> [String] {
        actions.compactMap { action in
            switch action {
            case .actionApplied(let id): "\(id) done"
            case .actionRefused(let id, let error): "\(id) \(error.code.rawValue)"
            default: nil
            }
        }
    }

    @Test("with request-ids: each request carries its id, and two answered out of order each settle their own")
    func byID() {
        var coordinator = joined(features: [WireFeature.requestIDs])
        let kick = coordinator.ask(.kick(name: "mallory"))
        let op = coordinator.ask(.role(name: "carol", role: .operator))
        #expect(kick.id != op.id)
        #expect(sent(kick.actions) == .kick(name: "mallory", id: kick.id))
        #expect(sent(op.actions) == .role(name: "carol", role: .operator, id: op.id))
        // The op is answered first, the kick refused after: each gets its own answer.
        let opNotice = Notice(actor: "bob", action: .op, others: ["carol"])
        #expect(settled(coordinator.received(.notice(opNotice), now: 1)).isEmpty)  // a notice names no request
        #expect(settled(coordinator.received(.done(id: op.id), now: 1)) == ["\(op.id) done"])
        let refusal = ServerMessage.refused(actionID: kick.id, code: "not-permitted", message: "no")
        #expect(settled(coordinator.received(refusal, now: 1)) == ["\(kick.id) not-permitted"])
        // Answers that name nothing waiting settle nothing.
        #expect(settled(coordinator.received(.done(id: op.id), now: 2)).isEmpty)
        #expect(coordinator.received(.refused(actionID: nil, code: "not-permitted", message: "?"), now: 2)
            == [.refused(CowatchError(.notPermitted, "?"))])
    }

    @Test("with request-ids: a late notice of ours never settles a newer request")
    func noticesIgnoredWithIDs() {
        var coordinator = joined(features: [WireFeature.requestIDs])
        let first = coordinator.ask(.kick(name: "mallory"))
        _ = coordinator.received(.done(id: first.id), now: 1)
        let second = coordinator.ask(.kick(name: "mallory"))
        // The first kick's notice, late: the second kick waits on for its own answer.
        #expect(settled(coordinator.received(.notice(Notice(actor: "bob", action: .kick, others: ["mallory"])), now: 1)).isEmpty)
        #expect(settled(coordinator.received(.done(id: second.id), now: 2)) == ["\(second.id) done"])
    }

    @Test("without request-ids: no ids on the wire; notices and refusals settle requests in the order sent")
    func inOrder() {
        var coordinator = joined(features: [WireFeature.roles])
        let op = coordinator.ask(.role(name: "carol", role: .operator))
        let kick = coordinator.ask(.kick(name: "mallory"))
        let deop = coordinator.ask(.role(name: "dave", role: .member))
        #expect(sent(op.actions) == .role(name: "carol", role: .operator))
        #expect(sent(kick.actions) == .kick(name: "mallory"))
        // The kick's notice settles the kick, though the op was sent first.
        let kicked = coordinator.received(.notice(Notice(actor: "bob", action: .kick, others: ["mallory"])), now: 1)
        #expect(settled(kicked) == ["\(kick.id) done"])
        #expect(kicked.first == .notice(Notice(actor: "bob", action: .kick, others: ["mallory"])))
        // Someone else's op of carol is not our answer.
        #expect(settled(coordinator.received(.notice(Notice(actor: "alice", action: .op, others: ["carol"])), now: 1)).isEmpty)
        // A refusal without an id settles the oldest open request: the op.
        let refused = coordinator.received(.refused(actionID: nil, code: "not-permitted", message: "no"), now: 2)
        #expect(settled(refused) == ["\(op.id) not-permitted"])
        #expect(settled(coordinator.received(.notice(Notice(actor: "bob", action: .deop, others: ["dave"])), now: 3)) == ["\(deop.id) done"])
    }

    @Test("without request-ids: a request whose caller gave up stays as a tombstone, so its late answer settles no newer one")
    func tombstones() {
        var coordinator = joined(features: [])
        let early = coordinator.ask(.role(name: "carol", role: .operator))
        // The daemon stopped waiting for `early` (a timeout); then asks again.
        let later = coordinator.ask(.role(name: "dave", role: .operator))
        // The late refusal is `early`'s: the daemon, no longer waiting for it, drops it.
        #expect(settled(coordinator.received(.refused(actionID: nil, code: "not-permitted", message: "no"), now: 5)) == ["\(early.id) not-permitted"])
        #expect(settled(coordinator.received(.refused(actionID: nil, code: "invalid-argument", message: "no"), now: 5)) == ["\(later.id) invalid-argument"])
    }

    @Test("ended settles every end, whoever ended the room; a new connection forgets what the last one left open")
    func endedAndReset() {
        for features in [[WireFeature.requestIDs], []] {
            var coordinator = joined(features: features)
            let end = coordinator.ask(.end)
            #expect(sent(end.actions) == .end(id: features.isEmpty ? nil : end.id))
            let kick = coordinator.ask(.kick(name: "mallory"))
            let ended = coordinator.received(.ended(by: "alice"), now: 1)
            #expect(ended.first == .ended(by: "alice"))
            #expect(settled(ended) == ["\(end.id) done"])
            // The kick is gone with the connection: the next one's answers cannot be its.
            _ = coordinator.connected(now: 2)
            #expect(settled(coordinator.received(.refused(actionID: features.isEmpty ? nil : kick.id, code: "x", message: ""), now: 2)).isEmpty)
        }
    }

    @Test("before the welcome, and past the cap of waiting requests, a request is refused at once")
    func refusedAtOnce() {
        var fresh = RoomCoordinator(name: "bob", room: "r", activity: Activity(url: "a.mkv"))
        let early = fresh.ask(.end)
        #expect(settled(early.actions) == ["\(early.id) not-in-room"])
        var coordinator = joined(features: [WireFeature.requestIDs])
        var ids: Set<Int> = []
        for _ in 0..<RoomRequestTracker.capacity {
            let request = coordinator.ask(.kick(name: "mallory"))
            #expect(sent(request.actions) != nil)
            ids.insert(request.id)
        }
        #expect(ids.count == RoomRequestTracker.capacity)
        let over = coordinator.ask(.kick(name: "mallory"))
        #expect(settled(over.actions) == ["\(over.id) rate-limited"])
        // One answered makes room for the next.
        _ = coordinator.received(.done(id: ids.first!), now: 1)
        #expect(sent(coordinator.ask(.end).actions) != nil)
    }

    @Test("request ids stay within what a server accepts, and never repeat an action's")
    func idSpace() {
        var coordinator = joined(features: [WireFeature.requestIDs])
        let action = coordinator.request(.pause, position: 1, now: 1)
        let kick = coordinator.ask(.kick(name: "mallory"))
        #expect(kick.id != action.id)
        #expect((0...wireMaxRequestID).contains(kick.id))
    }
}
