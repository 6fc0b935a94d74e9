import CowatchTestSupport
import Foundation
import Testing

/// For every suite here: each test (each case of a parameterized one) drives real processes —
/// daemons with a player each, servers, the CLI. Two things follow.
///
/// It runs only while one of as many slots as the machine has cores is free (all of them, for a
/// suite marked `.realProcesses(alone: true)`: one that loads the machine on purpose or measures
/// throughput); the others wait, suspended. These tests wait for their processes by suspending (CowatchTestSupport's `pause`,
/// `offPool`, `ProcessExit`), never holding a thread while they do, so nothing else bounds how
/// many start at once: Swift Testing would start every one of them together, dozens of rooms of
/// daemons on two cores, and each would miss its own real-time bounds. (When these tests blocked,
/// the cooperative pool, one thread per core, bounded them the same way, by starving everything
/// else.)
///
/// And its task runs on `RealProcessThreads`, threads of its own, not on Swift's cooperative
/// pool: the in-process suites keep the pool's threads (one per core) busy with computation for
/// minutes at a time, and a test here that needed one of them to resume after each wait would
/// resume seconds late, past the real-time bounds it checks. The task is the same (the test's own,
/// where `#expect` and `Issue.record` find their test); only where its code runs changes.
struct RealProcesses: SuiteTrait, TestTrait, TestScoping {
    /// No other test of this kind runs beside it.
    var alone = false

    var isRecursive: Bool { true }

    /// Once per test case, never for the suite itself: a suite holding a slot while its tests
    /// wait for one would deadlock.
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let slots = alone ? ProcessSlots.shared.count : 1
        await ProcessSlots.shared.acquire(slots)
        do {
            try await withTaskExecutorPreference(RealProcessThreads.shared) { try await function() }
        } catch {
            await ProcessSlots.shared.release(slots)
            throw error
        }
        await ProcessSlots.shared.release(slots)
    }
}

extension Trait where Self == RealProcesses {
    /// See `RealProcesses`.
    static var realProcesses: Self { RealProcesses() }

    /// See `RealProcesses`; `alone`: no other test of this kind runs beside it.
    static func realProcesses(alone: Bool) -> Self { RealProcesses(alone: alone) }
}

/// A counting semaphore whose waiters suspend, first come, first served: a waiter for several
/// slots gets them all at once (so two such waiters never each hold some and wait for the rest),
/// and nobody behind it overtakes it.
actor ProcessSlots {
    static let shared = ProcessSlots(count: max(1, ProcessInfo.processInfo.activeProcessorCount))

    nonisolated let count: Int
    private var free: Int
    private var waiting: [(slots: Int, continuation: CheckedContinuation<Void, Never>)] = []

    init(count: Int) {
        self.count = count
        free = count
    }

    func acquire(_ slots: Int) async {
        let slots = min(slots, count)
        if waiting.isEmpty && free >= slots {
            free -= slots
            return
        }
        await withCheckedContinuation { waiting.append((slots, $0)) }
    }

    func release(_ slots: Int) {
        free += min(slots, count)
        while let first = waiting.first, first.slots <= free {
            free -= first.slots
            waiting.removeFirst().continuation.resume()
        }
    }
}

/// The threads the tests of `RealProcesses` run on: see there.
enum RealProcessThreads {
    /// What runs here only ever suspends to wait (the blocking calls go to `offPool`'s threads),
    /// so two threads serve every test that runs at once.
    static let shared = DedicatedThreads(name: "real-process-tests", threadCount: max(2, ProcessInfo.processInfo.activeProcessorCount))
}
