import CowatchClient
import CowatchCore

#if canImport(Glibc)
import Glibc
#endif

/// Skew for video-only media, where `time-pos` moves in whole frames: polls every player's
/// `time-pos` round-robin, as fast as the sockets answer while a frame is due, and notes the instant each
/// player first shows each frame. For a frame every player showed, the spread of those instants
/// (times the rate) is the skew. Each instant is only known to lie between two reads; frames
/// where that bracket is wider than `maxBracket` for any player (a slow answer) are left out
/// rather than reported as skew, so the figure's resolution is ± `maxBracket` / 2.
///
/// Polling without pause keeps a core and every daemon's control socket busy, and on a small
/// machine that load itself makes a player's frame late (its playloop wakes late). So once every
/// player's frame period is known the sampler sleeps between frames and polls only from `margin`
/// before the earliest player's next frame is due until every player has shown it. A player whose
/// frame comes more than `margin` early shows as a wide bracket and that frame is left out, as a
/// slow answer's is; `dense` polls all the time, as before.
public struct FrameSkewSampler {
    public let clients: [ControlClient]
    public let maxBracket: Double
    public let dense: Bool
    public let margin: Double

    public init(clients: [ControlClient], maxBracket: Double = 0.002, dense: Bool = false, margin: Double = 0.006) {
        self.clients = clients
        self.maxBracket = maxBracket
        self.dense = dense
        self.margin = margin
    }

    /// Polls for `seconds`; returns one skew per frame that all players were seen to change to.
    public func sample(seconds: Double, rate: Double) -> [Double] {
        observe(seconds: seconds, rate: rate).skews
    }

    /// Polls for `seconds`; for each frame every player was seen to change to (well bracketed),
    /// when player 0 showed it and how far ahead each other player was (seconds of media).
    public func frames(seconds: Double, rate: Double) -> [(at: Double, offsets: [Double])] {
        observe(seconds: seconds, rate: rate).frames
    }

    /// Polls for `seconds` and returns every player's frame instants, the frames' offsets as
    /// `frames` does, and, for each frame whose skew exceeds `threshold`, which player broke its
    /// cadence and what was going on then. With `diagnose` (each player's process id, in the
    /// order of `clients`) it also reads, between frames, how long each player's threads waited
    /// for a CPU and the VM's steal, and watches each player's `speed` on a connection of its own.
    public func observe(seconds: Double, rate: Double, threshold: Double = 0.002, diagnose: [Int32]? = nil) -> FrameObservation {
        var lastSeen: [Double?] = Array(repeating: nil, count: clients.count)
        var lastAt: [Double] = Array(repeating: 0, count: clients.count)
        var firstShown: [[Double: ShownFrame]] = Array(repeating: [:], count: clients.count)
        // Each player's last change (local instant) and media step between frames.
        var lastChange: [Double?] = Array(repeating: nil, count: clients.count)
        var step: [Double?] = Array(repeating: nil, count: clients.count)
        let recorder = diagnose.map { SchedulingRecorder(pids: $0) }
        let speeds = diagnose == nil ? [] : clients.map { try? PropertyWatcher(path: $0.path, property: "speed") }
        defer { for watcher in speeds { watcher?.stop() } }
        recorder?.snapshot()
        let end = monotonicNow() + seconds
        while monotonicNow() < end {
            if !dense, let due = nextDue(lastChange: lastChange, step: step, rate: rate) {
                let wait = min(due - margin, end) - monotonicNow()
                if wait > 0 {
                    recorder?.snapshot(unlessWithin: 0.01)
                    usleep(UInt32(min(wait, 0.1) * 1e6))
                    continue
                }
            } else if dense {
                recorder?.snapshot(unlessWithin: 0.02)
            }
            for (index, client) in clients.enumerated() {
                let before = monotonicNow()
                guard let position = (try? client.request(.getProperty("time-pos"), timeout: 5))?.numberValue else {
                    continue
                }
                let after = monotonicNow()
                if let previous = lastSeen[index], position != previous {
                    // Changed somewhere between the previous read and this one.
                    let key = (position * 1000).rounded() / 1000
                    firstShown[index][key] = ShownFrame(at: (lastAt[index] + after) / 2, bracket: after - lastAt[index])
                    lastChange[index] = (lastAt[index] + after) / 2
                    let moved = position - previous
                    step[index] = moved > 0 && moved < 0.2 ? moved : nil
                }
                lastSeen[index] = position
                lastAt[index] = before
            }
        }
        recorder?.snapshot()
        let outliers = FrameCadence.outliers(shown: firstShown, maxBracket: maxBracket, rate: rate, threshold: threshold)
        let timeline = recorder?.timeline(speedChanges: speeds.map { $0?.changes ?? [] })
        let causes = outliers.map { outlier in
            timeline?.cause(player: outlier.player, at: firstShown[outlier.player][outlier.position]?.at ?? outlier.at)
        }
        return FrameObservation(
            frames: Self.skews(firstShown, maxBracket: maxBracket, rate: rate), shown: firstShown,
            outliers: outliers, causes: causes, timeline: timeline)
    }

    /// When the earliest player's next frame is due, or nil while some player's period is not known.
    private func nextDue(lastChange: [Double?], step: [Double?], rate: Double) -> Double? {
        var due = Double.infinity
        for (change, step) in zip(lastChange, step) {
            guard let change, let step, rate > 0 else { return nil }
            due = min(due, change + step / rate)
        }
        return due
    }

    private static func skews(
        _ firstShown: [[Double: ShownFrame]], maxBracket: Double, rate: Double
    ) -> [(at: Double, offsets: [Double])] {
        var result: [(at: Double, offsets: [Double])] = []
        for (frame, first) in firstShown[0] where first.bracket <= maxBracket {
            var instants = [first.at]
            for other in firstShown.dropFirst() {
                guard let seen = other[frame], seen.bracket <= maxBracket else { break }
                instants.append(seen.at)
            }
            if instants.count == firstShown.count {
                // Showing a frame earlier means being ahead.
                result.append((first.at, instants.dropFirst().map { (first.at - $0) * rate }))
            }
        }
        return result.sorted { $0.at < $1.at }
    }
}
