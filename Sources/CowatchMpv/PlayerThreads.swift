import CowatchCore

#if canImport(Glibc)
import Glibc
#endif

/// The threads libmpv runs in this process, and their CPU priority.
///
/// Why: on a busy machine a video frame is shown late when mpv's playloop ("mpv/mpv core") or
/// video output ("mpv/vo") waits for a CPU, and a synced room then sees one player's frame
/// milliseconds off (measured with `cowatch-bench rooms`: every such frame matched such a wait).
/// Linux keeps a nice value per thread and a new thread takes its creator's, so setting it on
/// every "mpv/…" thread once the media is open covers the threads mpv starts later too (a new
/// video or audio output, decoders), and leaves the daemon's own threads alone.
///
/// Threading: any thread. Linux only (reads /proc/self/task).
public enum PlayerThreads {
    /// The ids of this process's threads whose name starts with "mpv/".
    public static func ids() -> [Int32] {
        guard let directory = opendir("/proc/self/task") else { return [] }
        defer { closedir(directory) }
        var result: [Int32] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let tid = Int32(name), threadName(tid)?.hasPrefix("mpv/") == true else { continue }
            result.append(tid)
        }
        return result
    }

    /// Sets the nice value (−20 highest … 19 lowest) of every mpv thread. Returns how many threads
    /// took it.
    ///
    /// Errors: `invalid-configuration` for a value outside −20…19; `not-permitted` when the
    /// system refuses (a value below the current one needs CAP_SYS_NICE or a nice limit:
    /// systemd's `LimitNICE=`, or `nice` in /etc/security/limits.conf); `player-error` when no
    /// mpv thread is found.
    @discardableResult
    public static func setNice(_ value: Int32) throws(CowatchError) -> Int {
        guard (-20...19).contains(value) else {
            throw CowatchError(.invalidConfiguration, "player-nice must be between -20 and 19, got \(value)")
        }
        let threads = ids()
        guard !threads.isEmpty else { throw CowatchError(.playerError, "no mpv threads found to set player-nice on") }
        var done = 0
        for tid in threads {
            if setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(tid), value) == 0 {
                done += 1
            } else if errno == EPERM || errno == EACCES {
                throw CowatchError(
                    .notPermitted,
                    "player-nice \(value) is not permitted here: a nice value below \(currentNice(tid) ?? 0) needs CAP_SYS_NICE or a nice limit (systemd LimitNICE=, or \"nice\" in /etc/security/limits.conf)")
            }
            // ESRCH: the thread ended meanwhile; nothing to do.
        }
        return done
    }

    /// Puts mpv's output threads ("mpv/vo", "mpv/ao": the ones that put each frame on screen and
    /// feed the sound device on time) under SCHED_FIFO at `priority` (1 … 99). Threads they start
    /// (a GPU driver's) do not inherit it (SCHED_RESET_ON_FORK), and the playloop and decoders keep
    /// the ordinary scheduler, so a heavy film cannot take a CPU from everything else. Returns how
    /// many threads took it.
    ///
    /// Errors: `invalid-configuration` outside 1…99; `not-permitted` when the system refuses (it
    /// needs CAP_SYS_NICE or a real-time limit: systemd's `LimitRTPRIO=`, or `rtprio` in
    /// /etc/security/limits.conf); `player-error` when no output thread is found.
    @discardableResult
    public static func setRealtime(priority: Int32) throws(CowatchError) -> Int {
        guard (1...99).contains(priority) else {
            throw CowatchError(.invalidConfiguration, "player-realtime must be between 1 and 99, got \(priority)")
        }
        let outputs = ids().filter { ["mpv/vo", "mpv/ao"].contains(threadName($0)) }
        guard !outputs.isEmpty else { throw CowatchError(.playerError, "no mpv output threads found to set player-realtime on") }
        var parameters = sched_param(sched_priority: priority)
        var done = 0
        for tid in outputs {
            if sched_setscheduler(tid, SCHED_FIFO | resetOnFork, &parameters) == 0 {
                done += 1
            } else if errno == EPERM || errno == EACCES {
                throw CowatchError(
                    .notPermitted,
                    "player-realtime \(priority) is not permitted here: real-time scheduling needs CAP_SYS_NICE or a real-time limit (systemd LimitRTPRIO=, or \"rtprio\" in /etc/security/limits.conf)")
            }
        }
        return done
    }

    /// Linux's SCHED_RESET_ON_FORK (sched.h), which Glibc's module does not export.
    private static let resetOnFork: Int32 = 0x4000_0000

    /// A thread's nice value, from /proc (nil when it is gone).
    public static func currentNice(_ tid: Int32) -> Int32? {
        guard let stat = read("/proc/self/task/\(tid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after the name: state is field 3, so nice (field 19) is the 17th after ")".
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 16 ? Int32(fields[16]) : nil
    }

    static func threadName(_ tid: Int32) -> String? {
        read("/proc/self/task/\(tid)/comm").map { String($0.prefix { $0 != "\n" }) }
    }

    private static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
    }
}
