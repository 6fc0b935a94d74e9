import CowatchCore

/// The count down to a start the room scheduled seconds ahead — the playlist's next entry after
/// its countdown ("Episode 3 in 3 s") — on the OSD, one line that replaces itself each second.
///
/// Threading: actor-isolated to `RoomSession`; the count runs in a task of its own that ends
/// at the start or as soon as the room's timeline changes (a pause, a seek, another switch).
extension RoomSession {
    /// Seconds ahead a start must be for a count down to be shown.
    static let countdownFrom = 1.5
    static let countdownLine = "countdown"

    /// The timeline `seq` plays from a scheduled instant: counts down to it on the OSD when it
    /// is at least `countdownFrom` seconds away.
    func countDown(toStartOf seq: Int) {
        guard configuration.osd, let start = coordinator.nextTransition(afterLocal: clock.now()),
            start - clock.now() >= Self.countdownFrom
        else { return }
        let title = coordinator.playlist?.entry(forActivity: coordinator.activity.id)?.displayTitle ?? coordinator.activity.displayTitle
        Task { [weak self, clock] in
            while let wait = await self?.showCountdown(title, to: start, seq: seq) {
                do { try await clock.sleep(seconds: wait) } catch { return }
            }
        }
    }

    /// Shows "TITLE in N s" now; returns the seconds until the next whole second is due, nil when
    /// the count is over (the start is here, or the timeline changed).
    private func showCountdown(_ title: String, to start: Double, seq: Int) -> Double? {
        let left = start - clock.now()
        guard coordinator.timelines?.current.seq == seq, left > 0.05 else { return nil }
        let seconds = Int(left.rounded(.up))
        showOnScreen("\(title) in \(seconds) s", milliseconds: Int((min(left, 1.1) * 1000).rounded()), replacing: Self.countdownLine)
        return seconds > 1 ? left - Double(seconds - 1) : nil
    }
}
