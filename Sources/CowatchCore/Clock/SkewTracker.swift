/// Long-term skew: the slope of each direction's delay floor, with a bound the data prove.
///
/// Every exchange confines the true offset at its midpoint to [`t3 - t4`, `t2 - t1`] (each
/// direction's delay is ≥ 0). The upper ends sit one up-delay above the offset line, the lower ends
/// one down-delay below it; each has a floor (the path's fixed delay) and only noise above it.
/// The fit is the slope of the floor of the upper ends and of the ceiling of the lower ends
/// (`FloorLine`), averaged: jitter, stalls and retransmits lift points off a floor but never
/// move the floor. The bound comes from pairs of short buckets (each the intersection
/// of its samples' intervals), and the fit is clamped into it. Before that, a fit is pulled toward
/// zero by how its scatter compares to `Configuration.skewPrior`: young fits on noisy paths a lot.
///
/// A route change moves a floor: a point far under the fitted floor, or every point of the last
/// `routeChangeWindow` far above it, restarts the fit (the bound keeps its buckets: intervals stay
/// true whatever the path).
/// Threading: a value type; one owner mutates it.
struct SkewTracker: Sendable {
    private struct Point: Sendable {
        var at: Double
        var hi: Double
        var lo: Double
    }

    private struct Bucket: Sendable {
        var index: Double
        var at: Double
        var hi: Double
        var lo: Double
    }

    /// The fit's points, sorted by `at` (midpoints).
    private var points: [Point] = []
    /// The bound's buckets, sorted by index.
    private var buckets: [Bucket] = []
    private(set) var skew = 0.0
    /// How long a span of exchanges the current `skew` was fitted over; 0 before the first fit.
    private(set) var fitSpan = 0.0
    /// Bound on |true skew - `skew`|, assuming additive delays and constant drift.
    private(set) var skewError: Double
    /// The envelopes last fitted (upper ends' floor, lower ends' ceiling), for route changes.
    private var upper: FloorLine?
    private var lower: FloorLine?
    /// Route changes seen (restarts of the fit).
    private(set) var routeChanges = 0
    /// Recent fits (when, skew), so a restart can go back to one made before the route changed:
    /// the points that arrived before it was noticed have already bent the latest fits.
    private var fits: [(at: Double, skew: Double)] = []
    /// How far above its floor the lowest point of a `routeChangeWindow` rose before, at most:
    /// the jitter a route change must stand out from.
    private var noise = 0.0
    /// The bucket of the last refit: the fit and bound are redone once per bucket, not per sample.
    private var fittedBucket: Double?

    init(maxSkew: Double) {
        skewError = maxSkew
    }

    mutating func add(_ sample: ClockSample, newest: Double, configuration c: ReferenceClockEstimator.Configuration) {
        let point = Point(at: sample.midpoint, hi: sample.upperOffset(maxSkew: c.maxSkewError), lo: sample.lowerOffset(maxSkew: c.maxSkewError))
        if routeChanged(by: point, newest: newest, c) {
            routeChanges += 1
            points.removeAll { $0.at < newest - c.routeChangeWindow }
            (upper, lower) = (nil, nil)
            if let before = fits.last(where: { $0.at < newest - c.routeChangeWindow }) { skew = before.skew }
            fitSpan = 0
            fits = []
        }
        let i = points.lastIndex { $0.at <= point.at }.map { $0 + 1 } ?? 0
        points.insert(point, at: i)
        let cutoff = newest - c.skewHistory
        if let first = points.first, first.at < cutoff { points.removeAll { $0.at < cutoff } }
        addToBucket(point, c)
        if let first = buckets.first, first.at < cutoff { buckets.removeAll { $0.at < cutoff } }
        let bucket = (newest / c.skewBucket).rounded(.down)
        if bucket != fittedBucket {
            fittedBucket = bucket
            refit(c)
        }
    }

    /// A floor moved: this point lies well beyond a fitted floor (the path got shorter), or all of
    /// the recent ones lie well inside it (it got longer). "Well" is `routeChangeThreshold` plus
    /// the most the lowest point of a `routeChangeWindow` rose above the floor before: jitter
    /// alone does neither.
    private func routeChanged(by point: Point, newest: Double, _ c: ReferenceClockEstimator.Configuration) -> Bool {
        guard let upper, let lower else { return false }
        func gaps(_ p: Point) -> (up: Double, down: Double) {
            (p.hi - upper.value(at: p.at), lower.value(at: p.at) - p.lo)
        }
        let threshold = c.routeChangeThreshold + noise
        let g = gaps(point)
        if g.up < -threshold || g.down < -threshold { return true }
        let recentStart = newest - c.routeChangeWindow
        let recent = points.reversed().prefix { $0.at >= recentStart } + [point]
        guard recent.count >= 8, let oldest = recent.dropLast().last, point.at - oldest.at >= c.routeChangeWindow / 2 else {
            return false
        }
        let recentGaps = recent.map(gaps)
        return recentGaps.map(\.up).min()! > threshold || recentGaps.map(\.down).min()! > threshold
    }

    /// Each earlier window's lowest gap to the floors, the largest of them (see `noise`).
    private func windowNoise(upper: FloorLine, lower: FloorLine, _ c: ReferenceClockEstimator.Configuration) -> Double {
        guard let first = points.first, let last = points.last else { return 0 }
        var noise = 0.0
        var windowEnd = first.at + c.routeChangeWindow
        var lowest = (up: Double.infinity, down: Double.infinity)
        for p in points where p.at < last.at - c.routeChangeWindow {
            if p.at >= windowEnd {
                if lowest.up.isFinite { noise = max(noise, lowest.up, lowest.down) }
                lowest = (.infinity, .infinity)
                while windowEnd <= p.at { windowEnd += c.routeChangeWindow }
            }
            lowest = (min(lowest.up, p.hi - upper.value(at: p.at)), min(lowest.down, lower.value(at: p.at) - p.lo))
        }
        return noise
    }

    /// Intersects the point's interval, carried to the bucket's centre, into its bucket. Carrying
    /// with an unknown skew of at most `maxSkewError` widens it by that times the distance.
    private mutating func addToBucket(_ point: Point, _ c: ReferenceClockEstimator.Configuration) {
        let index = (point.at / c.skewBucket).rounded(.down)
        let centre = (index + 0.5) * c.skewBucket
        let widen = c.maxSkewError * abs(point.at - centre)
        let carried = Bucket(index: index, at: centre, hi: point.hi + widen, lo: point.lo - widen)
        if let i = buckets.lastIndex(where: { $0.index <= index }) {
            if buckets[i].index == index {
                buckets[i].hi = min(buckets[i].hi, carried.hi)
                buckets[i].lo = max(buckets[i].lo, carried.lo)
            } else {
                buckets.insert(carried, at: i + 1)
            }
        } else {
            buckets.insert(carried, at: 0)
        }
    }

    private mutating func refit(_ c: ReferenceClockEstimator.Configuration) {
        let prior = c.maxSkewError
        var lo = -Double.infinity
        var hi = Double.infinity
        for i in buckets.indices {
            let a = buckets[i]
            for b in buckets[(i + 1)...] {
                let dt = b.at - a.at
                lo = max(lo, (b.lo - a.hi) / dt)
                hi = min(hi, (b.hi - a.lo) / dt)
            }
        }
        if lo > hi {
            // The data contradict the model (delay not additive, or drift changed): trust only the prior.
            (lo, hi) = (-prior, prior)
        } else if max(lo, -prior) <= min(hi, prior) {
            (lo, hi) = (max(lo, -prior), min(hi, prior))
        }  // else the prior was wrong and the data alone are consistent: keep the data bounds.

        if let first = points.first, let last = points.last, last.at - first.at >= c.skewMinSpan,
            let upper = FloorLine(under: points.map { (x: $0.at, y: $0.hi) }),
            let negatedLower = FloorLine(under: points.map { (x: $0.at, y: -$0.lo) })
        {
            self.upper = upper
            lower = FloorLine(x0: negatedLower.x0, y0: -negatedLower.y0, slope: -negatedLower.slope)
            let fitted = (upper.slope - negatedLower.slope) / 2
            // A young fit on a noisy path is off by tens of ppm, and carried over the offset's
            // window that is milliseconds: weigh it against the prior (clock rates rarely differ
            // by much) by its own scatter. A long fit's scatter is small and it stands as fitted.
            let scatter = Self.scatter(of: points)
            let prior = c.skewPrior * c.skewPrior
            skew = prior > 0 ? fitted * prior / (prior + scatter * scatter) : fitted
            fitSpan = last.at - first.at
            noise = windowNoise(upper: upper, lower: lower!, c)
            fits.append((last.at, skew))
            fits.removeAll { $0.at < last.at - 3 * c.routeChangeWindow }
        }  // else keep the last fitted skew (0 at first), until the new points span enough
        skew = min(max(skew, lo), hi)
        skewError = max(skew - lo, hi - skew)
    }

    /// The fit's standard error, from the data: the same fit on four interleaved quarters of the
    /// points, their standard deviation halved (a quarter of the points, about twice the error).
    /// 0 when a quarter spans no time.
    private static func scatter(of points: [Point]) -> Double {
        let k = 4
        var skews: [Double] = []
        for r in 0..<k {
            let subset = stride(from: r, to: points.count, by: k).map { points[$0] }
            guard let u = FloorLine(under: subset.map { (x: $0.at, y: $0.hi) }),
                let l = FloorLine(under: subset.map { (x: $0.at, y: -$0.lo) })
            else { return 0 }
            skews.append((u.slope - l.slope) / 2)
        }
        let mean = skews.reduce(0, +) / Double(k)
        let variance = skews.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(k - 1)
        return variance.squareRoot() / 2
    }
}
