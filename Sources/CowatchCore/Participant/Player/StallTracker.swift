/// Why this player cannot keep up with the group right now, if it cannot.
///
/// Fed with what the player reports (loading, `paused-for-cache`, seeks starting and landing);
/// `stall(now:)` is what the room hears. Seeks we ordered (group actions, drift corrections)
/// never count: the room's own holds cover them. A person's seek counts once it takes longer
/// than `slowSeek`.
///
/// Threading: a value type; one owner.
public struct StallTracker: Sendable {
    /// Seconds a seek may take before it counts as a stall (`seeking`).
    public var slowSeek: Double
    /// Media is being opened (until its first frame is decoded).
    public var loading = false
    /// mpv paused for cache: the network is slower than the media.
    public var buffering = false
    public private(set) var seekStartedAt: Double?
    private var seekIsOurs = false

    public init(slowSeek: Double = 0.5) {
        self.slowSeek = slowSeek
    }

    /// True from a seek's start until the player lands.
    public var seeking: Bool { seekStartedAt != nil }

    /// A seek started (ordered by us, or by the person at the player). A seek started during
    /// another keeps the first one's start: the player has not shown a frame since.
    public mutating func seekStarted(ours: Bool, now: Double) {
        if seekStartedAt == nil { seekStartedAt = now }
        seekIsOurs = ours
    }

    /// The player landed (playback restart), or the seek was abandoned.
    public mutating func seekEnded() {
        seekStartedAt = nil
        seekIsOurs = false
    }

    /// The stall to report now.
    public func stall(now: Double) -> StallReason? {
        if loading { return .loading }
        if buffering { return .buffering }
        if let started = seekStartedAt, !seekIsOurs, now - started > slowSeek { return .seeking }
        return nil
    }
}
