@testable import CowatchDaemon
import CowatchCore
import CowatchTesting
import Testing

/// `join` and `leave` on their way to the room loop: taken once, waited for on the daemon's clock,
/// and never swallowed by a taker that was cancelled.
@Suite("The room loop's mailbox")
struct LoopMailboxTests {
    @Test("a command posted before or during the wait is taken once; asking twice is asking once")
    func takenOnce() async {
        let mailbox = LoopMailbox()
        let clock = ManualClock()
        mailbox.post(.leave)
        mailbox.post(.leave)
        #expect(await mailbox.take(.leave, until: .infinity, on: clock))
        #expect(!mailbox.takeNow(.leave))
        let waiting = Task { await mailbox.take(.join, until: .infinity, on: clock) }
        mailbox.post(.leave)  // not the one waited for
        mailbox.post(.join)
        #expect(await waiting.value)
        #expect(mailbox.takeNow(.leave))
    }

    @Test("the wait ends when the clock reaches its deadline, with nothing taken")
    func deadline() async {
        let mailbox = LoopMailbox()
        let clock = ManualClock()
        let waiting = Task { await mailbox.take(.join, until: clock.now() + 1, on: clock) }
        while clock.sleeperCount == 0 { await Task.yield() }
        clock.advance(by: 1)
        #expect(await waiting.value == false)
    }

    @Test("a cancelled taker leaves the command for the next one")
    func cancelledTakesNothing() async {
        let mailbox = LoopMailbox()
        let clock = ManualClock()
        let waiting = Task { await mailbox.take(.leave, until: .infinity, on: clock) }
        while clock.sleeperCount == 0 { await Task.yield() }
        waiting.cancel()
        #expect(await waiting.value == false)
        mailbox.post(.leave)
        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await mailbox.take(.leave, until: .infinity, on: clock)
        }
        #expect(await cancelledFirst.value == false)
        #expect(mailbox.takeNow(.leave))
    }
}
