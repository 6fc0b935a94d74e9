import CowatchCore
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Real-time scheduling for the threads that must answer at once: the room server's event loops,
/// which time clock probes from the moment their bytes are read (chronyd's `-P` does the same for
/// itself).
///
/// Under the ordinary scheduler a waking event loop can wait milliseconds for another task's time
/// slice to end; measured at 10 000 participants on two shared cores, that wait was nearly all of a
/// probe's 3–4 ms round trip p99, while the server's own handling took 10–30 µs. Event loops block
/// again within microseconds, so under SCHED_FIFO they take a core when a read arrives and give it
/// back at once. Only the event loops: the rooms' work (the hub, on Swift's task pool) stays under
/// the ordinary scheduler, so a long job there never holds a probe back. The kernel keeps 5 % of
/// every second for other tasks (`sched_rt_runtime_us`), so a runaway cannot lock the machine up.
public enum RealtimeScheduling {
    /// The priorities SCHED_FIFO accepts on Linux.
    public static let priorities: ClosedRange<Int32> = 1...99

    /// Puts every thread of `group` under SCHED_FIFO at `priority`, waiting until each has switched.
    ///
    /// Threading: any thread but one of `group`'s (it waits on them).
    /// Errors: `invalid-configuration` for a priority outside 1–99; `not-permitted` without
    /// CAP_SYS_NICE and with an RLIMIT_RTPRIO below `priority` (systemd: `LimitRTPRIO=`); `io-error`
    /// for any other refusal.
    public static func enable(priority: Int32, on group: any EventLoopGroup) throws(CowatchError) {
        try check(priority)
        for loop in group.makeIterator() {
            try outcome(priority, (try? loop.submit { setCallingThread(priority) }.wait()) ?? EIO)
        }
    }

    /// The same from async code (the rooms' actor), or with nil back to the ordinary scheduler
    /// (SCHED_OTHER), which needs no permission. Errors as `enable`.
    public static func apply(_ priority: Int32?, on group: any EventLoopGroup) async throws(CowatchError) {
        if let priority { try check(priority) }
        for loop in group.makeIterator() {
            let code: Int32
            do {
                code = try await loop.submit { setCallingThread(priority) }.get()
            } catch {
                code = EIO
            }
            try outcome(priority ?? 0, code)
        }
    }

    private static func check(_ priority: Int32) throws(CowatchError) {
        guard priorities.contains(priority) else {
            throw CowatchError(.invalidConfiguration, "real-time priority must be between 1 and 99, got \(priority)")
        }
    }

    /// 0 or the errno of switching the calling thread.
    private static func setCallingThread(_ priority: Int32?) -> Int32 {
        var parameter = sched_param(sched_priority: priority ?? 0)
        return sched_setscheduler(0, priority == nil ? SCHED_OTHER : SCHED_FIFO, &parameter) == 0 ? 0 : errno
    }

    private static func outcome(_ priority: Int32, _ code: Int32) throws(CowatchError) {
        if code == 0 { return }
        if code == EPERM {
            throw CowatchError(
                .notPermitted,
                "real-time scheduling (SCHED_FIFO \(priority)) needs CAP_SYS_NICE or an RLIMIT_RTPRIO of \(priority) (systemd: LimitRTPRIO=\(priority))")
        }
        throw CowatchError(.ioError, "sched_setscheduler: \(String(cString: strerror(code)))")
    }

    /// The policy of every thread of process `pid`, from `/proc` (SCHED_FIFO is 1), for tests and
    /// the benchmark. Empty when the process is gone.
    public static func policies(of pid: Int32) -> [Int32] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap { pid_t($0) }.map { sched_getscheduler($0) }.filter { $0 >= 0 }
    }
}
