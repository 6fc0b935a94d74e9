import CowatchClient
import CowatchCore
import CowatchObserver
import Foundation

/// Simulated participants against a running room server: starts `processes` `cowatch-load`
/// processes (each one event-loop thread, a slice of whole rooms), waits for them, and merges
/// their reports. Used by `cowatch-bench server` and the integration test.
///
/// Threading: one caller; `run` blocks, or (awaited) suspends the task.
public struct ServerLoad {
    public var participants: Int
    public var roomSize = 10
    public var processes = 2
    /// Seconds measured, after everyone connected and a warm-up.
    public var duration = 10.0
    public var warmup = 3.0
    /// Connections opened per second, all processes together.
    public var connectRate = 1000.0
    public var actionInterval = 2.0
    /// SCHED_FIFO priority for the generator processes (`cowatch-load --realtime-priority`), or nil.
    public var realtimePriority: Int32?
    /// Bulk generator processes under SCHED_IDLE (`cowatch-load --idle`).
    public var idle = false
    /// When set, the first `count` participants (whole rooms) run in one more process of their
    /// own, under SCHED_FIFO `priority`, and only they report probe and fan-out latencies: a
    /// few clients that never wait for a core measure the server, as clients on machines of
    /// their own would, while the bulk makes the load.
    public var measuring: (count: Int, priority: Int32)?

    public init(participants: Int) {
        self.participants = participants
    }

    public struct Result: Sendable {
        public var participants = 0
        public var welcomed = 0
        public var lost = 0
        public var closedInHandshake = 0
        public var connectFailed = 0
        /// Connections refused with `server-busy` during the ramp and tried again (as daemons do).
        public var busyRetries = 0
        public var refused: [String: Int] = [:]
        public var probesSent = 0
        public var probesAnswered = 0
        public var probeRTT = LatencyHistogram()
        public var fanout = LatencyHistogram()
        /// A probe's legs (t2 − t1, t3 − t2, t4 − t3) and |offset error| = |(up − down) / 2|,
        /// the bias a participant's clock estimate would take from that one exchange.
        public var probeUp = LatencyHistogram()
        public var probeServer = LatencyHistogram()
        public var probeDown = LatencyHistogram()
        public var probeOffsetError = LatencyHistogram()
        /// The measuring window on CLOCK_MONOTONIC.
        public var windowStart = 0.0
        public var windowEnd = 0.0
        /// CPU the load processes used during the window, in cores (to tell when the generator,
        /// not the server, is the limit).
        public var generatorCPU = 0.0

        public init() {}

        mutating func merge(_ json: JSONValue, latencies: Bool = true) {
            func count(_ key: String) -> Int { Int(json[key]?.numberValue ?? 0) }
            participants += count("participants")
            welcomed += count("welcomed")
            lost += count("lost")
            closedInHandshake += count("closed_in_handshake")
            connectFailed += count("connect_failed")
            busyRetries += count("busy_retries")
            probesSent += count("probes_sent")
            probesAnswered += count("probes_answered")
            for (code, value) in json["refused"]?.objectValue ?? [:] { refused[code, default: 0] += Int(value.numberValue ?? 0) }
            // Latencies only from the measuring clients when there are some.
            guard latencies else { return }
            probeRTT.merge(LatencyHistogram(json: json["probe_rtt"]))
            fanout.merge(LatencyHistogram(json: json["fanout"]))
            probeUp.merge(LatencyHistogram(json: json["probe_up"]))
            probeServer.merge(LatencyHistogram(json: json["probe_server"]))
            probeDown.merge(LatencyHistogram(json: json["probe_down"]))
            probeOffsetError.merge(LatencyHistogram(json: json["probe_offset_error"]))
        }
    }

    /// Runs the load against 127.0.0.1:`port`, blocking. `atStart` and `atEnd` are called when the
    /// measuring window opens and closes, to sample the server.
    /// Throws `TestFailure` when a load process fails.
    public func run(port: Int, atStart: () -> Void = {}, atEnd: () -> Void = {}) throws -> Result {
        let load = try launch(port: port)
        sleepSeconds(load.windowStart - monotonicNow())
        let generatorBefore = load.generatorSeconds()
        atStart()
        sleepSeconds(load.windowStart + duration - monotonicNow())
        let generatorAfter = load.generatorSeconds()
        atEnd()
        return try collect(load, generatorCPU: (generatorAfter - generatorBefore) / duration)
    }

    /// The same, suspended (not blocked) while the load runs; the reports are read on a thread of
    /// their own (`offPool`).
    public func run(port: Int, atStart: () -> Void = {}, atEnd: () -> Void = {}) async throws -> Result {
        let load = try launch(port: port)
        await pause(load.windowStart - monotonicNow())
        let generatorBefore = load.generatorSeconds()
        atStart()
        await pause(load.windowStart + duration - monotonicNow())
        let generatorAfter = load.generatorSeconds()
        atEnd()
        return try await offPool { try collect(load, generatorCPU: (generatorAfter - generatorBefore) / duration) }
    }

    /// The load processes of one run and its measuring window.
    private struct Launched {
        var processes: [(process: Process, output: Pipe, measuring: Bool)]
        var windowStart: Double

        func generatorSeconds() -> Double { processes.compactMap { processCPUSeconds(pid: $0.process.processIdentifier) }.reduce(0, +) }
    }

    /// Starts the `cowatch-load` processes.
    private func launch(port: Int) throws -> Launched {
        let binary = try Binaries.path("cowatch-load")
        let ramp = Double(participants) / connectRate
        let windowStart = monotonicNow() + 0.5 + ramp + warmup
        // Whole rooms per process; the measuring process (if any) takes the first ones.
        let measuringRooms = measuring.map { min(($0.count + roomSize - 1) / roomSize, (participants - 1) / roomSize) } ?? 0
        let rooms = (participants + roomSize - 1) / roomSize - measuringRooms
        let perProcess = (rooms + processes - 1) / processes
        var slices: [(first: Int, count: Int, measuring: Bool)] = []
        if measuringRooms > 0 { slices.append((0, measuringRooms * roomSize, true)) }
        for slot in 0..<processes {
            let firstRoom = measuringRooms + slot * perProcess
            let count = min(participants, (firstRoom + perProcess) * roomSize) - firstRoom * roomSize
            if count > 0 { slices.append((firstRoom * roomSize, count, false)) }
        }
        var launched: [(process: Process, output: Pipe, measuring: Bool)] = []
        for slice in slices {
            let (first, count) = (slice.first, slice.count)
            let scheduling: [String] =
                slice.measuring
                ? ["--realtime-priority", "\(measuring!.priority)"]
                : (realtimePriority.map { ["--realtime-priority", "\($0)"] } ?? []) + (idle ? ["--idle"] : [])
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = [
                "--port", "\(port)", "--first", "\(first)", "--participants", "\(count)", "--room-size",
                "\(roomSize)", "--connect-rate", "\(connectRate * Double(count) / Double(participants))", "--window-start", "\(windowStart)",
                "--duration", "\(duration)", "--action-interval", "\(actionInterval)",
            ] + scheduling
            let output = Pipe.forChild()
            process.standardOutput = output
            try process.runSerially()
            launched.append((process, output, slice.measuring))
        }
        return Launched(processes: launched, windowStart: windowStart)
    }

    /// Reads every load process's report to its end and merges them (blocking).
    private func collect(_ load: Launched, generatorCPU: Double) throws -> Result {
        var result = Result()
        result.generatorCPU = generatorCPU
        result.windowStart = load.windowStart
        result.windowEnd = load.windowStart + duration
        let measured = load.processes.contains { $0.measuring }
        for (process, output, measuring) in load.processes {
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0, let json = try? JSONValue.parse(Array(data)) else {
                throw TestFailure("cowatch-load exited with \(process.terminationStatus): \(String(decoding: data, as: UTF8.self))")
            }
            result.merge(json, latencies: measuring || !measured)
        }
        return result
    }
}

/// CPU seconds (user + system) a process has used so far, from /proc/PID/stat; nil when gone.
public func processCPUSeconds(pid: Int32) -> Double? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else {
        return nil
    }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}
