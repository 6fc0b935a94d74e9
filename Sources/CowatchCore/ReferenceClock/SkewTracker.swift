/// Long-term skew from the lower envelope of the offsets: the min-RTT sample of each time bucket.
///
/// Each envelope sample confines the true offset line to `offset ± halfWidth` at its midpoint, so
/// every pair bounds the slope exactly; a least-squares fit (to use all points, not just the
/// extremes) is clamped into those bounds, and the bounds say how wrong the fit can be.
/// Threading: a value type; one owner mutates it.
struct SkewTracker: Sendable {
    private struct Point: Sendable {
        var bucket: Double
        var sample: ClockSample
        var halfWidth: Double
    }

    /// Sorted by bucket, hence by midpoint.
    private var envelope: [Point] = []
    private(set) var skew = 0.0
    /// Bound on |true skew - `skew`|, assuming additive delays and constant drift.
    private(set) var skewError: Double

    init(maxSkew: Double) {
        skewError = maxSkew
    }

    mutating func add(_ sample: ClockSample, newest: Double, configuration c: ReferenceClockEstimator.Configuration) {
        let point = Point(
            bucket: (sample.midpoint / c.skewBucket).rounded(.down),
            sample: sample,
            halfWidth: sample.halfWidth(maxSkew: c.maxSkewError)
        )
        if let i = envelope.firstIndex(where: { $0.bucket >= point.bucket }) {
            if envelope[i].bucket == point.bucket {
                if point.halfWidth < envelope[i].halfWidth { envelope[i] = point }
            } else {
                envelope.insert(point, at: i)
            }
        } else {
            envelope.append(point)
        }
        let cutoff = newest - c.skewHistory
        envelope.removeAll { $0.sample.midpoint < cutoff }
        refit(c)
    }

    private mutating func refit(_ c: ReferenceClockEstimator.Configuration) {
        let prior = c.maxSkewError
        var lo = -Double.infinity
        var hi = Double.infinity
        for i in envelope.indices {
            let a = envelope[i]
            for b in envelope[(i + 1)...] {
                let dt = b.sample.midpoint - a.sample.midpoint
                guard dt > 0 else { continue }
                lo = max(lo, ((b.sample.offset - b.halfWidth) - (a.sample.offset + a.halfWidth)) / dt)
                hi = min(hi, ((b.sample.offset + b.halfWidth) - (a.sample.offset - a.halfWidth)) / dt)
            }
        }
        if lo > hi {
            // The data contradict the model (delay not additive, or drift changed): trust only the prior.
            (lo, hi) = (-prior, prior)
        } else if max(lo, -prior) <= min(hi, prior) {
            (lo, hi) = (max(lo, -prior), min(hi, prior))
        }  // else the prior was wrong and the data alone are consistent: keep the data bounds.

        var fitted = 0.0
        if let first = envelope.first, let last = envelope.last,
            last.sample.midpoint - first.sample.midpoint >= c.skewMinSpan
        {
            fitted = leastSquaresSlope() ?? 0
        }
        skew = min(max(fitted, lo), hi)
        skewError = max(skew - lo, hi - skew)
    }

    /// Centered, so large clock values do not cancel catastrophically.
    private func leastSquaresSlope() -> Double? {
        let n = Double(envelope.count)
        let mx = envelope.reduce(0) { $0 + $1.sample.midpoint } / n
        let my = envelope.reduce(0) { $0 + $1.sample.offset } / n
        var sxx = 0.0
        var sxy = 0.0
        for p in envelope {
            let dx = p.sample.midpoint - mx
            sxx += dx * dx
            sxy += dx * (p.sample.offset - my)
        }
        return sxx > 0 ? sxy / sxx : nil
    }
}
