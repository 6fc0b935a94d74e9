/// The room's shared state: where the media is on the reference clock.
///
/// From `reference` (a reference-clock instant, seconds) on, the media position is
/// `position + rate * (t - reference)` while `playing`; otherwise it holds at `position`.
/// Before `reference` the previous timeline still rules (that is how a scheduled play or speed
/// change takes effect at the same instant everywhere). `seq` is the sequencer's number of the
/// action that made it: every participant applies timelines in `seq` order.
///
/// Threading: a value type, safe to share.
public struct GroupTimeline: Sendable, Hashable {
    public var seq: Int
    public var position: Double
    public var reference: Double
    /// The group's playback rate (kept while paused, so play resumes at it).
    public var rate: Double
    public var playing: Bool
    /// True after a seek while the group waits for participants to land before resuming.
    public var holding: Bool

    public init(seq: Int, position: Double, reference: Double, rate: Double, playing: Bool, holding: Bool = false) {
        self.seq = seq
        self.position = position
        self.reference = reference
        self.rate = rate
        self.playing = playing
        self.holding = holding
    }

    /// A paused timeline at the start of the media.
    public static func initial(at reference: Double) -> GroupTimeline {
        GroupTimeline(seq: 0, position: 0, reference: reference, rate: 1, playing: false)
    }

    /// The expected media position at reference instant `t` (assumes `t >= reference`; earlier
    /// instants return `position`).
    public func position(at t: Double) -> Double {
        guard playing, t > reference else { return position }
        return position + rate * (t - reference)
    }

    /// True when the timeline has taken effect at reference instant `t`.
    public func isEffective(at t: Double) -> Bool { t >= reference }
}

/// A timeline change as a participant sees it: the new timeline plus the one it replaces, which
/// still rules until `current.reference`.
public struct TimelinePair: Sendable, Hashable {
    public var previous: GroupTimeline
    public var current: GroupTimeline

    public init(previous: GroupTimeline, current: GroupTimeline) {
        self.previous = previous
        self.current = current
    }

    public init(_ only: GroupTimeline) {
        self.init(previous: only, current: only)
    }

    /// The timeline ruling at reference instant `t`.
    public func ruling(at t: Double) -> GroupTimeline {
        current.isEffective(at: t) ? current : previous
    }

    /// Expected position and whether the group plays, at reference instant `t`; a change due
    /// within `slack` after `t` already rules (the position is still the one at `t`).
    public func expected(at t: Double, slack: Double = 0) -> (position: Double, playing: Bool, rate: Double) {
        let timeline = ruling(at: t + slack)
        return (timeline.position(at: t), timeline.playing && t + slack >= timeline.reference, timeline.rate)
    }

    /// Moves to a newer timeline; older or equal `seq`s are ignored (returns false).
    public mutating func advance(to next: GroupTimeline, at t: Double) -> Bool {
        guard next.seq > current.seq else { return false }
        previous = ruling(at: t)
        current = next
        return true
    }
}
