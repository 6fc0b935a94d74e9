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
    private var lines: [(text: String, until: Double, key: String?)] = []
    /// Counts pushes: a redraw planned for one push is stale once another came.
    public private(set) var generation = 0

    public init(capacity: Int = 4, lifetime: Double = 4) {
        self.capacity = capacity
        self.lifetime = lifetime
    }

    /// Adds a line shown for `seconds` (default `lifetime`); a line pushed with a `key` takes the
    /// place of the live one with the same key (a countdown's next second). Returns what to show
    /// and for how many milliseconds.
    public mutating func push(_ text: String, seconds: Double? = nil, replacing key: String? = nil, now: Double) -> (
        text: String, milliseconds: Int
    ) {
        generation += 1
        lines.removeAll { $0.until <= now || (key != nil && $0.key == key) }
        lines.append((text, now + (seconds ?? lifetime), key))
        if lines.count > capacity { lines.removeFirst(lines.count - capacity) }
        let until = lines.map(\.until).max() ?? now
        return (lines.map(\.text).joined(separator: "\n"), max(1, Int(((until - now) * 1000).rounded())))
    }

    /// What to show again at `now` to make the player draw the OSD once more, and for how many
    /// milliseconds; nil when nothing is live. The text ends in a space so that it differs from
    /// what was shown: mpv ignores a `show-text` equal to the message on screen.
    ///
    /// Why: mpv 0.35 drops a redraw request that arrives while its video output draws a frame
    /// (fixed in 0.36). A paused player draws nothing more, so a notice sent right after our own
    /// pause stayed invisible in the pauser's window until the mouse moved.
    public func redraw(now: Double) -> (text: String, milliseconds: Int)? {
        let live = lines.filter { $0.until > now }
        guard let until = live.map(\.until).max() else { return nil }
        return (live.map(\.text).joined(separator: "\n") + " ", max(1, Int(((until - now) * 1000).rounded())))
    }

    /// The lines still live at `now`, oldest first.
    public func live(at now: Double) -> [String] {
        lines.filter { $0.until > now }.map(\.text)
    }
}
