/// NTP-style estimate of the room server's monotonic clock (the reference clock) as seen from ours.
///
/// Feed it four-timestamp exchanges. Each one proves the true offset lies between `t3 - t4` (the
/// reply took at least no time) and `t2 - t1` (nor did the request), whatever the two delays
/// were. The estimator keeps a long window of exchanges (`Configuration.window`, a minute),
/// carries each interval to now with the fitted skew (widened by the skew's error), and
/// intersects them: the bound is the tightest upper end and the tightest lower end, usually from
/// two different exchanges — minimum filtering of each direction separately, so the error is half
/// the difference of the two directions' floors, not half of one exchange's round trip. Jitter,
/// stalls, retransmits and reordering only ever add delay, so they can widen an exchange's
/// interval but never move the estimate: one stalled exchange cannot shift the offset. Skew comes
/// from the slopes of the same floors over minutes (see `SkewTracker`). As long as delays are
/// additive and the drift stays within `Configuration.maxSkewError` (or within what the data
/// prove), the estimate is never further from the truth than its reported uncertainty.
///
/// Time is injected: it never reads a clock. Threading: a value type; not safe to mutate
/// concurrently — one owner calls `add`. `estimate` costs O(window); `add` O(skew history).
public struct ReferenceClockEstimator: Sendable {
    public let configuration: Configuration
    /// Samples accepted since start or `reset()`.
    public private(set) var sampleCount = 0
    /// The window the offset is taken from, oldest first.
    public private(set) var recentSamples: [ClockSample] = []
    private var skewTracker: SkewTracker
    /// Latest local receive time seen; ages are measured from it, not from a clock.
    private var newest = -Double.infinity

    public init(configuration: Configuration = .init()) {
        precondition(configuration.burstCount >= 0 && configuration.window >= 1)
        precondition(configuration.burstInterval > 0 && configuration.interval > 0 && configuration.noisyInterval > 0)
        precondition(configuration.maxSampleAge >= 0 && configuration.skewHistory >= 0)
        precondition(configuration.skewBucket > 0 && configuration.maxSkewError >= 0)
        self.configuration = configuration
        skewTracker = SkewTracker(maxSkew: configuration.maxSkewError)
    }

    /// Adds one exchange. Returns false, changing nothing, for implausible samples (non-finite,
    /// t4 < t1, t3 < t2, negative round trip) and for ones already older than `maxSampleAge`.
    @discardableResult
    public mutating func add(_ sample: ClockSample) -> Bool {
        guard sample.isPlausible else { return false }
        let newest = max(self.newest, sample.t4)
        guard sample.t4 >= newest - configuration.maxSampleAge else { return false }
        self.newest = newest
        sampleCount += 1

        // Replies may come back out of order: keep the window sorted by receive time.
        let i = recentSamples.lastIndex { $0.t4 <= sample.t4 }.map { $0 + 1 } ?? 0
        recentSamples.insert(sample, at: i)
        let cutoff = newest - configuration.maxSampleAge
        if let oldest = recentSamples.first, oldest.t4 < cutoff { recentSamples.removeAll { $0.t4 < cutoff } }
        if recentSamples.count > configuration.window {
            recentSamples.removeFirst(recentSamples.count - configuration.window)
        }
        skewTracker.add(sample, newest: newest, configuration: configuration)
        return true
    }

    /// The reference clock at local instant `now` (which becomes `anchorLocal`), or nil before
    /// the first accepted sample.
    ///
    /// Walks the window from the newest exchange back, intersecting intervals carried to `now`;
    /// should an older one contradict the newer ones (the drift left its bound), it and everything
    /// older is ignored. The offset is the middle of the skew-carried extremes (without the
    /// widening, which would favour recent exchanges over better ones) of the exchanges within
    /// the centre window (`Configuration.minCentreWindow`), kept inside the bound.
    public func estimate(atLocal now: Double) -> ReferenceClockEstimate? {
        guard !recentSamples.isEmpty else { return nil }
        let maxSkew = configuration.maxSkewError
        let skew = skewTracker.skew
        let skewError = skewTracker.skewError
        var (lower, upper) = (-Double.infinity, Double.infinity)
        var (lowest, highest) = (-Double.infinity, Double.infinity)
        var roundTrip = Double.infinity
        let centreWindow = max(configuration.minCentreWindow, skewTracker.fitSpan * configuration.centreWindowPerFitSpan)
        for sample in recentSamples.reversed() {
            let age = now - sample.midpoint
            let hi = sample.upperOffset(maxSkew: maxSkew) + skew * age
            let lo = sample.lowerOffset(maxSkew: maxSkew) + skew * age
            let widen = skewError * abs(age)
            let (newLower, newUpper) = (max(lower, lo - widen), min(upper, hi + widen))
            if newLower > newUpper && lower > -.infinity { break }
            (lower, upper) = (newLower, newUpper)
            // The centre from recent exchanges only (the newest at least, should all be older).
            if age <= centreWindow || lowest == -.infinity { (lowest, highest) = (max(lowest, lo), min(highest, hi)) }
            roundTrip = min(roundTrip, sample.roundTrip)
        }
        let offset = min(max((lowest + highest) / 2, lower), upper)
        return ReferenceClockEstimate(
            offset: offset,
            anchorLocal: now,
            skew: skew,
            roundTrip: roundTrip,
            uncertainty: max(offset - lower, upper - offset),
            skewUncertainty: skewError
        )
    }

    /// When to send the next probe, given when the last one was sent. The burst lasts until
    /// `burstCount` samples were accepted, so probes lost during it are made up for. After it,
    /// probes come every `noisyInterval` while the path is noisy (more exchanges, better floors;
    /// they are tiny) and every `interval` while it is quiet.
    public func nextProbe(after lastSent: Double) -> Double {
        if sampleCount < configuration.burstCount { return lastSent + configuration.burstInterval }
        return lastSent + (isNoisy ? configuration.noisyInterval : configuration.interval)
    }

    /// The recent round trips spread wider than `noisySpread`: median minus minimum of the last 16.
    public var isNoisy: Bool {
        let trips = recentSamples.suffix(16).map(\.roundTrip).sorted()
        guard let least = trips.first else { return false }
        return trips[trips.count / 2] - least > configuration.noisySpread
    }

    /// Route changes detected so far (each restarts the skew fit); for status and tests.
    public var routeChanges: Int { skewTracker.routeChanges }

    /// Forgets everything, e.g. after reconnecting (possibly to a different server).
    public mutating func reset() {
        self = ReferenceClockEstimator(configuration: configuration)
    }
}
