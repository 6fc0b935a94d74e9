import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation

/// A server and a room of headless daemons for one scenario.
final class BenchRoom {
    let server: ServerProcess
    var daemons: [DaemonProcess] = []
    var clients: [ControlClient] = []
    /// The observer's view: each player's own mpv IPC socket.
    var probes: [ControlClient] = []
    let media: String
    let name: String
    /// Given to every viewer (e.g. `--no-tls` with a plaintext server).
    let viewerArguments: [String]

    init(viewers: Int, media: String, name: String, serverArguments: [String] = [], viewerArguments: [String] = []) throws {
        server = try ServerProcess(extraArguments: serverArguments)
        self.media = media
        self.name = name
        self.viewerArguments = viewerArguments
        for index in 0..<viewers { try add("viewer\(index)") }
        try waitForParticipants(viewers)
    }

    /// Adds a viewer, on the room's media unless `media` says otherwise.
    func add(_ viewer: String, media: String? = nil, arguments: [String] = []) throws {
        let daemon = try DaemonProcess(
            name: viewer, media: media ?? self.media,
            extraArguments: ["--join", server.address, "--room", name, "--no-osd"] + viewerArguments + arguments)
        daemons.append(daemon)
        clients.append(try daemon.client())
        probes.append(try daemon.playerProbe())
    }

    func waitForParticipants(_ count: Int) throws {
        let deadline = monotonicNow() + 20
        while monotonicNow() < deadline {
            if try clients.allSatisfy({ try $0.request(.getParticipants).arrayValue?.count == count }) { return }
            sleepSeconds(0.05)
        }
        throw TestFailure("room did not fill")
    }

    /// Plays from 10 s and returns the skews seen 0.2–1.2 s after the start.
    func playAndMeasureStart(property: String? = "audio-pts") throws -> [Double] {
        try clients[0].request(.seek(seconds: 10, mode: .absolute))
        sleepSeconds(0.5)
        try clients[1 % clients.count].request(.play)
        guard let property else { return [] }
        sleepSeconds(0.2 + 0.15)
        return SkewSampler(clients: probes, property: property).sample(count: 40, interval: 0.025, rate: 1)
    }

    /// Seeks while playing; seconds from the request until the skew holds under 2 ms.
    func seekAndTimeLock(to target: Double) throws -> Double {
        let start = monotonicNow()
        try clients.last!.request(.seek(seconds: target, mode: .absolute))
        sleepSeconds(0.1)
        let samplingStart = monotonicNow()
        let lock = SkewSampler(clients: probes).timeToLock(bound: 0.002, rate: 1, timeout: 10)
        return lock.map { samplingStart - start + $0 } ?? .infinity
    }

    /// Adds one more viewer; seconds until the skew of all holds under 2 ms, counted from the
    /// process start (it opens the media first) and from the moment the room lists it as joined.
    func lateJoinAndTimeLock() throws -> (fromStart: Double, fromJoin: Double) {
        let start = monotonicNow()
        try add("late")
        try waitForParticipants(clients.count)
        let joined = monotonicNow()
        let lock = SkewSampler(clients: probes).timeToLock(bound: 0.002, rate: 1, timeout: 10)
        return lock.map { (joined - start + $0, $0) } ?? (.infinity, .infinity)
    }

    /// Speed nudges and seeks per viewer per minute so far.
    func correctionCount() throws -> Double {
        var total = 0.0
        for client in clients {
            let drift = try client.request(.getStatus)["drift"]
            total += (drift?["nudges"]?.numberValue ?? 0) + (drift?["seeks"]?.numberValue ?? 0)
        }
        return total / Double(clients.count)
    }

    func stop() {
        for daemon in daemons { daemon.terminate() }
        server.terminate()
    }
}

/// One table row.
struct Row {
    enum Unit { case ms, s }
    let name: String
    let values: [Double]
    let unit: Unit

    static func table(_ rows: [Row]) -> String {
        var lines = ["| scenario | p50 | p99 | max | samples |", "|---|---|---|---|---|"]
        for row in rows {
            guard let stats = Percentiles(row.values.filter { $0.isFinite }) else {
                lines.append("| \(row.name) | – | – | – | 0 |")
                continue
            }
            let failed = row.values.filter { !$0.isFinite }.count
            func show(_ v: Double) -> String {
                row.unit == .ms ? "\(format3(v * 1000)) ms" : "\(format3(v)) s"
            }
            lines.append(
                "| \(row.name) | \(show(stats.p50)) | \(show(stats.p99)) | \(show(stats.max)) | \(stats.count)\(failed > 0 ? " (\(failed) never locked)" : "") |")
        }
        return lines.joined(separator: "\n")
    }
}

func format3(_ value: Double) -> String {
    let rounded = (value * 1000).rounded() / 1000
    return "\(rounded)"
}
