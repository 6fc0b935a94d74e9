/// The floor of a delay-like series: the line through the lowest point of its first third and
/// the lowest point of its last third.
///
/// Network delay only ever adds, so the floor of such a series is the signal and everything above
/// it is noise of any size and any tail: a least-squares line follows the noise, this one does not.
/// The minimum of m points lies within about range/m of the floor, so the slope's error falls like
/// 1/n (not 1/√n) for jitter with a hard floor, and stalls, retransmits and heavy tails cost nothing.
/// Taking whole thirds (rather than the edge of the lower convex hull at the middle, whose two
/// corners can be close together) keeps the two points a third of the span apart or more.
/// Threading: a plain value.
struct FloorLine: Sendable, Equatable {
    var x0: Double
    var y0: Double
    var slope: Double

    init(x0: Double, y0: Double, slope: Double) {
        self.x0 = x0
        self.y0 = y0
        self.slope = slope
    }

    /// - Parameter points: sorted by `x` ascending. Nil when they span no time.
    init?(under points: [(x: Double, y: Double)]) {
        guard let first = points.first, let last = points.last, last.x > first.x else { return nil }
        let third = (last.x - first.x) / 3
        var a = first
        var b = last
        for p in points {
            if p.x <= first.x + third, p.y < a.y { a = p }
            if p.x >= last.x - third, p.y < b.y { b = p }
        }
        x0 = a.x
        y0 = a.y
        slope = (b.y - a.y) / (b.x - a.x)
    }

    func value(at x: Double) -> Double { y0 + slope * (x - x0) }
}
