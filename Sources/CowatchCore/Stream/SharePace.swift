/// How fast a sharer's film streams may send (issue 25, `cowatchd --share-rate TOTAL[,EACH]`):
/// bytes a second for all streams together and for each receiver; 0 means unlimited.
///
/// Threading: a value type, safe to share.
public struct SharingRate: Sendable, Hashable {
    /// Bytes a second all streams together may send (0: unlimited).
    public var total: Double
    /// Bytes a second one receiver's streams may take (0: unlimited).
    public var perReceiver: Double

    public init(total: Double = 0, perReceiver: Double = 0) {
        self.total = total
        self.perReceiver = perReceiver
    }

    /// Nothing limited.
    public static let unlimited = SharingRate()
}

/// Paces a sharer's streams fairly: a token bucket for the total and one per receiver.
///
/// Each receiver's bucket fills at its fair part of the total, never above its own cap
/// (`perReceiver`). The fair part is max-min fair: a receiver that takes less than an equal
/// share (a player reading at the film's bitrate, a slow link) keeps what it takes, and the
/// receivers that would take more (they come back as soon as they are let, `greedyGap`) share
/// the rest equally, so a greedy receiver cannot starve a slow one and bandwidth a slow one
/// leaves is not wasted. A receiver that stops asking leaves the reckoning `window` seconds
/// after its last send. The total's bucket is the hard limit while the shares shift.
///
/// Buckets hold a quarter second of bytes (as `TransferPace`) and go into debt: the caller waits
/// the delay it is given, then sends, so a piece larger than a burst is paid for afterwards.
/// Callers pace pieces much smaller than a second of bytes, so the shares hold closely.
///
/// Threading: a value type; one owner. Time is injected.
public struct SharePace: Sendable {
    public let rate: SharingRate
    /// Seconds a receiver's rate is measured over, and counts as active after its last send.
    public static let window = 1.0
    /// A receiver asking again within this many seconds of being let wants more than it gets.
    public static let greedyGap = 0.05
    /// Seconds of bytes a bucket holds at most.
    static let burstSeconds = 0.25

    private var total = Bucket()
    private var receivers: [String: Receiver] = [:]

    public init(rate: SharingRate) {
        self.rate = SharingRate(total: max(0, rate.total), perReceiver: max(0, rate.perReceiver))
    }

    /// Seconds `receiver` waits before sending `bytes` more (0: at once); the bytes are counted
    /// either way, so the caller sends them after the wait.
    public mutating func delay(for bytes: Int, to receiver: String, now: Double) -> Double {
        guard rate.total > 0 || rate.perReceiver > 0 else { return 0 }
        receivers = receivers.filter { $0.key == receiver || $0.value.busyUntil + Self.window >= now }
        var entry = receivers[receiver] ?? Receiver()
        if now - entry.busyUntil <= Self.greedyGap { entry.greedyAt = now }
        let cap = rate.perReceiver > 0 ? rate.perReceiver : Double.infinity
        var own = cap
        if rate.total > 0 {
            let others = receivers.filter { $0.key != receiver }.values.map { other in
                now - other.greedyAt <= Self.window ? cap : min(cap, other.meter.rate(now: now))
            }
            own = min(cap, Self.fairLevel(total: rate.total, others: others))
        }
        var wait = entry.bucket.take(bytes, rate: own, now: now)
        if rate.total > 0 { wait = max(wait, total.take(bytes, rate: rate.total, now: now)) }
        entry.busyUntil = now + wait
        entry.meter.add(bytes, now: now)
        receivers[receiver] = entry
        return wait
    }

    /// The receivers that count at `now` (for tests and status).
    public func active(now: Double) -> Set<String> {
        Set(receivers.filter { $0.value.busyUntil + Self.window >= now }.keys)
    }

    /// Water-filling: the rate a receiver that wants all it can get may take when the others
    /// take `others` (each at most that; infinity: all they can get) out of `total`.
    static func fairLevel(total: Double, others: [Double]) -> Double {
        var remaining = total
        var sharing = Double(others.count + 1)
        for demand in others.sorted() where demand.isFinite {
            guard demand < remaining / sharing else { break }
            remaining -= demand
            sharing -= 1
        }
        return remaining / sharing
    }

    private struct Bucket {
        var tokens = 0.0
        var at: Double?

        /// Refills at `rate` (up to a burst; full the first time), takes `bytes`; returns the
        /// wait until the debt is paid.
        mutating func take(_ bytes: Int, rate: Double, now: Double) -> Double {
            guard rate.isFinite else { return 0 }
            let burst = rate * SharePace.burstSeconds
            tokens = at.map { min(burst, tokens + max(0, now - $0) * rate) } ?? burst
            at = now
            tokens -= Double(bytes)
            return tokens >= 0 ? 0 : -tokens / rate
        }
    }

    private struct Receiver {
        var bucket = Bucket()
        /// When its last send may go (its debt paid).
        var busyUntil = -Double.infinity
        /// When it last came back as soon as it was let.
        var greedyAt = -Double.infinity
        var meter = RateMeter()
    }

    /// Bytes a second over about the last `window` seconds: the bytes of the window now filling
    /// and the part of the previous one it does not yet cover.
    private struct RateMeter {
        var start = -Double.infinity
        var current = 0.0
        var previous = 0.0

        mutating func add(_ bytes: Int, now: Double) {
            roll(now)
            current += Double(bytes)
        }

        func rate(now: Double) -> Double {
            var meter = self
            meter.roll(now)
            let uncovered = max(0, 1 - (now - meter.start) / SharePace.window)
            return (meter.previous * uncovered + meter.current) / SharePace.window
        }

        private mutating func roll(_ now: Double) {
            guard now >= start + SharePace.window else { return }
            if now >= start + 2 * SharePace.window {
                previous = 0
                start = now
            } else {
                previous = current
                start += SharePace.window
            }
            current = 0
        }
    }
}
