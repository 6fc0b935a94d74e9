import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs blocking work (directory walks, file reads) on a thread of its own at the lowest
/// scheduling priority, never on Swift's cooperative threads.
///
/// Each call starts a fresh thread that sets its own nice value to 19 (Linux keeps one per thread)
/// before the work, so the kernel gives it a small share of a contended CPU (weight 15 against
/// 1024 at nice 0) and, under the CFQ/BFQ I/O schedulers, the lowest best-effort I/O priority,
/// which they derive from the nice value: a media scan slows down rather than delaying the
/// player or the room link. The thread ends with the work. A thread a call is cheap next to what
/// it does (a scan, a 128 KiB read), and nothing outlives a scan.
///
/// Threading: any task; the calling task suspends (without holding a cooperative thread) until
/// the work has returned. The work is not cancelled with the task: pass it a flag to check.
enum LowPriorityThread {
    /// The nice value the work runs at.
    static let niceness: Int32 = 19

    /// `body`'s result, computed on a new nice-19 thread named `name` (as `top -H` shows it: at
    /// most 15 bytes).
    static func run<Result: Sendable>(name: String, _ body: @escaping @Sendable () -> Result) async -> Result {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result, Never>) in
            let thread = Thread {
                #if os(Linux)
                    // `who` 0 with PRIO_PROCESS is the calling thread on Linux. A refusal (never for
                    // raising the value) leaves the thread at the process's priority.
                    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
                    nameCallingThread(name)
                #endif
                continuation.resume(returning: body())
            }
            thread.start()
        }
    }

    /// Names the calling thread for `ps -L` and `top -H` (Foundation's `Thread.name` does not
    /// reach the kernel on Linux). Best effort.
    static func nameCallingThread(_ name: String) {
        #if os(Linux)
            let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return }
            defer { close(descriptor) }
            let bytes = Array(name.utf8.prefix(15))
            _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        #endif
    }

    /// The kernel's name of the calling thread (for tests).
    static func currentName() -> String {
        let text = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return text.hasSuffix("\n") ? String(text.dropLast()) : text
    }

    /// The nice value of the calling thread (for tests).
    static func currentNiceness() -> Int32 {
        #if os(Linux)
            return getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        #else
            return 0
        #endif
    }
}
