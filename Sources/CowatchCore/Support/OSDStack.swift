/// The last few notices, stacked on mpv's OSD instead of each replacing the one before.
///
/// mpv's `show-text` shows one message at a time; two notices a second apart ("bob paused",
/// "carol joined") used to leave only the second. Each line stays `lifetime` seconds; the OSD
/// shows the live ones, oldest first, for as long as the newest has left.
///
/// Threading: a value type; one owner.
public struct OSDStack: Sendable {
    /// Lines shown at once at most.
    public var capacity: Int
    /// Seconds each line stays.
    public var lifetime: Double
    private var lines: [(text: String, until: Double)] = []

    public init(capacity: Int = 4, lifetime: Double = 4) {
        self.capacity = capacity
        self.lifetime = lifetime
    }

    /// Adds a line shown for `seconds` (default `lifetime`); returns what to show and for how
    /// many milliseconds.
    public mutating func push(_ text: String, seconds: Double? = nil, now: Double) -> (text: String, milliseconds: Int) {
        lines.removeAll { $0.until <= now }
        lines.append((text, now + (seconds ?? lifetime)))
        if lines.count > capacity { lines.removeFirst(lines.count - capacity) }
        let until = lines.map(\.until).max() ?? now
        return (lines.map(\.text).joined(separator: "\n"), max(1, Int(((until - now) * 1000).rounded())))
    }

    /// The lines still live at `now`, oldest first.
    public func live(at now: Double) -> [String] {
        lines.filter { $0.until > now }.map(\.text)
    }
}
