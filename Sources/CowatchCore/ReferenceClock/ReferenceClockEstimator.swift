/// NTP-style estimate of the room server's monotonic clock (the reference clock) as seen from ours.
///
/// Feed it four-timestamp exchanges; it keeps a short window of recent samples and takes the
/// offset from the best one — normally the minimum-RTT sample, because network delay only ever
/// adds, so its error is bounded by RTT/2 however the RTT splits between the two directions,
/// whereas averaging would average in the jitter. Skew comes from a longer history (see
/// `SkewTracker`) and carries the offset forward between samples. As long as delays are additive
/// and the drift stays within `Configuration.maxSkewError` (or within what the data prove), the
/// estimate is never further from the truth than its reported uncertainty.
///
/// Time is injected: it never reads a clock. Threading: a value type; not safe to mutate
/// concurrently — one owner calls `add`. All operations are cheap (bounded by the window sizes).
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
        precondition(configuration.burstInterval > 0 && configuration.interval > 0)
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

        recentSamples.append(sample)
        let cutoff = newest - configuration.maxSampleAge
        recentSamples.removeAll { $0.t4 < cutoff }
        if recentSamples.count > configuration.window {
            recentSamples.removeFirst(recentSamples.count - configuration.window)
        }
        skewTracker.add(sample, newest: newest, configuration: configuration)
        return true
    }

    /// The reference clock at local instant `now` (which becomes `anchorLocal`), or nil before
    /// the first accepted sample. Picks the window sample with the smallest error bound at `now`
    /// — its RTT/2 aged by the skew error — which is the min-RTT one unless it is much older.
    public func estimate(atLocal now: Double) -> ReferenceClockEstimate? {
        let skew = skewTracker.skew
        let skewError = skewTracker.skewError
        func bound(_ s: ClockSample) -> Double {
            s.halfWidth(maxSkew: configuration.maxSkewError) + skewError * abs(now - s.midpoint)
        }
        let best = recentSamples.min { a, b in
            let (ba, bb) = (bound(a), bound(b))
            return ba != bb ? ba < bb : a.roundTrip < b.roundTrip
        }
        guard let best else { return nil }
        return ReferenceClockEstimate(
            offset: best.offset + skew * (now - best.midpoint),
            anchorLocal: now,
            skew: skew,
            roundTrip: best.roundTrip,
            uncertainty: bound(best),
            skewUncertainty: skewError
        )
    }

    /// When to send the next probe, given when the last one was sent. The burst lasts until
    /// `burstCount` samples were accepted, so probes lost during it are made up for.
    public func nextProbe(after lastSent: Double) -> Double {
        lastSent + (sampleCount < configuration.burstCount ? configuration.burstInterval : configuration.interval)
    }

    /// Forgets everything, e.g. after reconnecting (possibly to a different server).
    public mutating func reset() {
        self = ReferenceClockEstimator(configuration: configuration)
    }
}
