/// A smooth media clock for video without audio, from the instants at which frames change.
///
/// mpv's `time-pos` moves in whole frames, but the instant each new frame appears sits within
/// about a millisecond of the ideal grid. Polling `time-pos` and noting when it changed bounds
/// each change instant to the interval between two polls; intersecting those intervals over
/// recent frames pins the clock's phase far tighter than one poll period.
///
/// Threading: a value type; one owner. Feed it polls in time order.
public struct FrameClock: Sendable {
    /// How many recent frame changes constrain the phase.
    public var window: Int
    private var constraints: [(lower: Double, upper: Double)] = []
    private var lastPoll: (position: Double, at: Double)?
    private var rate: Double = 1

    public init(window: Int = 25) {
        self.window = window
    }

    /// Records one poll of `time-pos` at local time `at` while playing at `rate`.
    public mutating func poll(position: Double, at: Double, rate: Double) {
        if rate != self.rate {
            // Keep the position continuous across a speed change: carry the current estimate
            // (and its uncertainty) over into the new rate's terms.
            if let phase, let now = self.position(at: at) {
                let rebased = at - now / rate
                constraints = [(rebased - phase.halfWidth, rebased + phase.halfWidth)]
            } else {
                constraints.removeAll()
            }
            self.rate = rate
        }
        defer { lastPoll = (position, at) }
        guard let last = lastPoll, position != last.position else { return }
        let step = position - last.position
        // A jump backwards or by many frames is a seek, not playback: start over.
        if step < 0 || step > 0.5 {
            constraints.removeAll()
            return
        }
        // The frame `position` appeared in (last.at, at]: its phase (local time of media 0) lies
        // between these bounds.
        constraints.append((last.at - position / rate, at - position / rate))
        if constraints.count > window { constraints.removeFirst(constraints.count - window) }
    }

    /// Forget everything (after a seek, pause or speed change).
    public mutating func reset() {
        constraints.removeAll()
        lastPoll = nil
    }

    /// The phase estimate and its half-width, when known.
    public var phase: (value: Double, halfWidth: Double)? {
        guard !constraints.isEmpty else { return nil }
        var lower = -Double.infinity
        var upper = Double.infinity
        for constraint in constraints.reversed() {
            let newLower = max(lower, constraint.lower)
            let newUpper = min(upper, constraint.upper)
            // Inconsistent with newer frames (timing moved): ignore older evidence.
            if newLower > newUpper { break }
            lower = newLower
            upper = newUpper
        }
        return ((lower + upper) / 2, (upper - lower) / 2)
    }

    /// The smooth media position at local time `t`, once at least one frame change was seen.
    public func position(at t: Double) -> Double? {
        guard let phase else { return nil }
        return (t - phase.value) * rate
    }
}
