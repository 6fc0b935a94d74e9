/// When a player first showed a frame, as the observer saw it: the middle of the two reads around
/// the change, and how far apart those reads were (the instant is known to ± half of that).
public struct ShownFrame: Sendable, Equatable {
    public var at: Double
    public var bracket: Double

    public init(at: Double, bracket: Double) {
        self.at = at
        self.bracket = bracket
    }
}

/// A video frame whose skew stood out from the frames around it, and which player's own cadence
/// broke there.
///
/// A player shows frames on a fixed cadence (every frame period, divided by its speed); its
/// *phase* at a frame is the instant it showed it minus the frame's position over the rate. The
/// group's sync moves every phase slowly (a correction takes hundreds of milliseconds); a thread
/// woken late moves one frame's phase and leaves the next one where it was.
public struct FrameOutlier: Sendable, Equatable {
    /// The frame's media position, and when player 0 showed it (local seconds).
    public var position: Double
    public var at: Double
    /// The frame's skew (largest minus smallest instant, at the rate), seconds of media.
    public var skew: Double
    /// The median skew of the well-seen frames around it.
    public var usualSkew: Double
    /// The player furthest from its own cadence at this frame.
    public var player: Int
    /// Seconds that player showed the frame after (+) or before (−) its cadence.
    public var offCadence: Double
    /// The largest |offCadence| of that player's frames right before and right after (nil when
    /// neither was seen well).
    public var neighboursOffCadence: Double?

    /// One player showed this one frame out of its cadence, by most of the extra skew, and was on
    /// its cadence for the frames either side: a late (or early) frame of that player, not a
    /// change in how far apart the players are.
    public var isSingleFrame: Bool {
        abs(offCadence) >= 0.001 && abs(offCadence) >= 0.5 * (skew - usualSkew)
            && (neighboursOffCadence.map { $0 < 0.001 } ?? false)
    }
}

/// Finds the frames whose skew stands out and tells which player broke its cadence there.
/// Pure: the observer's records in, outliers out.
public enum FrameCadence {
    /// - `shown[p]`: for player `p`, frame position (rounded to the millisecond) → when it was
    ///   first shown. Frames whose bracket exceeds `maxBracket` for some player are not used.
    /// - `threshold`: a frame is an outlier when its skew exceeds this (seconds of media).
    /// - `span`: frames either side that set the usual skew and each player's cadence.
    public static func outliers(
        shown: [[Double: ShownFrame]], maxBracket: Double, rate: Double, threshold: Double, span: Int = 10
    ) -> [FrameOutlier] {
        guard let first = shown.first, rate > 0 else { return [] }
        // Each player's well-seen phases in order of position.
        let phases: [[(position: Double, phase: Double)]] = shown.map { frames in
            frames.filter { $0.value.bracket <= maxBracket }.map { ($0.key, $0.value.at - $0.key / rate) }.sorted { $0.0 < $1.0 }
        }
        let index: [[Double: Int]] = phases.map { list in
            Dictionary(uniqueKeysWithValues: list.enumerated().map { ($0.element.position, $0.offset) })
        }
        // Frames every player showed well, with their skew.
        let common: [(position: Double, at: Double, skew: Double)] = first.keys.sorted().compactMap { position in
            var instants: [Double] = []
            for frames in shown {
                guard let seen = frames[position], seen.bracket <= maxBracket else { return nil }
                instants.append(seen.at)
            }
            return (position, instants[0], ((instants.max() ?? 0) - (instants.min() ?? 0)) * rate)
        }
        var result: [FrameOutlier] = []
        for (k, frame) in common.enumerated() where frame.skew > threshold {
            let around = common[max(0, k - span)..<min(common.count, k + span + 1)].enumerated()
                .filter { $0.offset != min(k, span) }.map(\.element.skew)
            var worst: (player: Int, off: Double, neighbours: Double?)?
            for player in shown.indices {
                guard let i = index[player][frame.position],
                    let off = offCadence(phases[player], at: i, span: span)
                else { continue }
                if worst == nil || abs(off) > abs(worst!.off) {
                    let neighbours = [i - 1, i + 1].filter { phases[player].indices.contains($0) }
                        .compactMap { offCadence(phases[player], at: $0, span: span).map(abs) }.max()
                    worst = (player, off, neighbours)
                }
            }
            guard let worst else { continue }
            result.append(
                FrameOutlier(
                    position: frame.position, at: frame.at, skew: frame.skew, usualSkew: median(around) ?? 0,
                    player: worst.player, offCadence: worst.off * rate, neighboursOffCadence: worst.neighbours.map { $0 * rate }))
        }
        return result
    }

    /// How far frame `i`'s phase is from the median of up to `span` frames either side (not
    /// counting itself); nil with fewer than four of them.
    static func offCadence(_ phases: [(position: Double, phase: Double)], at i: Int, span: Int) -> Double? {
        let others = phases[max(0, i - span)..<min(phases.count, i + span + 1)].enumerated()
            .filter { $0.offset != i - max(0, i - span) }.map(\.element.phase)
        guard others.count >= 4, let usual = median(others) else { return nil }
        return phases[i].phase - usual
    }

    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
