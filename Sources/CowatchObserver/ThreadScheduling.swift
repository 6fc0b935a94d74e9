import CowatchCore

#if canImport(Glibc)
import Glibc
#endif

/// What Linux says about how a process's threads were scheduled, read from /proc, for telling a
/// player's late frame caused by the machine from one caused by us.
///
/// - `runQueueWait`: seconds each thread has spent runnable but not running (schedstat's second
///   field, kept by the scheduler in nanoseconds): a thread woken on time that waits here for a
///   CPU shows its frame that much late.
/// - `steal`: seconds of CPU the hypervisor gave to others while this VM wanted it (/proc/stat,
///   in ticks of 10 ms, so it only says that some happened, not exactly how much).
///
/// Threading: stateless apart from the pid; any thread. Errors: none; a thread that is gone or a
/// file that cannot be read counts as nothing.
public struct ThreadScheduling {
    public let pid: Int32

    public init(pid: Int32) {
        self.pid = pid
    }

    /// Every thread of the process: id and name (`comm`).
    public func threads() -> [(tid: Int32, name: String)] {
        guard let directory = opendir("/proc/\(pid)/task") else { return [] }
        defer { closedir(directory) }
        var result: [(Int32, String)] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let tid = Int32(name) else { continue }
            let comm = Self.read("/proc/\(pid)/task/\(tid)/comm")?.trimmingSuffix() ?? ""
            result.append((tid, comm))
        }
        return result
    }

    /// Seconds that thread `tid` has waited for a CPU since it started (nil when it is gone).
    public func runQueueWait(tid: Int32) -> Double? {
        guard let text = Self.read("/proc/\(pid)/task/\(tid)/schedstat") else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count >= 2, let nanoseconds = Double(fields[1]) else { return nil }
        return nanoseconds / 1e9
    }

    /// Seconds of steal over all CPUs since boot (/proc/stat's first line, eighth value).
    public static func steal() -> Double {
        guard let text = read("/proc/stat"), let line = text.split(separator: "\n").first else { return 0 }
        let fields = line.split(separator: " ")
        guard fields.count > 8, let ticks = Double(fields[8]) else { return 0 }
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Sets the nice value of every thread the process has now (Linux keeps one per thread;
    /// threads started later inherit their creator's). Lowering it needs root or CAP_SYS_NICE.
    /// Returns how many threads took it.
    @discardableResult
    public func renice(to value: Int32) -> Int {
        threads().filter { setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t($0.tid), value) == 0 }.count
    }

    /// Puts every thread the process has now under SCHED_FIFO at `priority` (needs root or
    /// CAP_SYS_NICE). Returns how many threads took it.
    @discardableResult
    public func makeRealtime(priority: Int32) -> Int {
        var parameters = sched_param(sched_priority: priority)
        return threads().filter { sched_setscheduler($0.tid, SCHED_FIFO, &parameters) == 0 }.count
    }

    /// A small /proc file read in one go (no Foundation: this runs between video frames).
    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }
}

extension String {
    fileprivate func trimmingSuffix() -> String {
        var result = self
        while let last = result.last, last.isWhitespace { result.removeLast() }
        return result
    }
}
