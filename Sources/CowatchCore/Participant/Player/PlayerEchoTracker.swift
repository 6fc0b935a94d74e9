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
/// `orderExpiry` (mpv merges seeks queued before the first one ran, so some never produce one).
/// A person's seek merged into ours that way shows only where it lands: `seekLanded` tells a
/// landing far from where we sent the player.
///
/// A person's change is also visible *before* mpv reports it: reading the property returns the
/// new value while its event is still queued. A session that corrected the player on such a
/// read would order the old value back, and mpv, which reads the property when it notifies,
/// would then report only our value: the person's change lost without trace. So the session
/// asks `explains(paused:speed:)` of every read and leaves a player alone until it does.
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
    private var seeks: [(target: Double, at: Double)] = []
    /// Where our last reported seek should land (the latest order: mpv runs the last of merged seeks).
    private var awaitedLanding: Double?
    /// The last values mpv reported, and the last we ordered (nil: none yet).
    private var reportedPause: Bool?
    private var reportedSpeed: Double?
    private var lastOrderedPause: Bool?
    private var lastOrderedSpeed: Double?

    public init() {}

    /// We set `pause` to `paused` (call only when it differs from the player's value: an
    /// unchanged property produces no event).
    public mutating func orderedPause(_ paused: Bool, now: Double) {
        pauses.append((paused, now))
        lastOrderedPause = paused
        if pauses.count > Self.capacity { pauses.removeFirst() }
    }

    /// We set `speed` to `speed`.
    public mutating func orderedSpeed(_ speed: Double) {
        speeds.append(speed)
        lastOrderedSpeed = speed
        if speeds.count > Self.capacity { speeds.removeFirst() }
    }

    /// We ordered a seek to `target`.
    public mutating func orderedSeek(to target: Double, now: Double) {
        seeks.append((target, now))
        if seeks.count > Self.capacity { seeks.removeFirst() }
    }

    /// mpv reported `pause` = `paused`: true when it is the echo of our order.
    public mutating func pauseReported(_ paused: Bool, now: Double) -> Bool {
        expire(now: now)
        reportedPause = paused
        guard let index = pauses.firstIndex(where: { $0.value == paused }) else { return false }
        pauses.removeSubrange(0...index)
        return true
    }

    /// mpv reported `speed` = `speed`: true when it is the echo of our order.
    public mutating func speedReported(_ speed: Double) -> Bool {
        // mpv stores the double we set and reports it back bit for bit; the slack covers a
        // round trip through text (an option string) should one ever happen.
        reportedSpeed = speed
        guard let index = speeds.firstIndex(where: { abs($0 - speed) <= 1e-9 }) else { return false }
        speeds.removeSubrange(0...index)
        return true
    }

    /// mpv reported that a seek started: true when it is one we ordered.
    public mutating func seekReported(now: Double) -> Bool {
        expire(now: now)
        guard let latest = seeks.last else {
            awaitedLanding = nil
            return false
        }
        awaitedLanding = latest.target
        seeks.removeFirst()
        return true
    }

    /// The player landed (playback restart) at `position`: true when that is not where our last
    /// seek was sent but a person's seek that mpv merged into ours. Landings near the end of the
    /// media (`duration`, when known) prove nothing: a seek past it lands short.
    public mutating func seekLanded(at position: Double, duration: Double?) -> Bool {
        guard let target = awaitedLanding else { return false }
        awaitedLanding = nil
        guard let duration, target < duration - Self.landingTolerance else { return false }
        return abs(position - target) > Self.landingTolerance
    }

    /// Seconds: our seeks are exact and land within a frame; a person's lands anywhere.
    public static let landingTolerance = 1.0

    /// Whether values read from the player are accounted for: each equals the last value mpv
    /// reported or the last we ordered. False while a person's change is read before its event
    /// came; the event will come (mpv notifies every change of an observed property), and until
    /// then the player must not be corrected.
    public func explains(paused: Bool, speed: Double) -> Bool {
        let pauseKnown = reportedPause.map { $0 == paused } ?? true || lastOrderedPause == paused
        let speedKnown =
            reportedSpeed.map { abs($0 - speed) <= 1e-9 } ?? true
            || lastOrderedSpeed.map { abs($0 - speed) <= 1e-9 } ?? false
        return pauseKnown && speedKnown
    }

    /// True while a seek we ordered has not been reported yet.
    public var awaitsSeek: Bool { !seeks.isEmpty }

    /// Forgets the seeks ordered (a new file): a seek belongs to the file it was made in. Pause
    /// and speed orders stay: mpv keeps both across files, and the report of one ordered just
    /// before a switch still comes, after it (forgotten, a drift correction's speed reported
    /// then passed for the person's, and became a group speed change nobody made).
    public mutating func forgetSeeks() {
        seeks = []
        awaitedLanding = nil
    }

    /// Forgets every order (a session that ended): nothing pending may later be
    /// mistaken for, or hide, a person's change. What was last reported and ordered stays: it
    /// is what the player holds.
    public mutating func reset() {
        pauses = []
        speeds = []
        seeks = []
        awaitedLanding = nil
    }

    private mutating func expire(now: Double) {
        pauses.removeAll { now - $0.at > orderExpiry }
        seeks.removeAll { now - $0.at > orderExpiry }
    }
}
