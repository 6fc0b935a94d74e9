import ArgumentParser
import CowatchClient
import CowatchObserver
import CowatchTestSupport
import Foundation

/// What cowatchd costs on top of the player it embeds: CPU and peak memory of bare `mpv` playing
/// the same film headless for the same time, against cowatchd alone and cowatchd in a room.
struct Cost: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "CPU and peak RSS of cowatchd against bare mpv playing the same file headless (needs the mpv command).")

    @Option(help: "Seconds measured per process (after 2 s of warm-up).") var seconds = 20.0

    func run() throws {
        let media = try TestMedia.audioVideo()
        guard let mpv = ["/usr/bin/mpv", "/usr/local/bin/mpv"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw ValidationError("the mpv command is not installed (apt-get install mpv); it is the baseline")
        }
        log("bare mpv")
        let bare = try measure(launch: {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: mpv)
            process.arguments = ["--no-config", "--vo=null", "--ao=null", "--keep-open=yes", "--af=scaletempo2", "--really-quiet", media]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        })
        log("cowatchd alone")
        var keep: [DaemonProcess] = []  // a DaemonProcess kills its process when released
        let alone = try measure(launch: {
            let daemon = try DaemonProcess(name: "cost", media: media)
            keep.append(daemon)
            return daemon.process
        })
        log("cowatchd in a room of two")
        let room = try DaemonRoom(media: media, room: "cost", listeners: false)
        try room.add("other", waitJoined: false)
        let roomed = try measure(launch: {
            let index = try room.add("roomed", waitJoined: false)
            sleepSeconds(1)
            try room.clients[index].request(.play)
            return room.daemons[index].process
        })
        room.stop()

        print("| process | CPU (% of one core) | peak RSS |")
        print("|---|---|---|")
        for (name, figures) in [("bare mpv", bare), ("cowatchd alone", alone), ("cowatchd in a room", roomed)] {
            print("| \(name) | \(format3(figures.cpu * 100)) % | \(format3(figures.rss / 1_048_576)) MB |")
        }
        print("\nratios to bare mpv: CPU ×\(format(alone.cpu / bare.cpu)) alone, ×\(format(roomed.cpu / bare.cpu)) in a room; RSS ×\(format(alone.rss / bare.rss)), ×\(format(roomed.rss / bare.rss))")
        print("cowatchd over bare mpv: alone +\(format3((alone.cpu - bare.cpu) * 100)) % of a core, +\(format3((alone.rss - bare.rss) / 1_048_576)) MB; "
            + "in a room +\(format3((roomed.cpu - bare.cpu) * 100)) % of a core, +\(format3((roomed.rss - bare.rss) / 1_048_576)) MB "
            + "(\(Int(seconds)) s each, playing headless)")
    }

    /// Starts a process, lets it warm up, and measures its CPU share and peak RSS.
    func measure(launch: () throws -> Process) throws -> (cpu: Double, rss: Double) {
        let process = try launch()
        defer {
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
        sleepSeconds(2)
        let pid = process.processIdentifier
        let start = (cpu: try cpuSeconds(pid), at: monotonicNow())
        sleepSeconds(seconds)
        let end = (cpu: try cpuSeconds(pid), at: monotonicNow())
        return ((end.cpu - start.cpu) / (end.at - start.at), try peakRSS(pid))
    }

    /// utime + stime of a process, from /proc/PID/stat.
    func cpuSeconds(_ pid: Int32) throws -> Double {
        let text = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name (which may contain spaces) start after the last ')'.
        guard let close = text.lastIndex(of: ")") else { throw TestFailure("bad /proc stat") }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is state (field 3); utime is field 14, stime field 15.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
            throw TestFailure("bad /proc stat fields")
        }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// VmHWM (peak resident set), bytes.
    func peakRSS(_ pid: Int32) throws -> Double {
        let text = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { throw TestFailure("no VmHWM") }
        return kilobytes * 1024
    }
}
