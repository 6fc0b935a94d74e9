/// Which of one connection's `report`s go on to the rooms' sequencer.
///
/// Every member reports its drift and round trip once a second; the server only shows them in
/// participant lists, which go out every 5 s. At 10 000 members those reports were half of all
/// the lines handed from the event loops to the rooms' actor, each one a thread hop. A report
/// passes when `interval` has gone by since the last one that passed (the first always does);
/// the others are dropped, as the next one carries newer figures. Drift and round trip in a list
/// are then at most about `interval` + 1 s old, and a member that reports is still heard from far
/// more often than the idle timeout asks.
///
/// Time is injected. Threading: a value type; one owner (the connection's event loop).
public struct ReportGate: Sendable, Equatable {
    /// Seconds between reports passed on. Default 1.5 s: every other report of a daemon's 1 s
    /// cadence, with up to ±0.25 s of jitter on each.
    public let interval: Double
    private var lastPassed = -Double.infinity

    public init(interval: Double = 1.5) {
        precondition(interval >= 0)
        self.interval = interval
    }

    /// True when a report that arrived at `now` goes on.
    public mutating func pass(at now: Double) -> Bool {
        guard now - lastPassed >= interval else { return false }
        lastPassed = now
        return true
    }
}
