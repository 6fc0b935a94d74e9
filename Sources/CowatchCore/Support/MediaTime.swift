/// Parsing and printing media times the way people type them: `90`, `1:30`, `1:02:03.5`,
/// `+10`, `-5`, `-1:30`.
public enum MediaTime {
    /// A time typed by a person: `relative` when it starts with `+` or `-`.
    public struct Argument: Sendable, Hashable {
        public var seconds: Double
        public var relative: Bool
    }

    /// Parses `[+|-][[h:]m:]s[.frac]`. Minutes and seconds after a colon must be below 60.
    /// Returns nil for anything else (empty, NaN, `inf`, `1:2:3:4`, `1:75`).
    public static func parse(_ text: String) -> Argument? {
        var body = Substring(text.trimmingWhitespace())
        var sign = 1.0
        var relative = false
        if let first = body.first, first == "+" || first == "-" {
            relative = true
            sign = first == "-" ? -1 : 1
            body = body.dropFirst()
        }
        let parts = body.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var total = 0.0
        for (index, part) in parts.enumerated() {
            let isLast = index == parts.count - 1
            guard !part.isEmpty, part.allSatisfy({ $0.isASCII && ($0.isNumber || (isLast && $0 == ".")) }),
                let value = Double(part), value.isFinite
            else { return nil }
            if index > 0 && value >= 60 { return nil }
            total = total * 60 + value
        }
        return Argument(seconds: sign * total, relative: relative)
    }

    /// Why `parse` refused `text`, for a message that points at the mistake (`1:99`: "99 is not
    /// below 60"), or nil when it parses.
    public static func problem(_ text: String) -> String? {
        guard parse(text) == nil else { return nil }
        var body = Substring(text.trimmingWhitespace())
        if let first = body.first, first == "+" || first == "-" { body = body.dropFirst() }
        let parts = body.split(separator: ":", omittingEmptySubsequences: false)
        if body.isEmpty { return "it is empty" }
        if parts.count > 3 { return "it has more than hours, minutes and seconds (h:mm:ss)" }
        for (index, part) in parts.enumerated() {
            if part.isEmpty { return "a number is missing around ':'" }
            let isLast = index == parts.count - 1
            if !part.allSatisfy({ $0.isASCII && ($0.isNumber || (isLast && $0 == ".")) }) || Double(part) == nil {
                return "\"\(part.prefix(20))\" is not a number\(isLast ? "" : " (fractions only in the seconds)")"
            }
            if index > 0, let value = Double(part), value >= 60 {
                return "\(part) is not below 60 (minutes and seconds after ':' run from 0 to 59)"
            }
        }
        return "it is not a time"
    }

    /// Formats seconds as `h:mm:ss`, as mpv's OSD does (truncated, never rounded up: 3.56 s is
    /// `0:00:03`, the frame mpv shows); negative values get a `-`. With `fraction` digits,
    /// seconds carry that many decimals. A value too large to be a time (beyond `maxFormatted`,
    /// as a hostile or broken peer may send) is `--:--`, never a trap.
    public static func format(_ seconds: Double, fraction: Int = 0) -> String {
        guard seconds.isFinite else { return "--:--" }
        let negative = seconds < 0
        let scale = pow10(fraction)
        // The tiny slack keeps 4.0 stored as 3.9999999 at 4.
        let scaled = (abs(seconds) * scale + 1e-6).rounded(.down)
        guard abs(seconds) <= maxFormatted, scaled < 9e15 else { return "--:--" }
        let whole = Int(scaled / scale)
        let hours = whole / 3600
        let minutes = (whole % 3600) / 60
        let secs = whole % 60
        var text = "\(hours):\(twoDigits(minutes)):\(twoDigits(secs))"
        if fraction > 0 {
            let frac = Int(scaled) - whole * Int(scale)
            var digits = String(frac)
            while digits.count < fraction { digits = "0" + digits }
            text += "." + digits
        }
        return negative ? "-" + text : text
    }

    /// The largest number of seconds `format` shows (about 31 700 years).
    public static let maxFormatted = 1e12

    private static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
    private static func pow10(_ n: Int) -> Double { (0..<max(0, n)).reduce(1.0) { acc, _ in acc * 10 } }
}

extension StringProtocol {
    func trimmingWhitespace() -> Substring {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice = slice.dropFirst() }
        while let last = slice.last, last.isWhitespace { slice = slice.dropLast() }
        return slice
    }
}
