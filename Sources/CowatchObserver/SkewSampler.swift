import CowatchClient
import Foundation
import CowatchCore

/// Measures how far apart players are, from outside the daemons' own bookkeeping.
///
/// Each round reads every player's clock (`get_property`, the raw mpv value: `audio-pts` for media
/// with audio, `time-pos` otherwise) and notes the CLOCK_MONOTONIC instants just before and after
/// each read. Give it clients of the players' own mpv IPC sockets (`DaemonProcess.playerProbe`)
/// for an observer independent of cowatchd; control-socket clients work too. Every reading is carried to one common instant at
/// the group rate, and the round's skew is the largest pairwise difference.
///
/// A reading is only known to within half its read's round trip: on a loaded machine mpv's IPC
/// thread may answer milliseconds late, and that delay is the observer's, not the players'. So
/// each player is read up to `attempts` times, and the read with the shortest round trip is kept
/// (as NTP keeps its tightest exchange); reading stops early once one is within `tightRoundTrip`.
/// The round's `uncertainty` is the sum of the two largest half round trips kept, a bound on how
/// much the observer itself can have added to the skew. Audio-pts is smooth; time-pos moves in
/// whole frames, so video-only rounds resolve only to one frame.
public struct SkewSampler {
    public let clients: [ControlClient]
    public let property: String
    /// Reads per player at most, keeping the tightest (1: a single read, the old way).
    public let attempts: Int
    /// A read whose round trip is at most this is kept at once, seconds.
    public let tightRoundTrip: Double

    public init(clients: [ControlClient], property: String = "audio-pts", attempts: Int = 4, tightRoundTrip: Double = 0.0003) {
        self.clients = clients
        self.property = property
        self.attempts = max(1, attempts)
        self.tightRoundTrip = tightRoundTrip
    }

    /// One round: every player's position carried to a common instant, and the observer's
    /// uncertainty in the differences between them (seconds).
    public struct Round: Sendable {
        public let positions: [Double]
        public let uncertainty: Double
        public var skew: Double { (positions.max() ?? 0) - (positions.min() ?? 0) }
    }

    /// Reads one player: the tightest of up to `attempts` reads.
    private func read(_ client: ControlClient) -> (position: Double, at: Double, halfTrip: Double)? {
        var best: (position: Double, at: Double, halfTrip: Double)?
        for _ in 0..<attempts {
            let before = monotonicNow()
            guard let value = (try? client.request(.getProperty(property), timeout: 5))?.numberValue else { return nil }
            let after = monotonicNow()
            let halfTrip = (after - before) / 2
            if best == nil || halfTrip < best!.halfTrip { best = (value, (before + after) / 2, halfTrip) }
            if after - before <= tightRoundTrip { break }
        }
        return best
    }

    /// One round of readings; nil when a player has no value.
    public func round(rate: Double) -> Round? {
        var readings: [(position: Double, at: Double, halfTrip: Double)] = []
        for client in clients {
            guard let reading = read(client) else { return nil }
            readings.append(reading)
        }
        guard let common = readings.first?.at else { return nil }
        let trips = readings.map(\.halfTrip).sorted(by: >)
        return Round(
            positions: readings.map { $0.position + rate * (common - $0.at) },
            uncertainty: trips.prefix(2).reduce(0, +))
    }

    /// One reading per player, carried to a common instant; nil when a player has no value.
    public func positions(rate: Double) -> [Double]? {
        round(rate: rate)?.positions
    }

    /// `count` rounds, `interval` seconds apart.
    public func rounds(count: Int, interval: Double, rate: Double) -> [Round] {
        var rounds: [Round] = []
        for _ in 0..<count {
            if let round = round(rate: rate) { rounds.append(round) }
            sleepSeconds(interval)
        }
        return rounds
    }

    /// The largest pairwise difference among players now, seconds.
    public func skew(rate: Double) -> Double? {
        round(rate: rate)?.skew
    }

    /// `count` rounds, `interval` seconds apart; returns the per-round skews.
    public func sample(count: Int, interval: Double, rate: Double) -> [Double] {
        rounds(count: count, interval: interval, rate: rate).map(\.skew)
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
