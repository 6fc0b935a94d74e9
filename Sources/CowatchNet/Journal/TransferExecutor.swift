import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// Where attachment transfers do their work: one event-loop thread of their own, running at a
/// lower scheduling priority (nice 19) than the rest of the process.
///
/// A transfer is bulk work (TLS, SHA-256, the disk) with no deadline; the player, the room link
/// and its clock probes have deadlines of a millisecond. On a machine with spare CPU the
/// transfer still runs at full speed; when the CPU is contended (ten players on two cores) the
/// kernel gives it a small share of what a normal thread gets (weight 15 against 1024 at nice 0), so it slows down instead of
/// delaying playback. Transfer connections are made on `loop`, and the transfer functions run
/// their bodies with this as their task executor (`withTaskExecutorPreference`), so the bytes'
/// decryption, hashing and writing all happen on the low-priority thread.
///
/// Threading: `enqueue` may be called from any thread; jobs run one at a time on the loop.
public final class TransferExecutor: TaskExecutor {
    /// The process's transfer thread, started on first use.
    public static let shared = TransferExecutor(niceness: 19)

    /// The event loop transfer connections are made on.
    public let loop: any EventLoop
    private let group: MultiThreadedEventLoopGroup

    /// `niceness` becomes the thread's nice value (Linux schedules threads on their own); a
    /// value the kernel refuses leaves the thread at the process's priority.
    init(niceness: Int32) {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        loop = group.next()
        // The first job on the loop, so it runs before any transfer does.
        loop.execute {
            // Linux keeps a nice value per thread, and `who` 0 is the calling thread.
            #if os(Linux)
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
            #endif
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }

    /// The niceness the transfer thread runs at, as the kernel reports it (for tests).
    public func niceness() async throws -> Int32 {
        try await loop.submit {
            getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        }.get()
    }
}
