/// How soon this player paused after the room said so: the instants (the daemon's monotonic
/// clock, CLOCK_MONOTONIC in a real daemon) at which the last pause order arrived at the socket
/// and at which the player's `pause` was last set. Both are in `get_status` (`drift.pause`) so
/// that a benchmark with several daemons on one machine can line them up.
///
/// A viewer who pauses sets its own player first and hears the room's order after: its `set`
/// comes before its `arrived`.
///
/// Threading: a value type.
public struct PauseTiming: Sendable, Hashable {
    public var arrived: Double?
    public var set: Double?

    public init(arrived: Double? = nil, set: Double? = nil) {
        self.arrived = arrived
        self.set = set
    }
}
