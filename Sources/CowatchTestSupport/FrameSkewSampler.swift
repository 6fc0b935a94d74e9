import CowatchClient
import CowatchCore

/// Skew for video-only media, where `time-pos` moves in whole frames: polls every player's
/// `time-pos` round-robin as fast as the control sockets answer, and notes the instant each
/// player first shows each frame. For a frame every player showed, the spread of those instants
/// (times the rate) is the skew. Each instant is only known to lie between two reads; frames
/// where that bracket is wider than `maxBracket` for any player (a slow answer) are left out
/// rather than reported as skew, so the figure's resolution is ± `maxBracket` / 2.
public struct FrameSkewSampler {
    public let clients: [ControlClient]
    public let maxBracket: Double

    public init(clients: [ControlClient], maxBracket: Double = 0.002) {
        self.clients = clients
        self.maxBracket = maxBracket
    }

    /// Polls for `seconds`; returns one skew per frame that all players were seen to change to.
    public func sample(seconds: Double, rate: Double) -> [Double] {
        frames(seconds: seconds, rate: rate).map { frame in
            let values = [0.0] + frame.offsets
            return (values.max() ?? 0) - (values.min() ?? 0)
        }
    }

    /// Polls for `seconds`; for each frame every player was seen to change to (well bracketed),
    /// when player 0 showed it and how far ahead each other player was (seconds of media).
    public func frames(seconds: Double, rate: Double) -> [(at: Double, offsets: [Double])] {
        var lastSeen: [Double?] = Array(repeating: nil, count: clients.count)
        var lastAt: [Double] = Array(repeating: 0, count: clients.count)
        var firstShown: [[Double: (at: Double, bracket: Double)]] = Array(repeating: [:], count: clients.count)
        let end = monotonicNow() + seconds
        while monotonicNow() < end {
            for (index, client) in clients.enumerated() {
                let before = monotonicNow()
                guard let position = (try? client.request(.getProperty("time-pos"), timeout: 5))?.numberValue else {
                    continue
                }
                let after = monotonicNow()
                if let previous = lastSeen[index], position != previous {
                    // Changed somewhere between the previous read and this one.
                    let key = (position * 1000).rounded() / 1000
                    firstShown[index][key] = ((lastAt[index] + after) / 2, after - lastAt[index])
                }
                lastSeen[index] = position
                lastAt[index] = before
            }
        }
        var result: [(at: Double, offsets: [Double])] = []
        for (frame, first) in firstShown[0] where first.bracket <= maxBracket {
            var instants = [first.at]
            for other in firstShown.dropFirst() {
                guard let seen = other[frame], seen.bracket <= maxBracket else { break }
                instants.append(seen.at)
            }
            if instants.count == clients.count {
                // Showing a frame earlier means being ahead.
                result.append((first.at, instants.dropFirst().map { (first.at - $0) * rate }))
            }
        }
        return result.sorted { $0.at < $1.at }
    }
}
