import Foundation

/// A task executor on threads of its own, outside Swift's cooperative pool: jobs run first come,
/// first served on `threadCount` threads that live as long as the process.
///
/// Why: every async test in the package runs on the cooperative pool, one thread per core (two
/// on CI), and a job holds its thread until it suspends. Tests that compute for seconds without
/// suspending (simulations, fuzzing) and the in-process suites with real-time deadlines (a daemon
/// that must join within seconds) cannot share two threads: the deadlines pass while the
/// computation holds them. Run on these threads instead (a test trait with
/// `withTaskExecutorPreference`), the computation competes for the cores through the kernel's
/// scheduler like any other thread, and the pool stays free for the tasks that only wait.
///
/// `niceness` above 0 lowers the threads' scheduling priority (Linux keeps one per thread): work
/// there takes what CPU the rest leaves, and the real-time tests beside it keep their cores.
///
/// Threading: `enqueue` may be called from any thread.
public final class DedicatedThreads: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` is only touched with `condition` locked.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    /// Starts `threadCount` threads named `name-0`, `name-1`, …, at `niceness` (0: the process's).
    public init(name: String, threadCount: Int, niceness: Int32 = 0) {
        for index in 0..<max(1, threadCount) {
            let thread = Thread { [self] in
                #if os(Linux)
                    // `who` 0 with PRIO_PROCESS is the calling thread on Linux.
                    if niceness > 0 { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness) }
                #endif
                work()
            }
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.withLock {
            jobs.append(job)
            condition.signal()
        }
    }

    private func work() {
        while true {
            let job = condition.withLock {
                while jobs.isEmpty { condition.wait() }
                return jobs.removeFirst()
            }
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
