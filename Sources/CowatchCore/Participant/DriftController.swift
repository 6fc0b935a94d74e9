/// Decides how to bring a player back onto the group timeline.
///
/// Small errors are corrected by playing slightly faster or slower (quantised to `speedStep` so
/// mpv's speed changes only when the correction really changes: each change costs scaletempo2 a
/// little work); large errors by seeking. The speed correction is proportional: an error `e`
/// asks for `rate * (1 - e / correctionTime)`, clamped to `maxAdjust`, which removes the error
/// with time constant `correctionTime` and returns to the group rate as it vanishes.
///
/// Threading: a value type; one owner.
public struct DriftController: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Seconds: past this error, seek instead of nudging. Default 0.25 s.
        public var seekThreshold: Double
        /// Seconds: the time constant of speed correction. Default 0.5 s.
        public var correctionTime: Double
        /// Seconds: the time constant for the first `startWindow` after a start (`started`).
        /// A player's first audio after an unpause (a fresh load, a seek's hold) lands a
        /// millisecond or more off, at random; steady play has nothing like it, and a short
        /// constant there would only chase the clock's noise (the daemon sets it to
        /// `correctionTime` for media without audio, whose frame clock is noisy). Used only once
        /// the output's delay is measured (`outputDelayMeasured`), and never below twice it
        /// (see `startConstant`). Default 0.2 s.
        public var startCorrectionTime: Double
        /// Seconds after a start during which `startCorrectionTime` applies. Default 1 s.
        public var startWindow: Double
        /// Largest relative speed change used for correction. Default 0.05 (±5 %).
        public var maxAdjust: Double
        /// Speed corrections are multiples of this. Default 0.001 (0.1 %).
        public var speedStep: Double
        /// Seconds after a seek during which no new seek is ordered (the player is settling). Default 1 s.
        public var seekCooldown: Double
        /// Seconds added to a seek target while playing, for the time the seek itself takes. Default 0.03 s.
        public var seekLead: Double
        /// Seconds of error left alone: below the noise of the clock in use there is nothing to
        /// correct, and chasing noise only makes the player wobble. Default 0 (audio-pts is smooth);
        /// the daemon uses 1 ms for frame-based clocks.
        public var deadband: Double

        public init(
            seekThreshold: Double = 0.25, correctionTime: Double = 0.5, maxAdjust: Double = 0.05,
            speedStep: Double = 0.001, seekCooldown: Double = 1.0, seekLead: Double = 0.03, deadband: Double = 0,
            startCorrectionTime: Double = 0.2, startWindow: Double = 1
        ) {
            self.startCorrectionTime = startCorrectionTime
            self.startWindow = startWindow
            self.deadband = deadband
            self.seekThreshold = seekThreshold
            self.correctionTime = correctionTime
            self.maxAdjust = maxAdjust
            self.speedStep = speedStep
            self.seekCooldown = seekCooldown
            self.seekLead = seekLead
        }
    }

    public enum Decision: Sendable, Equatable {
        /// Play at this speed (the group rate, or a nudged one).
        case speed(Double)
        /// Seek to this media position.
        case seek(Double)
    }

    public let configuration: Configuration
    private var lastSeekAt: Double = -.infinity
    private var awaitingSeekResult = false
    /// The seek lead in use: starts at the configured one and learns from each seek's landing.
    public private(set) var learnedSeekLead: Double?
    /// Corrections ordered so far (for reports and benchmarks).
    public private(set) var nudges = 0
    public private(set) var seeks = 0
    private var lastSpeed: Double?
    /// When the player last started moving (`started`).
    private var startedAt = -Double.infinity
    /// The last few measures of the audio output's delay (`outputDelayMeasured`), newest last.
    private var outputDelays: [Double] = []

    /// The audio output's delay, seconds: the median of the last five measures; nil before any.
    public var outputDelay: Double? {
        guard !outputDelays.isEmpty else { return nil }
        return outputDelays.sorted()[outputDelays.count / 2]
    }

    /// The time constant in a start's window. mpv reports audio-pts as what it wrote minus the
    /// output's delay times the *current* speed, so each speed change of Δ shows at once as a
    /// step of −delay·Δ, against the correction; with a constant near the delay the controller
    /// chases its own steps (measured: mpv's 0.2 s null output at 0.2 s swung players ±10 %,
    /// 65 ms apart; a measured delay of 95 ms at 0.2 s settled within 0.5 ms). Twice the delay
    /// keeps the step half the error it corrects at most; never slower than the steady
    /// constant; the steady one while the delay is unknown.
    var startConstant: Double {
        guard let delay = outputDelay else { return configuration.correctionTime }
        return min(configuration.correctionTime, max(configuration.startCorrectionTime, 2 * delay))
    }

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// - Parameters:
    ///   - error: actual minus expected position, seconds (positive: this player is ahead).
    ///   - expected: the expected position now.
    ///   - rate: the group rate.
    ///   - now: local seconds (for the seek cooldown).
    public mutating func update(error: Double, expected: Double, rate: Double, now: Double) -> Decision {
        let lead = learnedSeekLead ?? configuration.seekLead
        if awaitingSeekResult {
            // The first reading after a seek shows how long seeking really took: lead the next
            // seek by that much (smoothed, bounded), so late joins and big corrections land closer.
            awaitingSeekResult = false
            if abs(error) < configuration.seekThreshold {
                learnedSeekLead = min(0.5, max(0, lead - 0.5 * error / max(rate, 0.01)))
            }
        }
        if abs(error) > configuration.seekThreshold && now - lastSeekAt >= configuration.seekCooldown {
            lastSeekAt = now
            seeks += 1
            lastSpeed = nil
            awaitingSeekResult = true
            return .seek(expected + rate * lead)
        }
        // Relative to the rate, so the error decays with the time constant whatever the rate.
        let constant = now - startedAt < configuration.startWindow ? startConstant : configuration.correctionTime
        let wanted = abs(error) <= configuration.deadband ? 0 : -error / (constant * max(rate, 0.01))
        // Past 20 ms (a late start, a seek landing a frame off) twice the band is allowed, so the
        // error is gone in a few hundred ms instead of a second; tempo changes that short are mild.
        let band = abs(error) > 0.02 ? 2 * configuration.maxAdjust : configuration.maxAdjust
        let clamped = min(band, max(-band, wanted))
        let steps = (clamped / configuration.speedStep).rounded()
        let speed = rate * (1 + steps * configuration.speedStep)
        if speed != lastSpeed && steps != 0 { nudges += 1 }
        lastSpeed = speed
        return .speed(speed)
    }

    /// The player was told to start moving at `now` (local seconds): for `startWindow`, errors
    /// decay with `startCorrectionTime`.
    public mutating func started(at now: Double) {
        startedAt = now
    }

    /// A speed change of the player showed its audio output's delay (`seconds`: the step in
    /// audio-pts over minus the change). Measures outside 0…2 s are noise, and ignored.
    public mutating func outputDelayMeasured(_ seconds: Double) {
        guard seconds.isFinite, seconds >= 0, seconds <= 2 else { return }
        outputDelays.append(seconds)
        if outputDelays.count > 5 { outputDelays.removeFirst() }
    }

    /// Forget the last speed (after the player's speed was set from elsewhere).
    public mutating func reset() {
        lastSpeed = nil
    }
}
