import CowatchClient
import CowatchCore

/// Skew for video-only media, where `time-pos` moves in whole frames: polls every player's
/// `time-pos` round-robin as fast as the control sockets answer, and notes the instant each
/// player first shows each frame. For a frame every player showed, the spread of those instants
/// (times the rate) is the skew. Resolution: the poll round (≈1 ms for three players).
public struct FrameSkewSampler {
    public let clients: [ControlClient]

    public init(clients: [ControlClient]) {
        self.clients = clients
    }

    /// Polls for `seconds`; returns one skew per frame that all players were seen to change to.
    public func sample(seconds: Double, rate: Double) -> [Double] {
        var lastSeen: [Double?] = Array(repeating: nil, count: clients.count)
        var lastAt: [Double] = Array(repeating: 0, count: clients.count)
        var firstShown: [[Double: Double]] = Array(repeating: [:], count: clients.count)
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
                    firstShown[index][key] = (lastAt[index] + after) / 2
                }
                lastSeen[index] = position
                lastAt[index] = before
            }
        }
        var skews: [Double] = []
        for (frame, instant) in firstShown[0] {
            var instants = [instant]
            for other in firstShown.dropFirst() {
                guard let seen = other[frame] else { break }
                instants.append(seen)
            }
            if instants.count == clients.count, let low = instants.min(), let high = instants.max() {
                skews.append((high - low) * rate)
            }
        }
        return skews
    }
}
