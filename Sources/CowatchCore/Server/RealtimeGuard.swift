/// When the room server's real-time event loops must step down to the ordinary scheduler, and
/// when they may go back.
///
/// Under SCHED_FIFO the event loops take a core whenever a read arrives, ahead of the rooms' work,
/// which stays under the ordinary scheduler. That is what keeps clock probes prompt, but an event
/// loop kept busy without pause (a connection storm, TLS handshakes by the thousand) would then
/// starve the rooms: measured at 20 000 participants on two cores shared with the load generator,
/// action fan-out p99 went from 14 ms to up to 1.9 s. The rooms' timer measures how late it wakes;
/// past `stepDownAbove` the loops step down, and after `calmFor` seconds of wakes within
/// `returnBelow` they go back.
///
/// Time is injected. Threading: a value type; one owner (the rooms' actor).
public struct RealtimeGuard: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        /// Put the event loops under the ordinary scheduler.
        case stepDown
        /// Put them back under real-time scheduling.
        case stepUp
    }

    /// A timer wake this late (seconds) steps the loops down. Default 0.2 s: the rooms' timer woke
    /// up to 54 ms late at 10 000 participants with a burst of joins, and 970 ms late when starved.
    public var stepDownAbove: Double
    /// Wakes within this (seconds) count as calm. Default 0.02 s.
    public var returnBelow: Double
    /// Seconds of calm wakes before stepping back up. Default 30 s.
    public var calmFor: Double
    public private(set) var isRealtime = true
    /// Times the loops stepped down so far.
    public private(set) var stepDowns = 0
    private var calmSince: Double?

    public init(stepDownAbove: Double = 0.2, returnBelow: Double = 0.02, calmFor: Double = 30) {
        precondition(stepDownAbove > 0 && returnBelow > 0 && returnBelow <= stepDownAbove && calmFor >= 0)
        self.stepDownAbove = stepDownAbove
        self.returnBelow = returnBelow
        self.calmFor = calmFor
    }

    /// The rooms' timer woke `lateness` seconds after it asked to, at `now`.
    public mutating func woke(lateness: Double, at now: Double) -> Action? {
        if isRealtime {
            guard lateness > stepDownAbove else { return nil }
            isRealtime = false
            stepDowns += 1
            calmSince = nil
            return .stepDown
        }
        guard lateness <= returnBelow else {
            calmSince = nil
            return nil
        }
        let since = calmSince ?? now
        calmSince = since
        guard now - since >= calmFor else { return nil }
        isRealtime = true
        calmSince = nil
        return .stepUp
    }
}
