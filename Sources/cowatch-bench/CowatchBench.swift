import ArgumentParser
import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation

/// Runs rooms of real daemons on this machine and prints how close the players stay.
@main
struct CowatchBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cowatch-bench",
        abstract: "Measure how close cowatchd players stay.",
        version: CowatchVersion.text,
        subcommands: [Rooms.self, Scenarios.self, Lifecycle.self, Skew.self, Cost.self, TLSCost.self, MessageLatency.self, ActionLatency.self, PlaylistAdvance.self, AttachmentThroughput.self, Serve.self, ServerScale.self, StartTrace.self, SyncplayBench.self, ShareBench.self], defaultSubcommand: Rooms.self)
}

/// The observer as a command: samples the skew of running players (the demo uses it).
struct Skew: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "observe",
        abstract: "Print the pairwise skew of running players, read from their audio-pts. Give each player's own mpv IPC socket (cowatchd --mpv input-ipc-server=PATH) for a view independent of cowatchd, or control sockets.",
        aliases: ["skew"])

    @Option(name: .customLong("socket"), help: "A player's mpv IPC socket or a daemon's control socket; give two or more.")
    var sockets: [String] = []
    @Option(help: "Rounds to sample.") var samples = 40
    @Option(help: "The group rate.") var rate = 1.0

    func run() throws {
        guard sockets.count >= 2 else { throw ValidationError("give at least two --socket paths") }
        let clients = try sockets.map { try ControlClient(path: $0) }
        let skews = SkewSampler(clients: clients).sample(count: samples, interval: 0.025, rate: rate)
        guard let stats = Percentiles(skews) else { throw ValidationError("no readings (are the players loaded?)") }
        print("skew over \(stats.count) samples: p50 \(format3(stats.p50 * 1000)) ms, p99 \(format3(stats.p99 * 1000)) ms, max \(format3(stats.max * 1000)) ms")
    }
}

/// The benchmark proper: rooms of headless daemons on generated media.
struct Rooms: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure the pairwise skew of a room of real cowatchd players, against an uncoordinated baseline.")

    @Option(help: "Viewers per room.") var viewers = 3
    @Option(help: "Seconds of steady-state sampling per scenario.") var duration = 10.0
    @Option(help: "Repeat every scenario this many times (figures pool all runs).") var repeats = 3
    @Flag(help: "Only the video-only scenarios (for tuning).") var videoOnly = false
    @Option(help: "A cowatchd config file for every viewer (for tuning, e.g. drift.* keys).") var viewerConfig: String?
    @Option(help: ArgumentHelp(
        "Seconds of audio the null output buffers, as a sound device would (mpv's ao-null-buffer; 0 keeps mpv's 0.2 s).",
        discussion: "A PipeWire or PulseAudio device holds 20-50 ms; mpv's null output defaults to 0.2 s, which misreports every speed nudge four times as much."))
    var deviceBuffer = 0.05
    @Option(help: ArgumentHelp(
        "Nice value for every thread of the video rooms' viewers and of the video baseline's players (root only; for telling the machine's scheduling apart from ours).",
        discussion: "Applied once each viewer is playing; the observer, the server and the audio rooms keep the ordinary priority."))
    var viewerNice: Int32?
    @Option(help: "As --viewer-nice, but SCHED_FIFO at this priority (1-99; root only).") var viewerRealtime: Int32?

    /// What every viewer (and the baseline's players) gets on its command line.
    var viewerArguments: [String] {
        (viewerConfig.map { ["--config", $0] } ?? []) + (deviceBuffer > 0 ? ["--mpv", "ao-null-buffer=\(deviceBuffer)"] : [])
    }

    func run() throws {
        let audio = try TestMedia.audioVideo()
        let video = try TestMedia.videoOnly()
        var rows: [Row] = []
        var steadyAudio: [Double] = [], steadyVideo: [Double] = [], afterPlay: [Double] = []
        var seekLock: [Double] = [], joinLock: [Double] = [], baseline: [Double] = [], corrections: [Double] = []
        var baselineVideo: [Double] = [], joinedLock: [Double] = [], steadyVideoDense: [Double] = [], afterSeek: [Double] = []
        var videoOutliers: [(outlier: FrameOutlier, cause: FrameOutlierCause?)] = []
        var steadyVideoFlips: [Double] = [], flipsOffCadence: [Double] = []
        var lateFlips: [(off: Double, cause: FrameOutlierCause?)] = []
        var baselineOutliers: [(outlier: FrameOutlier, cause: FrameOutlierCause?)] = []
        for run in 1...repeats {
            if !videoOnly {
                log("run \(run)/\(repeats): audio+video room")
                let room = try BenchRoom(
                    viewers: viewers, media: audio, name: "bench-a\(run)", viewerArguments: viewerArguments)
                afterPlay += try room.playAndMeasureStart()
                steadyAudio += SkewSampler(clients: room.probes).sample(count: Int(duration / 0.025), interval: 0.025, rate: 1)
                seekLock.append(try room.seekAndTimeLock(to: 30))
                afterSeek += try room.seekAndMeasureResume(to: 45)
                let join = try room.lateJoinAndTimeLock()
                joinLock.append(join.fromStart)
                joinedLock.append(join.fromJoin)
                corrections.append(try room.correctionCount())
                room.stop()
            }

            log("run \(run)/\(repeats): video-only room")
            // Each player also logs when it puts each frame on screen (mpv --dump-stats).
            let stats = DaemonProcess.makeDirectory()
            let videoRoom = try BenchRoom(
                viewers: viewers, media: video, name: "bench-v\(run)", viewerArguments: viewerArguments,
                perViewer: { ["--mpv", "dump-stats=\(stats)/viewer\($0).stats"] })
            _ = try videoRoom.playAndMeasureStart(property: nil)
            prioritise(videoRoom.daemons)
            sleepSeconds(2)
            let clockOffsets = try videoRoom.probes.map { try FlipSkew.clockOffset($0).offset }
            let windowStart = monotonicNow()
            let observed = FrameSkewSampler(clients: videoRoom.probes)
                .observe(seconds: duration, rate: 1, diagnose: videoRoom.daemons.map(\.process.processIdentifier))
            let windowEnd = monotonicNow()
            steadyVideo += observed.skews
            videoOutliers += zip(observed.outliers, observed.causes).map { ($0, $1) }
            // The same room read by an observer that never pauses: the load it adds shows as skew.
            steadyVideoDense += FrameSkewSampler(clients: videoRoom.probes, dense: true).sample(seconds: duration, rate: 1)
            videoRoom.stop()
            let flips = (0..<viewers).map { index in
                let text = (try? String(contentsOfFile: "\(stats)/viewer\(index).stats", encoding: .utf8)) ?? ""
                return FlipSkew.flips(statsText: text).map { $0 + clockOffsets[index] }
            }
            steadyVideoFlips += FlipSkew.skews(flips, from: windowStart, to: windowEnd)
            for (index, player) in flips.enumerated() {
                let off = FlipSkew.offCadence(player, from: windowStart, to: windowEnd)
                flipsOffCadence += off.map { abs($0.off) }
                // Each flip over 2 ms off its cadence, and what its player and the VM did then.
                for late in off where abs(late.off) > 0.002 {
                    lateFlips.append((late.off, observed.timeline?.cause(player: index, at: late.at)))
                }
            }

            log("run \(run)/\(repeats): baselines (same players, no room: play sent to each in turn)")
            if !videoOnly { baseline += try Self.baseline(viewers: viewers, media: audio, seconds: min(duration, 5), arguments: viewerArguments) }
            let base = try baselineFrames(media: video, seconds: min(duration, 5))
            baselineVideo += base.skews
            baselineOutliers += zip(base.outliers, base.causes).map { ($0, $1) }
        }
        rows.append(Row(name: "steady skew, audio+video (audio-pts)", values: steadyAudio, unit: .ms))
        rows.append(Row(name: "steady skew, video-only (frame instants)", values: steadyVideo, unit: .ms))
        rows.append(Row(name: "same rooms, read by a nonstop poller", values: steadyVideoDense, unit: .ms))
        rows.append(Row(name: "same rooms, frames put on screen (mpv's flips)", values: steadyVideoFlips, unit: .ms))
        rows.append(Row(name: "a player's flip off its own cadence", values: flipsOffCadence, unit: .ms))
        rows.append(Row(name: "skew 0.2–1.2 s after play", values: afterPlay, unit: .ms))
        rows.append(Row(name: "skew 0.2–1.2 s after resuming from a seek", values: afterSeek, unit: .ms))
        rows.append(Row(name: "re-lock after seek (<2 ms)", values: seekLock, unit: .s))
        rows.append(Row(name: "late join: process start to lock (<2 ms)", values: joinLock, unit: .s))
        rows.append(Row(name: "late join: joined to lock (<2 ms)", values: joinedLock, unit: .s))
        rows.append(Row(name: "baseline: uncoordinated, audio-pts", values: baseline, unit: .ms))
        rows.append(Row(name: "baseline: uncoordinated, video-only frames", values: baselineVideo, unit: .ms))
        print(Row.table(rows))
        if let ours = Percentiles(steadyAudio), let theirs = Percentiles(baseline), ours.p50 > 0 {
            print("\nbaseline / cowatch, steady audio p50: \(format(theirs.p50 / ours.p50))×, p99: \(format(theirs.p99 / max(ours.p99, 1e-9)))×")
        }
        print("\n" + FrameOutlierReport.table(videoOutliers, title: "video-only rooms (sleeping observer)"))
        print("\n" + FrameOutlierReport.table(baselineOutliers, title: "uncoordinated video-only players (baseline)"))
        print("\n" + FrameOutlierReport.flips(lateFlips))
        if let viewerNice { print("viewers' threads at nice \(viewerNice)") }
        if let viewerRealtime { print("viewers' threads under SCHED_FIFO \(viewerRealtime)") }
        print("corrections per viewer over the audio scenario (speed changes + seeks), median: \(format(Percentiles(corrections)?.p50 ?? 0))")
        print("\(viewers) viewers, \(repeats) runs, \(Int(duration)) s sampling; null output buffer \(deviceBuffer > 0 ? "\(deviceBuffer) s" : "mpv's 0.2 s"); \(ProcessInfo.processInfo.activeProcessorCount) cores")
    }

    /// Gives the viewers' threads the priority asked for (`--viewer-nice`, `--viewer-realtime`).
    func prioritise(_ daemons: [DaemonProcess]) {
        for daemon in daemons {
            let scheduling = ThreadScheduling(pid: daemon.process.processIdentifier)
            if let viewerNice, scheduling.renice(to: viewerNice) == 0 { log("could not renice \(daemon.name) (root only)") }
            if let viewerRealtime, scheduling.makeRealtime(priority: viewerRealtime) == 0 { log("could not make \(daemon.name) real-time (root only)") }
        }
    }

    /// The video baseline (as `baseline`), observed with the outlier diagnosis.
    func baselineFrames(media: String, seconds: Double) throws -> FrameObservation {
        let daemons = try (0..<viewers).map { try DaemonProcess(name: "base\($0)", media: media, extraArguments: ["--paused"] + viewerArguments) }
        defer { for daemon in daemons { daemon.terminate() } }
        let controls = try daemons.map { try $0.client() }
        for client in controls { try client.request(.seek(seconds: 5, mode: .absolute)) }
        for client in controls { try client.request(.play) }
        let clients = try daemons.map { try $0.playerProbe() }
        prioritise(daemons)
        sleepSeconds(1)
        return FrameSkewSampler(clients: clients).observe(seconds: seconds, rate: 1, diagnose: daemons.map(\.process.processIdentifier))
    }

    /// Standalone daemons, each told to seek and play one after another, as a person with
    /// several players (or a tool without a shared clock) would: the skew they keep.
    static func baseline(viewers: Int, media: String, seconds: Double, arguments: [String] = []) throws -> [Double] {
        let daemons = try (0..<viewers).map { try DaemonProcess(name: "base\($0)", media: media, extraArguments: ["--paused"] + arguments) }
        let controls = try daemons.map { try $0.client() }
        for client in controls { try client.request(.seek(seconds: 5, mode: .absolute)) }
        for client in controls { try client.request(.play) }
        let clients = try daemons.map { try $0.playerProbe() }
        sleepSeconds(1)
        let skews = SkewSampler(clients: clients).sample(count: Int(seconds / 0.025), interval: 0.025, rate: 1)
        for daemon in daemons { daemon.terminate() }
        return skews
    }
}

func log(_ text: String) {
    FileHandle.standardError.write(Data("cowatch-bench: \(text)\n".utf8))
}

func format(_ value: Double) -> String {
    let rounded = (value * 100).rounded() / 100
    return "\(rounded)"
}
