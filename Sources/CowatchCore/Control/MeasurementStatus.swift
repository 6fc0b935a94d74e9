/// The `clock` section of `get_status`: the estimate of the room server's reference clock.
///
/// Threading: a value type, safe to share.
/// Errors: the decoder throws `malformed-control-message` (see `ControlFields`).
public struct ClockStatus: Sendable, Hashable {
    /// Seconds to add to this machine's monotonic clock to read the reference clock.
    public var offset: Double
    /// Round-trip time to the server, seconds.
    public var rtt: Double
    /// ± seconds the offset may be off by.
    public var uncertainty: Double
    /// The rate difference of the two clocks.
    public var skew: Double
    /// Time samples the estimate rests on.
    public var samples: Int

    public init(offset: Double, rtt: Double, uncertainty: Double, skew: Double, samples: Int) {
        self.offset = offset
        self.rtt = rtt
        self.uncertainty = uncertainty
        self.skew = skew
        self.samples = samples
    }

    public var json: JSONValue {
        [
            "offset": .number(offset), "rtt": .number(rtt), "uncertainty": .number(uncertainty), "skew": .number(skew),
            "samples": .count(samples),
        ]
    }

    public init(_ fields: ControlFields) throws(CowatchError) {
        offset = try fields.number("offset")
        rtt = try fields.number("rtt")
        uncertainty = try fields.number("uncertainty")
        skew = try fields.optionalNumber("skew") ?? 0
        samples = try fields.optionalCount("samples") ?? 0
    }

    /// Reads a `clock` section. Errors: `malformed-control-message`.
    public init(json: JSONValue) throws(CowatchError) {
        try self.init(ControlFields(json, what: "the clock status"))
    }
}

/// The `drift` section of `get_status`: how far this player is from the group, and what the
/// drift controller did about it.
///
/// Threading: a value type, safe to share.
/// Errors: the decoder throws `malformed-control-message` (see `ControlFields`).
public struct DriftStatus: Sendable, Hashable {
    /// Seconds ahead (positive) of the group; nil while the player does not follow a playing group.
    public var error: Double?
    /// What the position is read from: `audio-pts` or `frames`.
    public var source: String
    /// Speed nudges and corrective seeks so far.
    public var nudges: Int
    public var seeks: Int
    /// The player's own speed (the group's rate with a nudge), when readable.
    public var playerSpeed: Double?
    /// Where the group is now, seconds into the media.
    public var expected: Double?
    /// Seconds a start is scheduled ahead of the unpause.
    public var unpauseLead: Double
    /// How late the last start was, seconds.
    public var startLate: Double?
    /// When the last pause order arrived and when the player's pause was set (`pause_arrived`,
    /// `pause_set`: the daemon's monotonic clock, seconds).
    public var pause: PauseTiming
    /// The audio output's delay, seconds, as speed changes measured it (`output_delay`); nil
    /// before any.
    public var outputDelay: Double?

    public init(
        error: Double?, source: String, nudges: Int, seeks: Int, playerSpeed: Double?, expected: Double?,
        unpauseLead: Double, startLate: Double?, pause: PauseTiming = PauseTiming(), outputDelay: Double? = nil
    ) {
        self.outputDelay = outputDelay
        self.error = error
        self.source = source
        self.nudges = nudges
        self.seeks = seeks
        self.playerSpeed = playerSpeed
        self.expected = expected
        self.unpauseLead = unpauseLead
        self.startLate = startLate
        self.pause = pause
    }

    public var json: JSONValue {
        [
            "error": .finite(error), "source": .string(source), "nudges": .count(nudges), "seeks": .count(seeks),
            "player_speed": .finite(playerSpeed), "expected": .finite(expected), "unpause_lead": .number(unpauseLead),
            "start_late": .finite(startLate), "pause_arrived": .finite(pause.arrived), "pause_set": .finite(pause.set),
            "output_delay": .finite(outputDelay),
        ]
    }

    public init(_ fields: ControlFields) throws(CowatchError) {
        error = try fields.optionalNumber("error")
        source = try fields.optionalString("source") ?? "frames"
        nudges = try fields.optionalCount("nudges") ?? 0
        seeks = try fields.optionalCount("seeks") ?? 0
        playerSpeed = try fields.optionalNumber("player_speed")
        expected = try fields.optionalNumber("expected")
        unpauseLead = try fields.optionalNumber("unpause_lead") ?? 0
        startLate = try fields.optionalNumber("start_late")
        pause = PauseTiming(arrived: try fields.optionalNumber("pause_arrived"), set: try fields.optionalNumber("pause_set"))
        outputDelay = try fields.optionalNumber("output_delay")
    }

    /// Reads a `drift` section. Errors: `malformed-control-message`.
    public init(json: JSONValue) throws(CowatchError) {
        try self.init(ControlFields(json, what: "the drift status"))
    }
}
