/// A smooth media clock for video without audio, from mpv's notices that a new frame is shown.
///
/// mpv reports each `time-pos` change as an event; the instant the event arrives is the instant
/// the frame appeared plus a small notification latency. Each frame so gives one reading of the
/// clock's phase (the local time at which media position 0 would have been shown); the median of
/// the recent readings ignores the odd late notification. The latency left in it is the same for
/// every player on a machine, so it cancels out of the skew between them.
///
/// Cheaper than polling (`FrameClock`): no wake-ups beyond the 25 events a second mpv sends anyway.
/// Threading: a value type; one owner. Feed it events in order.
public struct FrameEventClock: Sendable {
    public var window: Int
    private var phases: [Double] = []
    private var rate: Double = 1
    private var last: (position: Double, at: Double)?
    /// Media seconds between the last two frames shown in a row (nil before two).
    public private(set) var framePeriod: Double?

    public init(window: Int = 25) {
        self.window = window
    }

    /// Records that frame `position` was shown at local time `at` while playing at `rate`.
    public mutating func shown(position: Double, at: Double, rate: Double) {
        if rate != self.rate {
            // Keep the position continuous across a speed change.
            if let now = self.position(at: at) {
                phases = [at - now / rate]
            }
            self.rate = rate
        }
        if let last, position < last.position || position - last.position > 0.5 {
            phases.removeAll()  // a seek, not playback
        } else if let last, position > last.position {
            framePeriod = position - last.position
        }
        last = (position, at)
        phases.append(at - position / rate)
        if phases.count > window { phases.removeFirst(phases.count - window) }
    }

    /// Forget everything (after a seek or pause).
    public mutating func reset() {
        phases.removeAll()
        last = nil
    }

    /// The median phase, once a frame was seen.
    public var phase: Double? {
        guard !phases.isEmpty else { return nil }
        let sorted = phases.sorted()
        return sorted[sorted.count / 2]
    }

    /// The local time at which the first frame after `t` is due to be reported (the notification
    /// latency included, as in every reading), from the clock and the last frame period; nil
    /// until a frame was seen since the last reset and two in a row gave the period.
    public func nextFrame(after t: Double) -> Double? {
        guard let phase, let last, let framePeriod, framePeriod > 0, rate > 0 else { return nil }
        let step = framePeriod / rate
        var due = phase + (last.position + framePeriod) / rate
        if due <= t { due += (((t - due) / step).rounded(.down) + 1) * step }
        return due
    }

    /// The smooth media position at local time `t`.
    public func position(at t: Double) -> Double? {
        guard let phase else { return nil }
        return (t - phase) * rate
    }
}
