import Foundation

/// Offsets of each player from the first one over time, as an observer saw them.
public struct Trace {
    public struct Point {
        /// Seconds since the trace began.
        public var t: Double
        /// Seconds each participant is ahead of participant 0 (nil where it had no reading).
        public var offsets: [Double?]

        public init(t: Double, offsets: [Double?]) {
            self.t = t
            self.offsets = offsets
        }
    }

    public var names: [String]
    public var points: [Point] = []

    public init(names: [String], points: [Point] = []) {
        self.names = names
        self.points = points
    }

    /// Pairwise skew of each point (largest minus smallest offset, participant 0 counting as 0).
    public var skews: [Double] {
        points.compactMap { point in
            let values = [0.0] + point.offsets.dropFirst().compactMap { $0 }
            guard values.count >= 2, let low = values.min(), let high = values.max() else { return nil }
            return high - low
        }
    }

    /// CSV: t, then one column per participant, offsets in milliseconds.
    public func csv() -> String {
        var lines = ["t_s," + names.map { "\($0)_ms" }.joined(separator: ",")]
        for point in points {
            let columns = point.offsets.map { $0.map { String(format: "%.3f", $0 * 1000) } ?? "" }
            lines.append(String(format: "%.3f", point.t) + "," + columns.joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A small SVG line plot of every participant's offset (ms) over time.
    public func svg(title: String) -> String {
        let width = 900.0, height = 320.0, left = 60.0, right = 20.0, top = 30.0, bottom = 40.0
        let tMax = max(points.last?.t ?? 1, 1)
        let all = points.flatMap { $0.offsets.compactMap { $0 } }.map { abs($0) * 1000 }
        let sorted = all.sorted()
        // Scale to the 99th percentile so one spike does not flatten the picture; clip beyond.
        let yMax = max(1, sorted.isEmpty ? 1 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * 0.99))] * 1.2)
        func x(_ t: Double) -> Double { left + (width - left - right) * t / tMax }
        func y(_ ms: Double) -> Double {
            let clipped = min(yMax, max(-yMax, ms))
            return top + (height - top - bottom) * (1 - (clipped + yMax) / (2 * yMax))
        }
        let colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"]
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="18" font-size="14">\(title)</text>
            <line x1="\(left)" y1="\(y(0))" x2="\(width - right)" y2="\(y(0))" stroke="#999" stroke-dasharray="4 3"/>
            <line x1="\(left)" y1="\(top)" x2="\(left)" y2="\(height - bottom)" stroke="#333"/>
            <line x1="\(left)" y1="\(height - bottom)" x2="\(width - right)" y2="\(height - bottom)" stroke="#333"/>
            <text x="\(left - 8)" y="\(y(yMax) + 4)" text-anchor="end">+\(String(format: "%.1f", yMax)) ms</text>
            <text x="\(left - 8)" y="\(y(0) + 4)" text-anchor="end">0</text>
            <text x="\(left - 8)" y="\(y(-yMax) + 4)" text-anchor="end">−\(String(format: "%.1f", yMax)) ms</text>
            <text x="\(width - right)" y="\(height - 12)" text-anchor="end">\(String(format: "%.0f", tMax)) s</text>
            <text x="\(left)" y="\(height - 12)">0 s</text>

            """
        for index in names.indices {
            let path = points.compactMap { point -> String? in
                guard index < point.offsets.count, let offset = point.offsets[index] else { return nil }
                return String(format: "%.1f,%.1f", x(point.t), y(offset * 1000))
            }
            guard path.count >= 2 else { continue }
            let color = colors[index % colors.count]
            svg += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.2\" points=\"\(path.joined(separator: " "))\"/>\n"
            svg += "<text x=\"\(width - right - 90)\" y=\"\(top + 14 * Double(index + 1))\" fill=\"\(color)\">\(names[index])</text>\n"
        }
        return svg + "</svg>\n"
    }
}
