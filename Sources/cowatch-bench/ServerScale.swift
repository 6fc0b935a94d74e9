import ArgumentParser
import CowatchClient
import CowatchNet
import CowatchTestSupport
import Foundation

/// The room server under many participants: a plaintext `cowatch-server` (TLS would make the
/// generator, not the server, the bottleneck), loaded by `cowatch-load` processes that behave
/// like daemons; prints the server's CPU and RSS, action fan-out and clock-probe round trips.
struct ServerScale: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server",
        abstract: "Load one cowatch-server with simulated participants (rooms of 10, actions in one room in ten) and print a table.")

    @Option(help: "Participants; a comma-separated list gives one column each (e.g. 1000,2000,5000,10000,20000).")
    var participants = "1000"
    @Option(help: "Participants per room.") var roomsOf = 10
    @Option(help: "Seconds measured per column (after the ramp and 3 s of warm-up).") var duration = 10.0
    @Option(help: "Load-generator processes (each one event loop; fewer make their own read delay part of the round trip).") var processes = 4
    @Option(help: "Connections opened per second.") var connectRate = 1000.0
    @Option(help: "The cowatch-server binary to load (default: the one beside this benchmark).") var server: String?
    @Option(help: "Passed to the server as --max-connections (its participant cap); default 25000.") var cap = 25_000
    @Option(parsing: .upToNextOption, help: "More arguments for the server.") var serverArguments: [String] = []
    @Option(help: ArgumentHelp(
        "Run the load generators' event loops under SCHED_FIFO at this priority: their reads and writes then never wait for time slices shared with the server, as on machines of their own. The server is scheduled as deployed.",
        valueName: "N"))
    var generatorsRealtime: Int32?
    @Option(help: ArgumentHelp("Start the server with --realtime-priority N (its event loops under SCHED_FIFO).", valueName: "N"))
    var serverRealtime: Int32?
    @Option(help: ArgumentHelp(
        "Measure with this many participants (whole rooms, part of the total) in a process of their own under SCHED_FIFO 10, and run the bulk generators under SCHED_IDLE: the server, scheduled as deployed, then shares its cores with nobody who would be elsewhere in use, and the measuring clients never wait for a core, as on machines of their own.",
        valueName: "N"))
    var measuringClients: Int?

    func run() throws {
        let counts = participants.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !counts.isEmpty, counts.allSatisfy({ $0 > 0 }) else { throw ValidationError("--participants: numbers, comma-separated") }
        var columns: [(Int, Column)] = []
        for count in counts {
            log("\(count) participants")
            columns.append((count, try measure(count)))
        }
        print(Self.table(columns))
        print("\nrooms of \(roomsOf), one active room in ten (an action every 2 s), \(Int(duration)) s measured per column, "
            + "\(processes) load processes, plaintext; \(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(loadAverage()); "
            + (measuringClients.map { "latencies from \($0) measuring clients under SCHED_FIFO 10, the bulk generators under SCHED_IDLE; " } ?? "")
            + (measuringClients != nil ? "" : "generators' event loops " + (generatorsRealtime.map { "under SCHED_FIFO \($0)" } ?? "under the ordinary scheduler (sharing time slices with the server)") + ", ")
            + "server's " + (serverRealtime.map { "under SCHED_FIFO \($0)" } ?? "under the ordinary scheduler"))
    }

    struct Column {
        var cpu = 0.0
        var rss = 0
        var result = ServerLoad.Result()
        /// Times the server's event loops left real-time scheduling (its log says so).
        var stepDowns = 0
    }

    func measure(_ count: Int) throws -> Column {
        let state = NSTemporaryDirectory() + "cowatch-scale-\(getpid())-\(count)"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let process = try ServerProcess(
            extraArguments: ["--no-tls", "--max-connections", "\(cap)", "--max-rooms", "\(max(1000, 2 * count / roomsOf))",
                "--max-connections-per-address", "64"] + (serverRealtime.map { ["--realtime-priority", "\($0)"] } ?? []) + serverArguments,
            stateDirectory: state, executable: server)
        defer { process.terminate() }
        var load = ServerLoad(participants: count)
        load.roomSize = roomsOf
        load.processes = processes
        load.duration = duration
        load.connectRate = connectRate
        load.realtimePriority = generatorsRealtime
        if let measuringClients, measuringClients > 0 {
            load.measuring = (measuringClients, 10)
            load.idle = true
        }
        if serverRealtime != nil, !RealtimeScheduling.policies(of: process.process.processIdentifier).contains(SCHED_FIFO) {
            throw ValidationError("--server-realtime: none of the server's threads is under SCHED_FIFO")
        }
        var column = Column()
        let pid = process.process.processIdentifier
        var before = 0.0
        var start = 0.0
        column.result = try load.run(
            port: process.port,
            atStart: {
                start = monotonicNow()
                before = processCPUSeconds(pid: pid) ?? 0
            },
            atEnd: {
                column.cpu = ((processCPUSeconds(pid: pid) ?? before) - before) / (monotonicNow() - start)
                column.rss = ProcessMemory.resident(pid: pid) ?? 0
            })
        let log = (try? String(contentsOfFile: process.logPath, encoding: .utf8)) ?? ""
        column.stepDowns = log.components(separatedBy: "leave real-time scheduling").count - 1
        return column
    }

    static func table(_ columns: [(Int, Column)]) -> String {
        func ms(_ value: Double?) -> String { value.map { format3($0 * 1000) + " ms" } ?? "–" }
        var rows: [(String, (Column) -> String)] = [
            ("server CPU (% of a core)", { format3($0.cpu * 100) }),
            ("server RSS", { "\($0.rss / 1_048_576) MB" }),
            ("load generators' CPU (% of a core)", { format3($0.result.generatorCPU * 100) }),
            ("action fan-out p50", { ms($0.result.fanout.quantile(0.5)) }),
            ("action fan-out p99", { ms($0.result.fanout.quantile(0.99)) }),
            ("probe round trip p50", { ms($0.result.probeRTT.quantile(0.5)) }),
            ("probe round trip p99", { ms($0.result.probeRTT.quantile(0.99)) }),
            ("probe legs p99: up / in server / down", { column in
                [column.result.probeUp, column.result.probeServer, column.result.probeDown]
                    .map { $0.quantile(0.99).map { format3($0 * 1000) } ?? "–" }.joined(separator: " / ") + " ms"
            }),
            ("probe offset error p50 / p99", { column in
                let error = column.result.probeOffsetError
                return [0.5, 0.99].map { error.quantile($0).map { format3($0 * 1000) } ?? "–" }.joined(separator: " / ") + " ms"
            }),
            ("probes answered", { "\($0.result.probesAnswered)/\($0.result.probesSent)" }),
            ("joined (busy, tried again)", { "\($0.result.welcomed) (\($0.result.busyRetries))" }),
            ("event loops stepped down from real-time", { "\($0.stepDowns)" }),
            ("connections lost", { "\($0.result.lost)" }),
        ]
        rows.append(("refused", { column in
            let refused = column.result.refused.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }
            let failed = column.result.connectFailed + column.result.closedInHandshake
            return (refused + (failed > 0 ? ["\(failed) not connected"] : [])).joined(separator: ", ").ifEmpty("0")
        }))
        var lines = ["| participants | " + columns.map { "\($0.0)" }.joined(separator: " | ") + " |"]
        lines.append("|---|" + String(repeating: "---|", count: columns.count))
        for (name, value) in rows {
            lines.append("| \(name) | " + columns.map { value($0.1) }.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }

    func loadAverage() -> String {
        (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
    }
}

extension String {
    func ifEmpty(_ replacement: String) -> String { isEmpty ? replacement : self }
}
