import ArgumentParser
import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation

/// Named situations, each run as a real room and observed through the players' own mpv sockets:
/// a table row each, plus a CSV of every participant's offset over time and an SVG plot of it.
struct Scenarios: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run named scenarios (steady, steady-video, actions, late-join, jitter, jitter-loss, wifi, stalls, asymmetric, many); write CSV and SVG per scenario.")

    static let all = ["steady", "steady-video", "actions", "late-join", "jitter", "jitter-loss", "wifi", "stalls", "asymmetric", "many"]

    @Option(help: "Comma-separated scenarios (default: all).") var only: String?
    @Option(help: "Seconds each scenario is observed.") var duration = 20.0
    @Option(help: "Directory for the CSV and SVG files.") var out = "bench-out"
    @Option(help: "Seconds of audio the null output buffers, as a sound device would (as `rooms --device-buffer`; 0 keeps mpv's 0.2 s).")
    var deviceBuffer = 0.05

    @Flag(help: "Read video-only frames by polling without pause (the observer's load then shows as skew).")
    var denseFrames = false

    var viewerArguments: [String] { deviceBuffer > 0 ? ["--mpv", "ao-null-buffer=\(deviceBuffer)"] : [] }

    func run() throws {
        let chosen = only.map { $0.split(separator: ",").map(String.init) } ?? Self.all
        for name in chosen where !Self.all.contains(name) { throw ValidationError("unknown scenario \(name)") }
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        var lines = [
            "| scenario | viewers | skew p50 | skew p99 | skew max | re-lock | corrections/viewer/min | clock error p50 / max | uncertainty p50 | error ≤ uncertainty | fitted skew max / last |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name in chosen {
            log("scenario \(name)")
            let result = try runScenario(name)
            try result.trace.csv().write(toFile: "\(out)/\(name).csv", atomically: true, encoding: .utf8)
            try result.trace.svg(title: "cowatch: \(name), offset of each player from \(result.trace.names[0])")
                .write(toFile: "\(out)/\(name).svg", atomically: true, encoding: .utf8)
            let stats = Percentiles(result.steadySkews)
            func ms(_ v: Double?) -> String { v.map { "\(format3($0 * 1000)) ms" } ?? "–" }
            let relock = result.relock.map { $0.isFinite ? "\(format3($0)) s" : "never" } ?? "–"
            let clock = ClockReading.summary(result.clock, lastRound: result.trace.names.count)
            lines.append("| \(name) | \(result.trace.names.count) | \(ms(stats?.p50)) | \(ms(stats?.p99)) | \(ms(stats?.max)) | \(relock) | \(format(result.correctionsPerMinute)) | \(clock) |")
        }
        print(lines.joined(separator: "\n"))
        print("\nCSV and SVG per scenario in \(out)/; \(Int(duration)) s each; \(ProcessInfo.processInfo.activeProcessorCount) cores")
    }

    struct Result {
        var trace: Trace
        /// Skews outside the windows right after actions (what "locked" looks like).
        var steadySkews: [Double]
        /// Longest time to get back under 2 ms after an action or event, if the scenario has any.
        var relock: Double?
        var correctionsPerMinute: Double
        /// Each viewer's clock estimate, read once a second while observing (steady scenarios only).
        var clock: [ClockReading] = []
    }

    func runScenario(_ name: String) throws -> Result {
        let audio = try TestMedia.audioVideo()
        switch name {
        case "steady": return try steady(viewers: 3, media: audio, frames: false)
        case "steady-video": return try steady(viewers: 3, media: try TestMedia.videoOnly(), frames: true)
        case "many": return try steady(viewers: 12, media: audio, frames: false)
        case "actions": return try actions(media: audio)
        case "late-join": return try lateJoin(media: audio)
        case "jitter":
            let link = LinkImpairment(delay: 0.05, jitter: 0.02, stallEvery: 3, stallLength: 0.3)
            return try steady(viewers: 3, media: audio, frames: false, links: [(link, link)])
        case "jitter-loss":
            // The internet: 50 ± 20 ms each way, a 300 ms stall every 10 s, 1 % of segments
            // retransmitted (+200 ms, later ones wait behind), and a heavy tail of held-back
            // segments (what reordering looks like above TCP).
            let link = LinkImpairment(
                delay: 0.05, jitter: 0.02, stallEvery: 10, stallLength: 0.3, loss: 0.01, retransmit: 0.2,
                tailScale: 0.002, tailShape: 1.2, tailCap: 0.1)
            return try steady(viewers: 3, media: audio, frames: false, links: [(link, link)])
        case "wifi":
            // Wi-Fi: 2 ms plus a heavy tail up to 40 ms (median +1.2 ms, 1 % near the cap), 4×
            // worse for a second every 5 s (bursts of interference).
            let link = LinkImpairment(
                delay: 0.002, tailScale: 0.002, tailShape: 1.5, tailCap: 0.038, burstEvery: 5, burstLength: 1,
                burstFactor: 4)
            return try steady(viewers: 3, media: audio, frames: false, links: [(link, link)])
        case "stalls": return try stalls(media: audio)
        default:  // asymmetric
            return try steady(
                viewers: 2, media: audio, frames: false,
                links: [(LinkImpairment(delay: 0.005), LinkImpairment(delay: 0.045)), (LinkImpairment(delay: 0.025), LinkImpairment(delay: 0.025))])
        }
    }

    // MARK: Scenarios

    func steady(viewers: Int, media: String, frames: Bool, links: [(LinkImpairment, LinkImpairment)] = []) throws -> Result {
        let room = try ObservedRoom(viewers: viewers, media: media, links: links, arguments: viewerArguments)
        defer { room.stop() }
        try room.controls[0].request(.seek(seconds: 5, mode: .absolute), timeout: 15)
        try room.controls[min(1, viewers - 1)].request(.play, timeout: 15)
        sleepSeconds(3)
        let before = try room.corrections()
        var trace = Trace(names: room.names)
        var clock: [ClockReading] = []
        if frames {
            let start = monotonicNow()
            for frame in FrameSkewSampler(clients: room.probes, dense: denseFrames).frames(seconds: duration, rate: 1) {
                trace.points.append(.init(t: frame.at - start, offsets: [0] + frame.offsets))
            }
            clock = room.clockReadings()
        } else {
            (trace, clock) = room.observeWithClock(seconds: duration, rate: 1)
        }
        let corrections = try room.corrections() - before
        return Result(
            trace: trace, steadySkews: trace.skews, relock: nil,
            correctionsPerMinute: corrections / Double(viewers) / (duration / 60), clock: clock)
    }

    func actions(media: String) throws -> Result {
        let room = try ObservedRoom(viewers: 3, media: media, links: [], arguments: viewerArguments)
        defer { room.stop() }
        try room.controls[0].request(.seek(seconds: 5, mode: .absolute))
        try room.controls[1].request(.play)
        sleepSeconds(2)
        let before = try room.corrections()
        // Who does what, and when (fractions of the duration); pauses are left out of "locked".
        let script: [(at: Double, who: Int, command: ControlCommand, rate: Double)] = [
            (0.15, 2, .seek(seconds: 30, mode: .absolute), 1),
            (0.35, 0, .speed(1.25), 1.25),
            (0.55, 1, .seek(seconds: -10, mode: .relative), 1.25),
            (0.75, 2, .speed(1), 1),
        ]
        var trace = Trace(names: room.names)
        var relocks: [Double] = []
        var steady: [Double] = []
        let start = monotonicNow()
        var next = 0
        var rate = 1.0
        var lastAction = -Double.infinity
        var locked = true
        var goodRun = 0
        var firstGood = 0.0
        while monotonicNow() - start < duration {
            let t = monotonicNow() - start
            if next < script.count, t >= script[next].at * duration {
                try room.controls[script[next].who].request(script[next].command)
                rate = script[next].rate
                lastAction = monotonicNow() - start
                locked = false
                goodRun = 0
                next += 1
                continue
            }
            guard let point = room.point(at: t, rate: rate) else { continue }
            trace.points.append(point)
            let skew = Trace(names: room.names, points: [point]).skews.first ?? .infinity
            // Locked again once under 2 ms for five readings in a row, counted from the first of them,
            // and no earlier than the action can have taken effect everywhere (its lead).
            if !locked {
                if skew < 0.002 && t - lastAction > 0.3 {
                    goodRun += 1
                    if goodRun == 1 { firstGood = t }
                    if goodRun >= 5 {
                        locked = true
                        relocks.append(firstGood - lastAction)
                    }
                } else {
                    goodRun = 0
                }
            }
            if locked { steady.append(skew) }
            sleepSeconds(0.05)
        }
        if !locked { relocks.append(.infinity) }
        let corrections = try room.corrections() - before
        return Result(trace: trace, steadySkews: steady, relock: relocks.max(), correctionsPerMinute: corrections / 3 / (duration / 60))
    }

    func lateJoin(media: String) throws -> Result {
        var room = try ObservedRoom(viewers: 3, media: media, links: [], arguments: viewerArguments)
        defer { room.stop() }
        try room.controls[0].request(.play)
        sleepSeconds(2)
        var trace = room.observe(seconds: duration / 3, rate: 1)
        let joinStart = monotonicNow()
        try room.add("late")
        trace.names = room.names
        let offset = trace.points.last?.t ?? 0
        var relock: Double?
        var steady = trace.skews
        let end = monotonicNow() + duration * 2 / 3
        while monotonicNow() < end {
            let t = offset + (monotonicNow() - joinStart)
            guard let point = room.point(at: t, rate: 1) else { continue }
            trace.points.append(point)
            let skew = Trace(names: room.names, points: [point]).skews.first ?? .infinity
            if relock == nil && skew < 0.002 { relock = monotonicNow() - joinStart }
            if relock != nil { steady.append(skew) }
            sleepSeconds(0.05)
        }
        return Result(trace: trace, steadySkews: steady, relock: relock ?? .infinity, correctionsPerMinute: 0)
    }

    func stalls(media: String) throws -> Result {
        let clean = LinkImpairment(delay: 0.002)
        let room = try ObservedRoom(viewers: 3, media: media, links: [(clean, clean)], arguments: viewerArguments)
        defer { room.stop() }
        try room.controls[0].request(.play)
        sleepSeconds(2)
        var trace = room.observe(seconds: duration / 4, rate: 1)
        room.links[2].stall(for: 5)
        let more = room.observe(seconds: duration * 3 / 4, rate: 1)
        let shift = trace.points.last?.t ?? 0
        trace.points += more.points.map { Trace.Point(t: $0.t + shift, offsets: $0.offsets) }
        return Result(trace: trace, steadySkews: trace.skews, relock: nil, correctionsPerMinute: 0)
    }
}
/// One daemon's clock estimate. On one machine the truth is known: server and daemons all read
/// CLOCK_MONOTONIC, so the true offset is 0 and the true skew 0, and `offset` is the error.
struct ClockReading {
    var offset: Double
    var uncertainty: Double
    var skew: Double

    /// "clock error p50 / max | uncertainty p50 | error ≤ uncertainty | fitted skew max / last" cells
    /// (last: the largest of the viewers' final readings).
    static func summary(_ readings: [ClockReading], lastRound: Int) -> String {
        guard let error = Percentiles(readings.map { abs($0.offset) }),
            let uncertainty = Percentiles(readings.map(\.uncertainty)),
            let skew = Percentiles(readings.map { abs($0.skew) })
        else { return "– | – | – | –" }
        let last = readings.suffix(lastRound).map { abs($0.skew) }.max() ?? 0
        let covered = readings.filter { abs($0.offset) <= $0.uncertainty }.count
        return "\(format3(error.p50 * 1000)) / \(format3(error.max * 1000)) ms | \(format3(uncertainty.p50 * 1000)) ms"
            + " | \(covered)/\(readings.count) | \(format(skew.max * 1e6)) / \(format(last * 1e6)) ppm"
    }
}
