/// The room server's clock as seen from ours: a line through (`anchorLocal`, `offset`) with slope `skew`.
///
/// Threading: a plain value; cheap to copy.
public struct ReferenceClockEstimate: Sendable, Equatable {
    /// Reference minus local, at local instant `anchorLocal`.
    public var offset: Double
    public var anchorLocal: Double
    /// d(offset)/d(local), dimensionless (20e-6 = 20 ppm); 0 until the samples span enough time.
    public var skew: Double
    /// Wire round trip of the sample `offset` comes from.
    public var roundTrip: Double
    /// Bound on |true offset - `offset`| at `anchorLocal`: the sample's `roundTrip / 2` aged by
    /// `skewUncertainty` for the time since it was taken.
    public var uncertainty: Double
    /// Bound on |true skew - `skew`|: how fast the error may grow away from `anchorLocal`.
    public var skewUncertainty: Double

    public init(
        offset: Double, anchorLocal: Double, skew: Double,
        roundTrip: Double, uncertainty: Double, skewUncertainty: Double
    ) {
        self.offset = offset
        self.anchorLocal = anchorLocal
        self.skew = skew
        self.roundTrip = roundTrip
        self.uncertainty = uncertainty
        self.skewUncertainty = skewUncertainty
    }

    public func reference(atLocal local: Double) -> Double {
        local + offset + skew * (local - anchorLocal)
    }

    /// Inverse of `reference(atLocal:)`.
    public func local(atReference reference: Double) -> Double {
        anchorLocal + (reference - anchorLocal - offset) / (1 + skew)
    }

    /// Bound on the error of `reference(atLocal:)` at `local`.
    public func uncertainty(atLocal local: Double) -> Double {
        uncertainty + skewUncertainty * abs(local - anchorLocal)
    }
}
