import CowatchClient
import CowatchCore

/// The instants at which mpv put each video frame on screen, from its own record, and how far
/// apart the players did that.
///
/// `time-pos` is not that instant: mpv's playloop sets it when it hands the *next* frame to the
/// video output, which it does when woken right after the output shows a frame (the output thread
/// sleeps to each frame's target time and shows it there, the playloop thread queues the next
/// one). A playloop that waits for a CPU reports its frame late while the frame itself went on
/// screen on time. With `--dump-stats=FILE` mpv logs `start video-flip` with its own clock at
/// every frame it shows; `get_time_us` over IPC maps that clock to CLOCK_MONOTONIC.
///
/// Threading: value types and pure functions, apart from `clockOffset`, which reads a socket.
public enum FlipSkew {
    /// The instants (seconds of mpv's clock) of every `start video-flip` in a `--dump-stats`
    /// file's text, in order.
    public static func flips(statsText: String) -> [Double] {
        statsText.split(separator: "\n").compactMap { line in
            guard line.hasSuffix("start video-flip"), let space = line.firstIndex(of: " "), let micros = Double(line[..<space])
            else { return nil }
            return micros / 1e6
        }
    }

    /// CLOCK_MONOTONIC minus mpv's clock (seconds), from the tightest of `reads` `get_time_us`
    /// requests: within half that read's round trip.
    public static func clockOffset(_ client: ControlClient, reads: Int = 20) throws -> (offset: Double, roundTrip: Double) {
        var best: (offset: Double, roundTrip: Double)?
        for _ in 0..<reads {
            let before = monotonicNow()
            guard let micros = try client.request([.string("get_time_us")], timeout: 5).numberValue else { continue }
            let after = monotonicNow()
            if best == nil || after - before < best!.roundTrip {
                best = ((before + after) / 2 - micros / 1e6, after - before)
            }
        }
        guard let best else { throw TestFailure("mpv gave no get_time_us") }
        return best
    }

    /// For each frame player 0 showed between `from` and `to` (CLOCK_MONOTONIC seconds; every
    /// list already on that clock), the spread of the instants at which all players showed it.
    /// Frames are matched by time: each other player's nearest flip within `window` seconds (half
    /// a frame at 25 fps); a frame some player has none for there is left out.
    public static func skews(_ flips: [[Double]], from: Double, to: Double, window: Double = 0.02) -> [Double] {
        guard let reference = flips.first else { return [] }
        return reference.filter { $0 >= from && $0 <= to }.compactMap { at in
            var instants = [at]
            for other in flips.dropFirst() {
                guard let nearest = nearest(to: at, in: other), abs(nearest - at) <= window else { return nil }
                instants.append(nearest)
            }
            return (instants.max() ?? 0) - (instants.min() ?? 0)
        }
    }

    /// How far each flip of one player between `from` and `to` lies from its own cadence (+ late):
    /// the median of the 10 flips either side carried to it at their median period. Stretches
    /// with a gap (a pause or seek: a period over 1.5 times the median) are left out.
    public static func offCadence(_ flips: [Double], from: Double, to: Double, span: Int = 10) -> [(at: Double, off: Double)] {
        guard flips.count > 2 * span else { return [] }
        var result: [(at: Double, off: Double)] = []
        for i in span..<(flips.count - span) where flips[i] >= from && flips[i] <= to {
            let window = Array(flips[(i - span)...(i + span)])
            let periods = zip(window.dropFirst(), window).map { $0 - $1 }
            guard let period = FrameCadence.median(periods), period > 0, periods.allSatisfy({ $0 < 1.5 * period }) else { continue }
            let predicted = window.enumerated().filter { $0.offset != span }.map { $0.element + Double(span - $0.offset) * period }
            if let usual = FrameCadence.median(predicted) { result.append((flips[i], flips[i] - usual)) }
        }
        return result
    }

    static func nearest(to t: Double, in sorted: [Double]) -> Double? {
        guard !sorted.isEmpty else { return nil }
        var low = 0, high = sorted.count - 1
        while low < high {
            let mid = (low + high) / 2
            if sorted[mid] < t { low = mid + 1 } else { high = mid }
        }
        let after = sorted[low]
        guard low > 0 else { return after }
        let before = sorted[low - 1]
        return abs(after - t) < abs(before - t) ? after : before
    }
}
