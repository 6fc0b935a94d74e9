extension ReferenceClockEstimator {
    /// Tuning for probing and estimation. All times are local seconds.
    public struct Configuration: Sendable, Equatable {
        /// Probes sent `burstInterval` apart until this many samples were accepted (after start or
        /// `reset()`), so a fresh connection gets a usable estimate within a fraction of a second.
        public var burstCount: Int
        public var burstInterval: Double
        /// Steady-state probe period on a quiet path.
        public var interval: Double
        /// Probe period while the path is noisy (recent round trips spread over `noisySpread`):
        /// the floors are found by many samples, and a probe is a few dozen bytes.
        public var noisyInterval: Double
        public var noisySpread: Double
        /// Samples kept for the offset; at most this many, none older than `maxSampleAge`
        /// (relative to the newest sample): a minute at the noisy rate. Long, so each direction's floor is
        /// found under jitter; the skew carries the older ones forward.
        public var window: Int
        public var maxSampleAge: Double
        /// Skew is fitted only once the skew history spans at least this long; 0 (or the last
        /// fit, after a route change) before.
        public var skewMinSpan: Double
        /// The skew bound intersects samples in buckets of `skewBucket` seconds, for `skewHistory`
        /// seconds. Long, because offset noise over a short span swamps a few ppm of drift.
        public var skewBucket: Double
        public var skewHistory: Double
        /// A direction's floor that moves by more than this (one sample under it, or all of the
        /// last `routeChangeWindow` seconds above it) is a route change: the skew fit restarts.
        public var routeChangeThreshold: Double
        public var routeChangeWindow: Double
        /// Assumed bound on the clocks' relative drift: the skew error while none is fitted, and
        /// the prior a fitted skew is clamped to. Two crystals of ±50 ppm each can differ by 100 ppm.
        public var maxSkewError: Double
        /// The offset's centre (not its bound) comes from exchanges at most this old: the larger
        /// of `minCentreWindow` and `centreWindowPerFitSpan` times the span the skew was fitted
        /// over. A young fit's error, carried over a minute, would move the centre by more than
        /// the older exchanges' floors improve it.
        public var minCentreWindow: Double
        public var centreWindowPerFitSpan: Double
        /// How far apart two clocks' rates usually are (one standard deviation). CLOCK_MONOTONIC
        /// follows NTP's frequency corrections, so two disciplined machines differ by a few ppm;
        /// two free crystals by up to `maxSkewError`. A fit is pulled toward zero by
        /// prior² / (prior² + scatter²), its scatter measured from the data: young fits on noisy
        /// paths a lot, long ones hardly. The bound (`skewError`) is unaffected. 0 turns it off.
        public var skewPrior: Double

        public init(
            burstCount: Int = 8,
            burstInterval: Double = 0.05,
            interval: Double = 1.0,
            noisyInterval: Double = 0.1,
            noisySpread: Double = 0.002,
            window: Int = 600,
            maxSampleAge: Double = 60,
            skewMinSpan: Double = 30,
            skewBucket: Double = 2,
            skewHistory: Double = 300,
            routeChangeThreshold: Double = 0.005,
            routeChangeWindow: Double = 10,
            maxSkewError: Double = 100e-6,
            minCentreWindow: Double = 30,
            centreWindowPerFitSpan: Double = 0.5,
            skewPrior: Double = 30e-6
        ) {
            self.burstCount = burstCount
            self.burstInterval = burstInterval
            self.interval = interval
            self.noisyInterval = noisyInterval
            self.noisySpread = noisySpread
            self.window = window
            self.maxSampleAge = maxSampleAge
            self.skewMinSpan = skewMinSpan
            self.skewBucket = skewBucket
            self.skewHistory = skewHistory
            self.routeChangeThreshold = routeChangeThreshold
            self.routeChangeWindow = routeChangeWindow
            self.maxSkewError = maxSkewError
            self.minCentreWindow = minCentreWindow
            self.centreWindowPerFitSpan = centreWindowPerFitSpan
            self.skewPrior = skewPrior
        }
    }
}
