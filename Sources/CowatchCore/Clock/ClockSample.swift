/// One NTP-style four-timestamp exchange with the room server, in seconds.
///
/// `t1`/`t4` are read from our monotonic clock (local), `t2`/`t3` from the server's (reference).
/// Threading: a plain value; cheap to copy.
public struct ClockSample: Sendable, Equatable {
    /// Client send time (local clock).
    public var t1: Double
    /// Server receive time (reference clock).
    public var t2: Double
    /// Server send time (reference clock).
    public var t3: Double
    /// Client receive time (local clock).
    public var t4: Double

    public init(t1: Double, t2: Double, t3: Double, t4: Double) {
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
        self.t4 = t4
    }

    /// Time spent on the wire: the exchange minus the server's processing time.
    public var roundTrip: Double { (t4 - t1) - (t3 - t2) }

    /// Reference minus local. Whatever the split of `roundTrip` between the two directions,
    /// this is off from the truth (at `midpoint`) by at most `roundTrip / 2`.
    public var offset: Double { ((t2 - t1) + (t3 - t4)) / 2 }

    /// The local instant `offset` refers to.
    public var midpoint: Double { t1 + (t4 - t1) / 2 }

    /// Whether the timestamps can come from a real exchange: all finite, causal, non-negative wire time.
    public var isPlausible: Bool {
        t1.isFinite && t2.isFinite && t3.isFinite && t4.isFinite
            && t4 >= t1 && t3 >= t2 && roundTrip.isFinite && roundTrip >= 0
    }

    /// Upper bound on the true offset at `midpoint`: the request took no less than no time.
    /// Drift of at most `maxSkew` during the exchange bends the arithmetic by at most
    /// `maxSkew * (t4 - t1)`. The interval down to `lowerOffset` is `roundTrip` (plus that) wide.
    func upperOffset(maxSkew: Double) -> Double {
        (t2 - t1) + maxSkew * (t4 - t1)
    }

    /// Lower bound on the true offset at `midpoint`: the reply took no less than no time.
    func lowerOffset(maxSkew: Double) -> Double {
        (t3 - t4) - maxSkew * (t4 - t1)
    }
}
