/// How long this player takes to start moving after it is told to unpause, learned from its own
/// starts, so a scheduled start can be ordered that much early (pre-roll) and the player's time
/// starts advancing on the group's instant, not a frame later.
///
/// How long mpv takes between `pause=no` and its clock advancing depends on the audio output
/// and the machine (reported: about 10 ms, up to 30 with video; measured here with `ao=null`:
/// under 1 ms), and differs from player to player: without pre-roll, each player starts that
/// late and the drift controller pulls it in over the next few hundred milliseconds. A start
/// that reads as early (negative latency) counts as 0: pre-roll never delays an unpause.
///
/// Feed it every unpause it ordered (`unpaused`) and the samples that follow (`observe`): the
/// first sample that has moved past where it was paused says when it started (its position
/// carried back at its speed). `lead` is the median of the last `keep` measurements (one slow
/// start, say under load, does not move it), `prior` before any.
///
/// Time is injected. Threading: a value type; one owner (the room coordinator) mutates it.
public struct UnpauseLead: Sendable, Equatable {
    /// What is assumed before the first measurement (seconds).
    public let prior: Double
    /// Measurements are clamped to 0...`maxLead`; a start seen later than `giveUpAfter` after the
    /// command is not measured (a stall, a seek, a pause in between).
    public let maxLead: Double
    public let giveUpAfter: Double
    public let keep: Int
    public private(set) var measurements: [Double] = []
    private var pending: Start?

    /// An unpause ordered at `at` while paused at `position`, not yet seen moving.
    private struct Start: Sendable, Equatable {
        var at: Double
        var position: Double
    }

    public init(prior: Double = 0, maxLead: Double = 0.1, giveUpAfter: Double = 0.5, keep: Int = 5) {
        precondition(prior >= 0 && maxLead >= prior && giveUpAfter > 0 && keep >= 1)
        self.prior = prior
        self.maxLead = maxLead
        self.giveUpAfter = giveUpAfter
        self.keep = keep
    }

    /// Seconds to order a start ahead of its instant.
    public var lead: Double {
        guard !measurements.isEmpty else { return prior }
        let sorted = measurements.sorted()
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }

    /// The player was told to unpause at local `now`, paused at `position`.
    public mutating func unpaused(at now: Double, position: Double) {
        pending = Start(at: now, position: position)
    }

    /// A player sample. Measures the pending start once the player has moved `minimumAdvance` past
    /// where it was paused; forgets it when the player is paused, seeking, or too late.
    public mutating func observe(position: Double, at: Double, speed: Double, paused: Bool, seeking: Bool) {
        guard let start = pending else { return }
        if paused || seeking || at - start.at > giveUpAfter || speed <= 0 {
            pending = nil
            return
        }
        let moved = position - start.position
        guard moved >= Self.minimumAdvance else { return }
        pending = nil
        let startedAt = at - moved / speed
        measurements.append(min(max(startedAt - start.at, 0), maxLead))
        if measurements.count > keep { measurements.removeFirst(measurements.count - keep) }
    }

    /// Half a millisecond: past the resolution of audio-pts, well inside one frame.
    static let minimumAdvance = 0.000_5
}
