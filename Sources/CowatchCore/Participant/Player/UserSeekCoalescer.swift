/// Turns a person's seeking at the player into at most one group seek.
///
/// Dragging mpv's seek bar is dozens of seeks a second, each landing (playback restart) before
/// the next starts; arrow keys held down are the same. The room hears one seek per gesture:
/// from where the group was when the gesture began to where the player settled once no seek
/// has started or landed for `quietPeriod`. A gesture that ends where it began (within
/// `noOpDistance`) is no seek at all.
///
/// Threading: a value type; one owner.
public struct UserSeekCoalescer: Sendable {
    /// Seconds without a new seek before a gesture counts as finished.
    public var quietPeriod: Double
    /// A gesture moving less than this (seconds of media) is dropped.
    public var noOpDistance: Double

    /// A finished gesture: the group seeks `from` → `to`.
    public struct Gesture: Sendable, Hashable {
        public var from: Double
        public var to: Double
        public init(from: Double, to: Double) {
            self.from = from
            self.to = to
        }
    }

    private var from: Double?
    private var landedAt: Double?
    private var target: Double?
    private var lastActivity = 0.0
    private var inFlight = false

    public init(quietPeriod: Double = 0.2, noOpDistance: Double = 0.1) {
        self.quietPeriod = quietPeriod
        self.noOpDistance = noOpDistance
    }

    /// True while a gesture is under way (its seeks are the person's, not drift).
    public var isActive: Bool { from != nil }

    /// A seek the person made started; `groupPosition` is where the group is now (nil when the
    /// group's timeline is unknown: the gesture then starts where it first lands).
    public mutating func seekStarted(groupPosition: Double?, now: Double) {
        if from == nil { from = groupPosition ?? .nan }
        inFlight = true
        lastActivity = now
    }

    /// The player finished a seek of the gesture at `position` (a landing without one of the
    /// gesture's seeks in flight, e.g. of a seek we ordered, is not the gesture's).
    public mutating func landed(at position: Double, now: Double) {
        guard from != nil, inFlight else { return }
        if from?.isNaN == true { from = position }
        target = position
        inFlight = false
        lastActivity = now
        landedAt = now
    }

    /// When the gesture would be finished if nothing else happens (for the shell's deadline).
    public var deadline: Double? {
        guard from != nil, !inFlight, target != nil else { return nil }
        return lastActivity + quietPeriod
    }

    /// The finished gesture, once quiet; nil while it goes on or when it moved nowhere.
    public mutating func poll(now: Double) -> Gesture? {
        guard let deadline, now >= deadline, let from, let target else { return nil }
        reset()
        guard abs(target - from) >= noOpDistance else { return nil }
        return Gesture(from: from, to: target)
    }

    /// Drops the gesture (a new file, a session that ended, the person left the room).
    public mutating func reset() {
        from = nil
        target = nil
        landedAt = nil
        inFlight = false
    }
}
