import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// `cowatchd --player-nice` and `--player-realtime`: mpv's threads get the priority, the daemon's
/// own keep theirs.
@Suite("cowatchd --player-nice and --player-realtime", .serialized, .realProcesses)
struct PlayerPriorityTests {
    /// Every thread of `pid`: name and nice value (/proc/PID/task/TID/stat, field 19).
    static func niceValues(pid: Int32) -> [(name: String, nice: Int)] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap { tid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 16, let nice = Int(fields[16]) else { return nil }
            return (String(stat[stat.index(after: open)..<close]), nice)
        }
    }

    func check(nice: Int) async throws {
        let daemon = try await DaemonProcess(name: "nice", media: try await TestMedia.file(.videoOnly), extraArguments: ["--player-nice=\(nice)"])
        defer { daemon.terminateInBackground() }
        // Playing, so the video output and decoders run.
        try await daemon.client().request(.play)
        await pause(0.5)
        let threads = Self.niceValues(pid: daemon.process.processIdentifier)
        let mpv = threads.filter { $0.name.hasPrefix("mpv/") }
        #expect(mpv.contains { $0.name == "mpv/vo" }, "\(threads)")
        #expect(mpv.contains { $0.name == "mpv/mpv core" }, "\(threads)")
        #expect(mpv.allSatisfy { $0.nice == nice }, "\(mpv)")
        // The daemon's own threads (its main thread, NIO's) are left as they were.
        #expect(threads.contains { $0.name == "cowatchd" && $0.nice == 0 }, "\(threads)")
        #expect(threads.filter { $0.name.hasPrefix("NIO") }.allSatisfy { $0.nice == 0 }, "\(threads)")
    }

    @Test("a lower priority than the daemon's is set on every mpv thread")
    func lower() async throws { try await check(nice: 4) }

    @Test("a higher priority, where permitted (root, as CI runs), is set on every mpv thread", .enabled(if: geteuid() == 0, "needs root"))
    func higher() async throws {
        try await check(nice: -6)
    }

    @Test("refused by the system: the daemon says why and does not start (status 1: not a configuration error)")
    func refused() async throws {
        // Without CAP_SYS_NICE (taken away from root too: setpriv drops it from the bounding
        // set), a value below the current one is refused.
        let daemon = try await DaemonProcess(
            name: "nice", media: try await TestMedia.file(.videoOnly), extraArguments: ["--player-nice=-10"], waitUntilReady: false,
            launcher: ["/usr/bin/setpriv", "--bounding-set", "-sys_nice"])
        #expect(await daemon.waitForExit(timeout: 20) == 1)
        #expect(daemon.stderr.contains("player-nice -10 is not permitted"), "\(daemon.stderr)")
    }

    @Test(
        "--player-realtime: the output threads run under SCHED_FIFO at that priority, nothing else does (root, as CI runs)",
        .enabled(if: geteuid() == 0, "needs root"))
    func realtime() async throws {
        let daemon = try await DaemonProcess(name: "rt", media: try await TestMedia.file(.audioVideo), extraArguments: ["--player-realtime", "6"])
        defer { daemon.terminateInBackground() }
        try await daemon.client().request(.play)
        await pause(0.5)
        let pid = daemon.process.processIdentifier
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        var fifo: [String] = []
        for tid in tasks {
            guard let id = Int32(tid), let comm = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/comm", encoding: .utf8) else { continue }
            var parameters = sched_param()
            // The policy without SCHED_RESET_ON_FORK (0x40000000), which the daemon adds.
            let policy = sched_getscheduler(id) & ~0x4000_0000
            if policy == SCHED_FIFO {
                sched_getparam(id, &parameters)
                #expect(parameters.sched_priority == 6)
                fifo.append(comm.trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
        #expect(fifo.contains("mpv/vo"), "\(fifo)")
        #expect(fifo.allSatisfy { $0 == "mpv/vo" || $0 == "mpv/ao" }, "\(fifo)")
    }

    @Test("--player-realtime refused by the system: the daemon says why and does not start")
    func realtimeRefused() async throws {
        let daemon = try await DaemonProcess(
            name: "rt", media: try await TestMedia.file(.videoOnly), extraArguments: ["--player-realtime", "6"], waitUntilReady: false,
            launcher: ["/usr/bin/setpriv", "--bounding-set", "-sys_nice"])
        #expect(await daemon.waitForExit(timeout: 20) == 1)
        #expect(daemon.stderr.contains("player-realtime 6 is not permitted"), "\(daemon.stderr)")
    }
}
