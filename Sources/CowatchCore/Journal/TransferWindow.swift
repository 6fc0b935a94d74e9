/// How many bytes a transfer moved, in windows of a fixed length: a transfer that moves fewer
/// than its minimum in one window is too slow, and gives up its slot (and an upload its
/// reservation). Windows follow each other (a window starts when the last one was judged), so
/// what a peer must pay is an average rate, whatever its bursts.
///
/// Threading: a value type; one owner (the transfer's lock). Time is a parameter.
public struct TransferWindow: Sendable, Equatable {
    public private(set) var windowStart: Double
    public private(set) var windowBytes = 0

    public init(start: Double) {
        windowStart = start
    }

    /// `bytes` moved.
    public mutating func moved(_ bytes: Int) {
        windowBytes += max(0, bytes)
    }

    /// Whether the window that ended by `now` moved fewer than `minimum` bytes; a window that
    /// passed starts a new one.
    public mutating func isTooSlow(now: Double, window: Double, minimum: Int) -> Bool {
        guard now - windowStart >= window else { return false }
        defer {
            windowStart = now
            windowBytes = 0
        }
        return windowBytes < minimum
    }
}
