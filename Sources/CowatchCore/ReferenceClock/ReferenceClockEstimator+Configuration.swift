extension ReferenceClockEstimator {
    /// Tuning for probing and estimation. All times are local seconds.
    public struct Configuration: Sendable, Equatable {
        /// Probes sent `burstInterval` apart until this many samples were accepted (after start or
        /// `reset()`), so a fresh connection gets a good min-RTT sample within a fraction of a second.
        public var burstCount: Int
        public var burstInterval: Double
        /// Steady-state probe period.
        public var interval: Double
        /// Recent samples kept for the offset; at most this many, none older than `maxSampleAge`
        /// (relative to the newest sample). Short, so a route change shows up quickly.
        public var window: Int
        public var maxSampleAge: Double
        /// Skew is fitted only once the long-term samples span at least this long; 0 before.
        public var skewMinSpan: Double
        /// Long-term skew history: one min-RTT sample per `skewBucket` seconds, for `skewHistory` seconds.
        /// Long, because offset noise over a short span swamps a few ppm of drift.
        public var skewBucket: Double
        public var skewHistory: Double
        /// Assumed bound on the clocks' relative drift: the skew error while none is fitted, and
        /// the prior a fitted skew is clamped to. Two crystals of ±50 ppm each can differ by 100 ppm.
        public var maxSkewError: Double

        public init(
            burstCount: Int = 8,
            burstInterval: Double = 0.05,
            interval: Double = 1.0,
            window: Int = 16,
            maxSampleAge: Double = 60,
            skewMinSpan: Double = 20,
            skewBucket: Double = 10,
            skewHistory: Double = 300,
            maxSkewError: Double = 100e-6
        ) {
            self.burstCount = burstCount
            self.burstInterval = burstInterval
            self.interval = interval
            self.window = window
            self.maxSampleAge = maxSampleAge
            self.skewMinSpan = skewMinSpan
            self.skewBucket = skewBucket
            self.skewHistory = skewHistory
            self.maxSkewError = maxSkewError
        }
    }
}
