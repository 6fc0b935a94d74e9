/// Tells the player changes this daemon ordered from those a person made at the player.
///
/// mpv reports every change of an observed property the same way, whoever made it. The session
/// records each change it orders here and asks, for each change mpv reports, whether it was
/// one of ours. Matching is by value, not by a time window: mpv may report a change late (a
/// loaded machine) or skip an intermediate value (it reads the property when it notifies), so
/// a reported value that equals one we ordered and have not yet seen consumes that order and
/// every older one. A value we never ordered is the person's, however close to ours: a speed
/// nudge of the drift controller is recorded like any order, so no "correction band" is needed
/// to recognise it.
///
/// Seeks carry no value: each seek we order is expected as one `seek` event, within
/// `seekExpiry` (mpv merges seeks queued before the first one ran, so some never produce one).
///
/// Threading: a value type; one owner.
public struct PlayerEchoTracker: Sendable {
    /// Orders remembered per property; older ones fall off (a report for them never came).
    public static let capacity = 16
    /// A pause or seek order whose event has not come within this many seconds is forgotten:
    /// it will not come (mpv merged it away), and it must not swallow a person's change later.
    public var orderExpiry = 1.0

    private var pauses: [(value: Bool, at: Double)] = []
    private var speeds: [Double] = []
    private var seeks: [Double] = []

    public init() {}

    /// We set `pause` to `paused` (call only when it differs from the player's value: an
    /// unchanged property produces no event).
    public mutating func orderedPause(_ paused: Bool, now: Double) {
        pauses.append((paused, now))
        if pauses.count > Self.capacity { pauses.removeFirst() }
    }

    /// We set `speed` to `speed`.
    public mutating func orderedSpeed(_ speed: Double) {
        speeds.append(speed)
        if speeds.count > Self.capacity { speeds.removeFirst() }
    }

    /// We ordered a seek.
    public mutating func orderedSeek(now: Double) {
        seeks.append(now)
        if seeks.count > Self.capacity { seeks.removeFirst() }
    }

    /// mpv reported `pause` = `paused`: true when it is the echo of our order.
    public mutating func pauseReported(_ paused: Bool, now: Double) -> Bool {
        expire(now: now)
        guard let index = pauses.firstIndex(where: { $0.value == paused }) else { return false }
        pauses.removeSubrange(0...index)
        return true
    }

    /// mpv reported `speed` = `speed`: true when it is the echo of our order.
    public mutating func speedReported(_ speed: Double) -> Bool {
        // mpv stores the double we set and reports it back bit for bit; the slack covers a
        // round trip through text (an option string) should one ever happen.
        guard let index = speeds.firstIndex(where: { abs($0 - speed) <= 1e-9 }) else { return false }
        speeds.removeSubrange(0...index)
        return true
    }

    /// mpv reported that a seek started: true when it is one we ordered.
    public mutating func seekReported(now: Double) -> Bool {
        expire(now: now)
        guard !seeks.isEmpty else { return false }
        seeks.removeFirst()
        return true
    }

    /// True while a seek we ordered has not been reported yet.
    public var awaitsSeek: Bool { !seeks.isEmpty }

    /// Forgets every order (a new file, a session that ended): nothing pending may later be
    /// mistaken for, or hide, a person's change.
    public mutating func reset() {
        pauses = []
        speeds = []
        seeks = []
    }

    private mutating func expire(now: Double) {
        pauses.removeAll { now - $0.at > orderExpiry }
        seeks.removeAll { now - $0 > orderExpiry }
    }
}
