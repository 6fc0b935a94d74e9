import CowatchClient
import Foundation
import CowatchCore

/// Measures how far apart players are, from outside the daemons' own bookkeeping.
///
/// Each round reads every player's clock (`get_property`, the raw mpv value: `audio-pts` for media
/// with audio, `time-pos` otherwise) and notes the CLOCK_MONOTONIC instants just before and after
/// each read. Give it clients of the players' own mpv IPC sockets (`DaemonProcess.playerProbe`)
/// for an observer independent of cowatchd; control-socket clients work too. Every reading is carried to one common instant at
/// the group rate, and the round's skew is the largest pairwise difference. The method's own
/// error is half the read round trip (≈0.1–0.3 ms) plus the property's resolution: audio-pts is
/// smooth, time-pos moves in whole frames, so video-only rounds resolve only to one frame.
public struct SkewSampler {
    public let clients: [ControlClient]
    public let property: String

    public init(clients: [ControlClient], property: String = "audio-pts") {
        self.clients = clients
        self.property = property
    }

    /// One reading per player, carried to a common instant; nil when a player has no value.
    public func positions(rate: Double) -> [Double]? {
        var readings: [(position: Double, at: Double)] = []
        for client in clients {
            let before = monotonicNow()
            guard let value = (try? client.request(.getProperty(property), timeout: 5))?.numberValue else { return nil }
            let after = monotonicNow()
            readings.append((value, (before + after) / 2))
        }
        guard let common = readings.first?.at else { return nil }
        return readings.map { $0.position + rate * (common - $0.at) }
    }

    /// The largest pairwise difference among players now, seconds.
    public func skew(rate: Double) -> Double? {
        guard let positions = positions(rate: rate), let low = positions.min(), let high = positions.max() else {
            return nil
        }
        return high - low
    }

    /// `count` rounds, `interval` seconds apart; returns the per-round skews.
    public func sample(count: Int, interval: Double, rate: Double) -> [Double] {
        var skews: [Double] = []
        for _ in 0..<count {
            if let skew = skew(rate: rate) { skews.append(skew) }
            sleepSeconds(interval)
        }
        return skews
    }

    /// Seconds until the skew stays below `bound` for `holdRounds` consecutive rounds; nil if not within `timeout`.
    public func timeToLock(bound: Double, rate: Double, timeout: Double, holdRounds: Int = 5, interval: Double = 0.02) -> Double? {
        let start = monotonicNow()
        var good = 0
        var firstGood: Double?
        while monotonicNow() - start < timeout {
            if let skew = skew(rate: rate), skew < bound {
                if good == 0 { firstGood = monotonicNow() }
                good += 1
                if good >= holdRounds, let firstGood { return firstGood - start }
            } else {
                good = 0
            }
            sleepSeconds(interval)
        }
        return nil
    }
}

/// Summary figures of a set of samples.
public struct Percentiles {
    public let p50: Double
    public let p99: Double
    public let max: Double
    public let count: Int

    public init?(_ values: [Double]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        func at(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int((q * Double(sorted.count - 1)).rounded()))] }
        p50 = at(0.5)
        p99 = at(0.99)
        max = sorted.last!
        count = sorted.count
    }
}

public func sleepSeconds(_ seconds: Double) {
    guard seconds > 0 else { return }
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 { request = remaining }
}
