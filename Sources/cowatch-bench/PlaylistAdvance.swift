import ArgumentParser
import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation

/// `cowatch-bench playlist`: a shared playlist playing through by itself, beside a person's jump.
///
/// Three viewers, two short films (6 s) in the room's list with repeat all and a short countdown;
/// every daemon finds the second film through `--media-dir`. Each player's `pause` is watched on
/// its own mpv IPC socket. An entry's end is the first player pausing at its end (mpv holds at the
/// end of a file, paused: `keep-open`); the next playing everywhere is the last player's unpause
/// after it (everyone loads the next entry paused at 0, the group holds until all have it, then
/// starts after the countdown). The same is timed for a jump (`cowatch jump`, a manual switch),
/// from the request, once in every cycle. After each start the players' audio-pts skew is sampled
/// 0.3–0.8 s on.
struct PlaylistAdvance: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playlist",
        abstract: "A playlist playing through by itself: from an entry's end to the next playing everywhere, and the skew after each start, beside a jump.")

    @Option(help: "Viewers in the room.") var viewers = 3
    @Option(help: "Advances (entries ending) to time; as many jumps are timed beside them.") var advances = 20
    @Option(help: "The playlist's countdown, seconds.") var countdown = 1.0
    @Option(help: "Seconds of audio the null output buffers, as a sound device would (as `rooms --device-buffer`; 0 keeps mpv's 0.2 s, which misreports every speed nudge four times as much).")
    var deviceBuffer = 0.05
    @Option(help: "A cowatchd config file for every viewer (for tuning, e.g. drift.* keys).") var viewerConfig: String?
    @Flag(help: "After each start, print each player's offset from the others' mean 0.3 and 0.8 s in, and its daemon's start lateness and unpause lead (ms).")
    var trace = false

    func run() throws {
        let films = try Self.films()
        let folder = (films[1] as NSString).deletingLastPathComponent
        let room = try BenchRoom(
            viewers: viewers, media: films[0], name: "playlist", viewerArguments: ["--media-dir", folder] + (deviceBuffer > 0 ? ["--mpv", "ao-null-buffer=\(deviceBuffer)"] : [])
                + (viewerConfig.map { ["--config", $0] } ?? []))
        defer { room.stop() }
        let pauses = try room.daemons.map { try PropertyWatcher(path: $0.mpvSocket, property: "pause", poll: 0.05) }
        defer { pauses.forEach { $0.stop() } }
        let editor = room.clients[0]
        try editor.request(.playlist(.add(films.map { .file($0) }, next: false)), timeout: 15)
        try editor.request(.playlist(.setRepeat(.all)), timeout: 15)
        try editor.request(.playlist(.setCountdown(countdown)), timeout: 15)
        // Every daemon has found the second film by its identity (the folder is indexed in the
        // background) before the list starts: a viewer who lacks it would be skipped.
        try Self.waitUntilEveryoneHasAll(room, entries: films.count)

        var advanceGaps: [Double] = []
        var jumpGaps: [Double] = []
        var advanceSkews: [Double] = []
        var jumpSkews: [Double] = []
        var current = 1
        let jumped = monotonicNow()
        try editor.request(.playlist(.jump(current)), timeout: 15)
        // The room waits paused on its first media: the list's start is each player's unpause.
        guard Self.started(pauses, after: jumped, within: 30, fromPaused: true) != nil else {
            throw TestFailure("the list did not start within 30 s")
        }
        for cycle in 0..<advances {
            // A person jumps to the other entry one second in.
            sleepSeconds(0.3)
            jumpSkews += Self.skews(room, trace: trace ? "jump \(cycle)" : nil)
            current = current % films.count + 1
            let asked = monotonicNow()
            try room.clients[cycle % viewers].request(.playlist(.jump(current)), timeout: 15)
            let playing = Self.started(pauses, after: asked, within: 30)
            jumpGaps.append(playing.map { $0 - asked } ?? .infinity)
            guard let playing else { continue }
            // It plays to its end, and the room moves on by itself.
            sleepSeconds(0.3)
            advanceSkews += Self.skews(room, trace: trace ? "advance \(cycle)" : nil)
            guard let ended = Self.firstPause(pauses, after: playing, within: 30),
                let next = Self.started(pauses, after: ended, within: 30)
            else {
                advanceGaps.append(.infinity)
                continue
            }
            advanceGaps.append(next - ended)
            current = current % films.count + 1
        }
        print(Row.table([
            Row(name: "advance: entry's end → next playing everywhere", values: advanceGaps, unit: .s),
            Row(name: "advance: skew 0.3–0.8 s after the start", values: advanceSkews, unit: .ms),
            Row(name: "jump: request → playing everywhere", values: jumpGaps, unit: .s),
            Row(name: "jump: skew 0.3–0.8 s after the start", values: jumpSkews, unit: .ms),
        ]))
        print("\(viewers) viewers, \(advances) advances and jumps, countdown \(countdown) s, null output buffer \(deviceBuffer > 0 ? "\(deviceBuffer) s" : "mpv's 0.2 s"), loopback; \(ProcessInfo.processInfo.activeProcessorCount) cores")
    }

    /// The first and third playlist films (6 s each, different identities), made once.
    static func films() throws -> [String] {
        let made = Locked<Result<[String], any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<[String], any Error>
            do { result = .success(try await TestMedia.playlistFilms()) } catch { result = .failure(error) }
            made.withLock { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: .now() + 120) == .success, let result = made.withLock({ $0 }) else {
            throw TestFailure("ffmpeg did not make the films in 120 s")
        }
        let films = try result.get()
        return [films[0], films[2]]
    }

    /// Waits (60 s at most) until every daemon says it has every entry.
    static func waitUntilEveryoneHasAll(_ room: BenchRoom, entries: Int) throws {
        let deadline = monotonicNow() + 60
        while monotonicNow() < deadline {
            let replies = room.clients.map { try? PlaylistReply(json: $0.request(.getPlaylist, timeout: 5)) }
            if replies.allSatisfy({ $0?.entries.count == entries && $0?.entries.allSatisfy(\.here) == true }) { return }
            sleepSeconds(0.2)
        }
        throw TestFailure("not every viewer found every film within 60 s")
    }

    /// When every player started after `after`: each player's first unpause that follows a pause
    /// after `after` (a switch holds each player paused, then the start unpauses it; `fromPaused`:
    /// the players were paused already), the last of them. Nil when one did not within `within`
    /// seconds.
    static func started(_ pauses: [PropertyWatcher], after: Double, within: Double, fromPaused: Bool = false) -> Double? {
        let deadline = monotonicNow() + within
        while monotonicNow() < deadline {
            let starts = pauses.map { watcher -> Double? in
                let changes = watcher.changes.filter { $0.at >= after }
                guard let paused = fromPaused ? changes.startIndex : changes.firstIndex(where: { $0.value == 1 }) else { return nil }
                return changes[paused...].first { $0.value == 0 }?.at
            }
            if starts.allSatisfy({ $0 != nil }) { return starts.map { $0! }.max() }
            sleepSeconds(0.01)
        }
        return nil
    }

    /// The first pause of any player after `after` (the end of the entry, where mpv holds).
    static func firstPause(_ pauses: [PropertyWatcher], after: Double, within: Double) -> Double? {
        let deadline = monotonicNow() + within
        while monotonicNow() < deadline {
            let first = pauses.compactMap { $0.changes.first { $0.at > after && $0.value == 1 }?.at }.min()
            if let first { return first }
            sleepSeconds(0.01)
        }
        return nil
    }

    /// The players' audio-pts skew, 20 rounds 25 ms apart; with a `trace` label, printed per player.
    static func skews(_ room: BenchRoom, trace: String? = nil) -> [Double] {
        let rounds = SkewSampler(clients: room.probes, property: "audio-pts").rounds(count: 20, interval: 0.025, rate: 1)
        if let trace, let first = rounds.first, let last = rounds.last {
            let offsets = { (round: SkewSampler.Round) -> String in
                let mean = round.positions.reduce(0, +) / Double(round.positions.count)
                return round.positions.map { String(format: "%+.2f", ($0 - mean) * 1000) }.joined(separator: " ")
            }
            let daemons = room.clients.map { client -> String in
                let drift = (try? client.request(.getStatus))?["drift"]
                let late = drift?["start_late"]?.numberValue.map { String(format: "%.2f", $0 * 1000) } ?? "-"
                let lead = drift?["unpause_lead"]?.numberValue.map { String(format: "%.2f", $0 * 1000) } ?? "-"
                let delay = drift?["output_delay"]?.numberValue.map { String(format: "%.1f", $0 * 1000) } ?? "-"
                return "\(late)/\(lead)/\(delay)"
            }
            print("\(trace): 0.3 s [\(offsets(first))] 0.8 s [\(offsets(last))] late/lead/output delay [\(daemons.joined(separator: " "))]")
        }
        return rounds.map(\.skew)
    }
}
