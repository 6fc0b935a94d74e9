import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation

/// A server and a room of headless daemons for one benchmark run: the shared `DaemonRoom` with
/// viewers named viewer0…, each with a player probe, and the figures the benchmark takes.
typealias BenchRoom = DaemonRoom

extension DaemonRoom {
    /// `viewers` daemons on `media` in room `name`, joined; `viewerArguments` go to every viewer
    /// (e.g. `--no-tls` with a plaintext server).
    convenience init(viewers: Int, media: String, name: String, serverArguments: [String] = [], viewerArguments: [String] = []) throws {
        try self.init(
            names: (0..<viewers).map { "viewer\($0)" }, media: media, room: name, venue: .server(arguments: serverArguments),
            arguments: viewerArguments, listeners: false, probes: true)
    }

    /// As above, with `perViewer(i)` added to viewer `i`'s command line.
    convenience init(
        viewers: Int, media: String, name: String, viewerArguments: [String] = [], perViewer: (Int) -> [String]
    ) throws {
        try self.init(media: media, room: name, venue: .server(), arguments: viewerArguments, listeners: false, probes: true)
        for index in 0..<viewers { try add("viewer\(index)", arguments: perViewer(index), waitJoined: false) }
        try waitForParticipants(viewers)
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

    /// Seeks while playing and returns the skews seen 0.2–1.2 s after playback resumed there: from
    /// when the first player is seen past `target` + 60 ms (a player paused after the seek stands
    /// one audio frame, 21 ms, on), so about 40 ms after the resume.
    func seekAndMeasureResume(to target: Double) throws -> [Double] {
        try clients.last!.request(.seek(seconds: target, mode: .absolute))
        let deadline = monotonicNow() + 10
        while monotonicNow() < deadline {
            if let pts = try? probes[0].request(.getProperty("audio-pts"), timeout: 2).numberValue, pts > target + 0.06, pts < target + 1 {
                break
            }
            usleep(1000)
        }
        sleepSeconds(0.2 - 0.04)
        return SkewSampler(clients: probes, property: "audio-pts").sample(count: 40, interval: 0.025, rate: 1)
    }

    /// Adds one more viewer; seconds until the skew of all holds under 2 ms, counted from the
    /// process start (it opens the media first) and from the moment the room lists it as joined.
    func lateJoinAndTimeLock() throws -> (fromStart: Double, fromJoin: Double) {
        let start = monotonicNow()
        try add("late", waitJoined: false)
        try waitForParticipants(clients.count)
        let joined = monotonicNow()
        let lock = SkewSampler(clients: probes).timeToLock(bound: 0.002, rate: 1, timeout: 10)
        return lock.map { (joined - start + $0, $0) } ?? (.infinity, .infinity)
    }

    /// Speed nudges and seeks per viewer so far.
    func correctionCount() throws -> Double {
        try corrections() / Double(clients.count)
    }
}

/// A server, viewers (optionally behind impaired links), their control clients and mpv probes, as
/// the scenarios see them: a `DaemonRoom` in room "scenario" with viewers named v0….
struct ObservedRoom {
    let room: DaemonRoom
    var server: ServerProcess { room.server }
    var links: [ImpairedLink] { room.links }
    var daemons: [DaemonProcess] { room.daemons }
    var controls: [ControlClient] { room.clients }
    var probes: [ControlClient] { room.probes }
    var names: [String] { room.names }
    var media: String { room.media ?? "" }

    init(viewers: Int, media: String, links: [(LinkImpairment, LinkImpairment)], arguments: [String] = []) throws {
        room = try DaemonRoom(
            media: media, room: "scenario", arguments: arguments, links: links.map { (up: $0.0, down: $0.1) }, listeners: false,
            probes: true)
        for index in 0..<viewers { try add("v\(index)") }
    }

    /// Adds a viewer and waits until every viewer lists them all.
    mutating func add(_ name: String) throws {
        try room.add(name, waitJoined: false)
        try room.waitForParticipants(timeout: 30)
    }

    func point(at t: Double, rate: Double) -> Trace.Point? {
        guard let positions = SkewSampler(clients: probes).positions(rate: rate) else { return nil }
        return Trace.Point(t: t, offsets: positions.map { $0 - positions[0] })
    }

    /// As `observe`, also reading every daemon's clock estimate once a second.
    func observeWithClock(seconds: Double, rate: Double) -> (Trace, [ClockReading]) {
        var trace = Trace(names: names)
        var clock: [ClockReading] = []
        let start = monotonicNow()
        var nextClock = start
        while monotonicNow() - start < seconds {
            if monotonicNow() >= nextClock {
                clock += clockReadings()
                nextClock += 1
            }
            if let point = point(at: monotonicNow() - start, rate: rate) { trace.points.append(point) }
            sleepSeconds(0.05)
        }
        return (trace, clock)
    }

    /// Every daemon's clock estimate now (`get_status`), for those that have one.
    func clockReadings() -> [ClockReading] {
        controls.compactMap { client in
            guard let clock = try? client.request(.getStatus)["clock"],
                let offset = clock["offset"]?.numberValue, let uncertainty = clock["uncertainty"]?.numberValue,
                let skew = clock["skew"]?.numberValue
            else { return nil }
            return ClockReading(offset: offset, uncertainty: uncertainty, skew: skew)
        }
    }

    func observe(seconds: Double, rate: Double) -> Trace {
        var trace = Trace(names: names)
        let start = monotonicNow()
        while monotonicNow() - start < seconds {
            if let point = point(at: monotonicNow() - start, rate: rate) { trace.points.append(point) }
            sleepSeconds(0.05)
        }
        return trace
    }

    /// Speed changes and seeks ordered by every daemon so far.
    func corrections() throws -> Double { try room.corrections() }

    func stop() { room.stop() }
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
