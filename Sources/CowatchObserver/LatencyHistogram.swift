import CowatchCore
import Foundation

/// Latencies in log-spaced buckets (1 % wide), so many processes can each count millions of
/// samples in a few kilobytes and the benchmark can merge them before taking percentiles.
///
/// Threading: a value type; one owner.
public struct LatencyHistogram: Sendable, Equatable {
    /// Bucket index → samples in it.
    public private(set) var buckets: [Int: Int] = [:]
    public private(set) var count = 0

    static let base = 1.01
    static let unit = 1e-6  // the first bucket holds everything up to 1 µs

    public init() {}

    public mutating func record(_ seconds: Double) {
        let index = seconds <= Self.unit ? 0 : Int((log(seconds / Self.unit) / log(Self.base)).rounded(.up))
        buckets[index, default: 0] += 1
        count += 1
    }

    public mutating func merge(_ other: LatencyHistogram) {
        for (index, samples) in other.buckets { buckets[index, default: 0] += samples }
        count += other.count
    }

    /// The `fraction` quantile in seconds (the upper edge of its bucket: at most 1 % high); nil when empty.
    public func quantile(_ fraction: Double) -> Double? {
        guard count > 0 else { return nil }
        let wanted = max(1, Int((fraction * Double(count)).rounded(.up)))
        var seen = 0
        for index in buckets.keys.sorted() {
            seen += buckets[index]!
            if seen >= wanted { return Self.unit * pow(Self.base, Double(index)) }
        }
        return nil
    }

    /// `{"bucket": count, …}` for a pipe between processes.
    public var json: JSONValue {
        .object(Dictionary(uniqueKeysWithValues: buckets.map { ("\($0.key)", JSONValue.number(Double($0.value))) }))
    }

    public init(json: JSONValue?) {
        for (key, value) in json?.objectValue ?? [:] {
            guard let index = Int(key), let samples = value.numberValue, samples >= 0 else { continue }
            buckets[index, default: 0] += Int(samples)
            count += Int(samples)
        }
    }
}
