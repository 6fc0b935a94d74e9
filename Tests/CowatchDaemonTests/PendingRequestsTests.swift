@testable import CowatchDaemon
import CowatchCore
import Testing

/// The daemon's one table of requests waiting for the room server's answer.
@Suite("Pending requests by id")
struct PendingRequestsTests {
    static let timedOut = CowatchError(.timeout, "no answer")

    @Test("two concurrent requests answered out of order each get their own answer")
    func outOfOrder() async {
        let pending = PendingRequests()
        let first = pending.register(1, kind: .kick)
        let second = pending.register(2, kind: .role)
        async let firstOutcome = pending.wait(1, first, timeout: 30, timedOut: Self.timedOut)
        async let secondOutcome = pending.wait(2, second, timeout: 30, timedOut: Self.timedOut)
        // The second is answered first, and refused; then the first is carried out.
        #expect(pending.resolve(2, CowatchError(.notPermitted, "only the owner")) == .role)
        #expect(pending.resolve(1, nil) == .kick)
        #expect(await firstOutcome == nil)
        #expect(await secondOutcome?.code == .notPermitted)
        #expect(pending.count == 0)
    }

    @Test("a timed-out request leaves nothing behind: its late answer settles no later request")
    func timeoutLeavesNoTombstone() async {
        let pending = PendingRequests()
        let early = pending.register(7, kind: .end)
        #expect(await pending.wait(7, early, timeout: 0.01, timedOut: Self.timedOut)?.code == .timeout)
        #expect(!pending.isWaiting(7) && pending.count == 0)
        let later = pending.register(8, kind: .end)
        // The early request's answer comes late: nobody waits for id 7, so it is dropped.
        #expect(pending.resolve(7, CowatchError(.notPermitted, "late")) == nil)
        #expect(pending.isWaiting(8))
        async let outcome = pending.wait(8, later, timeout: 30, timedOut: Self.timedOut)
        #expect(pending.resolve(8, nil) == .end)
        #expect(await outcome == nil)
    }

    @Test("an answer that comes before the wait starts is kept for it")
    func answeredAtOnce() async {
        let pending = PendingRequests()
        let reply = pending.register(3, kind: .action)
        pending.resolve(3, CowatchError(.notInRoom, "refused at once"))
        #expect(await pending.wait(3, reply, timeout: 30, timedOut: Self.timedOut)?.code == .notInRoom)
    }

    @Test("the connection's end fails every waiting request with one error; reliable messages wait on")
    func connectionEnded() async {
        let pending = PendingRequests()
        let requests = [(1, PendingRequests.Kind.action), (2, .end), (3, .role), (4, .kick)].map { id, kind in
            (id, pending.register(id, kind: kind))
        }
        let message = pending.register(5, kind: .message)
        pending.connectionEnded(CowatchError(.notInRoom, "the room connection ended"))
        for (id, reply) in requests {
            #expect(await pending.wait(id, reply, timeout: 30, timedOut: Self.timedOut)?.code == .notInRoom)
        }
        #expect(pending.isWaiting(5) && pending.count == 1)
        pending.resolve(5, nil)
        #expect(await pending.wait(5, message, timeout: 30, timedOut: Self.timedOut) == nil)
    }

    @Test("a request given up on by its client (cancelled) goes too")
    func cancelled() async {
        let pending = PendingRequests()
        let reply = pending.register(9, kind: .kick)
        let waiter = Task { await pending.wait(9, reply, timeout: 30, timedOut: Self.timedOut) }
        waiter.cancel()
        #expect(await waiter.value?.code == .timeout)
        #expect(!pending.isWaiting(9))
    }
}
