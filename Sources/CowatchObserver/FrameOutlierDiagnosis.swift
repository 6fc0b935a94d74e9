import CowatchClient
import CowatchCore

/// What the frame observer saw over one window: see `FrameSkewSampler.observe`.
public struct FrameObservation: Sendable {
    /// For each frame every player showed well: when player 0 showed it and how far ahead each
    /// other player was (seconds of media).
    public var frames: [(at: Double, offsets: [Double])]
    /// Every player's frame instants, frame position (to the millisecond) → first shown.
    public var shown: [[Double: ShownFrame]]
    /// Frames whose skew exceeded the threshold, in order.
    public var outliers: [FrameOutlier]
    /// For each outlier, what was going on in its player then (nil when not diagnosed).
    public var causes: [FrameOutlierCause?]
    /// When diagnosed: what each player's threads and the VM did over the window.
    public var timeline: SchedulingTimeline?

    public var skews: [Double] {
        frames.map { frame in
            let values = [0.0] + frame.offsets
            return (values.max() ?? 0) - (values.min() ?? 0)
        }
    }
}

/// What was going on in the player that broke its cadence, over the frame period in which it did.
public struct FrameOutlierCause: Sendable, Equatable {
    /// Seconds since that player's last speed change, when one came within 0.5 s before.
    public var speedChangeBefore: Double?
    /// Seconds that player's mpv core and video-output threads together waited for a CPU over
    /// that frame period.
    public var runQueueWait: Double
    /// The thread that waited longest (its name), and how long.
    public var waitedMost: String
    public var waitedMostFor: Double
    /// Seconds of VM steal over the same period, all CPUs (10 ms ticks).
    public var steal: Double

    public init(speedChangeBefore: Double?, runQueueWait: Double, waitedMost: String, waitedMostFor: Double, steal: Double) {
        self.speedChangeBefore = speedChangeBefore
        self.runQueueWait = runQueueWait
        self.waitedMost = waitedMost
        self.waitedMostFor = waitedMostFor
        self.steal = steal
    }
}

/// The observer's verdict on one outlier frame, first match wins.
public enum FrameOutlierVerdict: String, Sendable, CaseIterable {
    /// The players' offsets moved (not one player's single frame): a sync error.
    case playersMoved = "players moved apart"
    /// That player's speed changed within 15 ms before (mpv shows a frame due within about
    /// 10 ms at once on a speed change): ours, if the daemon made it.
    case speedChange = "speed change just before"
    /// A late frame whose player's mpv core and video-output threads waited for a CPU for at
    /// least half its lateness.
    case waitedForCPU = "its threads waited for a CPU"
    /// The hypervisor took CPU time from the VM in that frame period.
    case steal = "VM steal in that frame"
    /// None of the above was seen.
    case unexplained = "no cause seen"

    public static func of(_ outlier: FrameOutlier, _ cause: FrameOutlierCause?) -> FrameOutlierVerdict {
        guard outlier.isSingleFrame else { return .playersMoved }
        return ofSingle(offCadence: outlier.offCadence, cause)
    }

    /// The verdict on one frame (or flip) that came `offCadence` seconds off its player's own
    /// cadence (+ late).
    public static func ofSingle(offCadence: Double, _ cause: FrameOutlierCause?) -> FrameOutlierVerdict {
        guard let cause else { return .unexplained }
        // A speed change shows a frame due within about 10 ms at once; its report comes just after.
        if let since = cause.speedChangeBefore, since <= 0.015 { return .speedChange }
        if offCadence > 0, cause.runQueueWait >= 0.5 * offCadence { return .waitedForCPU }
        if cause.steal > 0 { return .steal }
        return .unexplained
    }
}

/// Snapshots, between frames, of how long each player's mpv threads have waited for a CPU and of
/// the VM's steal, so that a late frame can be matched with the wait in its frame period.
///
/// Threading: one thread (the observer's).
final class SchedulingRecorder {
    private let players: [(scheduling: ThreadScheduling, threads: [(tid: Int32, name: String)])]
    private var snapshots: [SchedulingTimeline.Snapshot] = []

    init(pids: [Int32]) {
        players = pids.map { pid in
            let scheduling = ThreadScheduling(pid: pid)
            let all = scheduling.threads()
            // The threads a frame waits on: mpv's core (the playloop; decoders inherit its name)
            // and its video output. Without such names, every thread counts.
            let mpv = all.filter { $0.name == "mpv/mpv core" || $0.name == "mpv/vo" }
            return (scheduling, mpv.isEmpty ? all : mpv)
        }
    }

    /// Takes a snapshot, unless the last one is less than `within` seconds old.
    func snapshot(unlessWithin within: Double = 0) {
        let now = monotonicNow()
        if let last = snapshots.last, now - last.at < within { return }
        let waits = players.map { player in player.threads.map { player.scheduling.runQueueWait(tid: $0.tid) ?? 0 } }
        snapshots.append(.init(at: now, waits: waits, steal: ThreadScheduling.steal()))
    }

    /// What was recorded, with each player's speed changes.
    func timeline(speedChanges: [[(at: Double, value: Double)]]) -> SchedulingTimeline {
        SchedulingTimeline(
            snapshots: snapshots, threadNames: players.map { $0.threads.map(\.name) }, speedChanges: speedChanges)
    }
}

/// What each player's mpv threads and the VM did over an observed window: the recorder's
/// snapshots and each player's speed changes, to find the cause of a late frame or flip.
public struct SchedulingTimeline: Sendable {
    struct Snapshot: Sendable {
        var at: Double
        /// Per player, per thread: seconds waited for a CPU so far.
        var waits: [[Double]]
        /// Seconds of steal so far, all CPUs.
        var steal: Double
    }

    let snapshots: [Snapshot]
    let threadNames: [[String]]
    let speedChanges: [[(at: Double, value: Double)]]

    /// Seconds of steal from `from` to `to`, as far as the snapshots around them tell (the
    /// kernel counts it in 10 ms ticks, at the tick after it happened).
    public func steal(from: Double, to: Double) -> Double {
        guard let first = snapshots.last(where: { $0.at <= from }) ?? snapshots.first,
            let last = snapshots.first(where: { $0.at >= to }) ?? snapshots.last
        else { return 0 }
        return last.steal - first.steal
    }

    /// What went on in `player` over the snapshot interval that holds `at` (local seconds).
    public func cause(player: Int, at: Double) -> FrameOutlierCause {
        var since: Double?
        var previous: Double?
        for change in speedChanges[player] where change.at <= at {
            if let previous, previous != change.value { since = at - change.at }
            previous = change.value
        }
        guard let j = snapshots.firstIndex(where: { $0.at >= at }), j > 0 else {
            return FrameOutlierCause(speedChangeBefore: since, runQueueWait: 0, waitedMost: "", waitedMostFor: 0, steal: 0)
        }
        let before = snapshots[j - 1], after = snapshots[j]
        let deltas = zip(after.waits[player], before.waits[player]).map { $0 - $1 }
        let top = deltas.indices.max { deltas[$0] < deltas[$1] }
        return FrameOutlierCause(
            speedChangeBefore: since.flatMap { $0 <= 0.5 ? $0 : nil }, runQueueWait: deltas.reduce(0, +),
            waitedMost: top.map { threadNames[player][$0] } ?? "", waitedMostFor: top.map { deltas[$0] } ?? 0,
            steal: after.steal - before.steal)
    }
}

/// The outliers of one or more windows as a table, one line a frame, and a count by verdict.
public enum FrameOutlierReport {
    /// One row per frame that one player showed out of its cadence, the `rows` furthest off (the
    /// others are only counted).
    public static func table(_ items: [(outlier: FrameOutlier, cause: FrameOutlierCause?)], title: String, rows: Int = 20) -> String {
        var lines = [
            "\(title): \(items.count) frames over 2 ms, \(items.filter { $0.outlier.isSingleFrame }.count) of them one player's single frame",
            "| skew | usual | player | off its cadence | its frames either side | speed change before | core+vo waited (longest) | steal | verdict |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        let singles = items.filter { $0.outlier.isSingleFrame }
        for (outlier, cause) in singles.sorted(by: { abs($0.outlier.offCadence) > abs($1.outlier.offCadence) }).prefix(rows) {
            let waited = cause.map { "\(ms($0.runQueueWait)) (\($0.waitedMost) \(ms($0.waitedMostFor)))" } ?? "–"
            lines.append(
                "| \(ms(outlier.skew)) | \(ms(outlier.usualSkew)) | \(outlier.player) | \(ms(outlier.offCadence)) | "
                    + "\(ms(outlier.neighboursOffCadence)) | \(ms(cause?.speedChangeBefore)) | \(waited) | \(ms(cause?.steal)) | "
                    + "\(FrameOutlierVerdict.of(outlier, cause).rawValue) |")
        }
        let counts = FrameOutlierVerdict.allCases.map { verdict in
            "\(verdict.rawValue): \(items.filter { FrameOutlierVerdict.of($0.outlier, $0.cause) == verdict }.count)"
        }
        lines.append("(ms) " + counts.joined(separator: "; "))
        return lines.joined(separator: "\n")
    }

    /// Flips (frames put on screen) over 2 ms off their player's cadence, a line each for the
    /// `rows` furthest off, and a count of all by verdict.
    public static func flips(_ items: [(off: Double, cause: FrameOutlierCause?)], rows: Int = 20) -> String {
        var lines = [
            "flips over 2 ms off their own cadence (mpv's record of frames put on screen): \(items.count)",
            "| off its cadence | speed change before | core+vo waited (longest) | steal | verdict |", "|---|---|---|---|---|",
        ]
        for (off, cause) in items.sorted(by: { abs($0.off) > abs($1.off) }).prefix(rows) {
            let waited = cause.map { "\(ms($0.runQueueWait)) (\($0.waitedMost) \(ms($0.waitedMostFor)))" } ?? "–"
            lines.append(
                "| \(ms(off)) | \(ms(cause?.speedChangeBefore)) | \(waited) | \(ms(cause?.steal)) | "
                    + "\(FrameOutlierVerdict.ofSingle(offCadence: off, cause).rawValue) |")
        }
        let counts = FrameOutlierVerdict.allCases.filter { $0 != .playersMoved }.map { verdict in
            "\(verdict.rawValue): \(items.filter { FrameOutlierVerdict.ofSingle(offCadence: $0.off, $0.cause) == verdict }.count)"
        }
        lines.append("(ms) " + counts.joined(separator: "; "))
        return lines.joined(separator: "\n")
    }

    static func ms(_ value: Double?) -> String {
        guard let value else { return "–" }
        return "\((value * 10_000).rounded() / 10)"
    }
}
