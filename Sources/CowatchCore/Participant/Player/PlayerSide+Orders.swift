/// Our own orders to the player (the coordinator's pause, speed and seek), recorded so that
/// their events are not taken for the person's, and the seek fence.
///
/// Our seeks wait behind a fence. A person's seek that mpv has already carried out shows in the
/// position the shell reads before its `seek` event arrives; a correction computed from that
/// read would send the player back, and its event would then pass for ours: the person's seek
/// lost. A message to ourselves through mpv comes back behind every event mpv queued before it,
/// so when it arrives with no person's seek ahead of it, the seek is ours to make. It costs one
/// pass through the event thread (well under a millisecond).
extension PlayerSide {
    /// Pause or play the player. `playerPaused` is its `pause` as just read (nil when unknown:
    /// the order is given). Only a real change is ordered: an unchanged property produces no
    /// event to recognise as ours.
    public mutating func orderPause(_ paused: Bool, playerPaused: Bool?, now: Double) -> [Action] {
        guard playerPaused != paused else { return [] }
        echoes.orderedPause(paused, now: now)
        return [.setPause(paused)]
    }

    /// The shell set `pause` to `paused` at `at` (after `.setPause`): an unpause on a scheduled
    /// instant is timed against it (`startLateness`); the frame clock starts again.
    public mutating func pauseSet(_ paused: Bool, at: Double) {
        if !paused, let instant = transitionInstant { startLateness = at - instant }
        if paused { pauseTiming.set = at }
        frameClock.reset()
    }

    /// The room's order to pause (an `applied` whose timeline is paused) arrived at `at`.
    public mutating func pauseOrderArrived(at: Double) {
        pauseTiming.arrived = at
    }

    /// Play at `speed`. `playerSpeed` is the player's as just read.
    ///
    /// Without audio, mpv shows a frame due within about 10 ms at once when the speed changes:
    /// that frame comes early by what was left (measured with mpv 0.35: every change with the
    /// next frame 0–10.3 ms away, none from 10.7 ms on). A correction waits for a tick further
    /// from a frame (the coordinator asks again every tick); a change the group scheduled (on
    /// `transitionInstant`) is made regardless.
    public mutating func orderSpeed(_ speed: Double, playerSpeed: Double?, now: Double) -> [Action] {
        guard playerSpeed != speed else { return [] }
        if !hasAudio, transitionInstant == nil, let next = frameClock.nextFrame(after: now), next - now < Self.frameGuard {
            return []
        }
        echoes.orderedSpeed(speed)
        return [.setSpeed(speed)]
    }

    /// Seek to `target` (clamped at 0), behind a fence.
    public mutating func orderSeek(to target: Double, now: Double) -> [Action] {
        stalls.seekStarted(ours: true, now: now)
        frameClock.reset()
        fences += 1
        heldSeek = HeldSeek(fence: fences, target: max(0, target), at: now)
        return [.fence(fences)]
    }

    /// Fence `fence` came back: the seek held behind it, if still held, is made now.
    public mutating func fenceReturned(_ fence: Int, now: Double) -> [Action] {
        guard fence == heldSeek?.fence else { return [] }
        return releaseHeldSeek(now: now)
    }

    /// No fence could be sent: the held seek is made at once.
    public mutating func fenceFailed(now: Double) -> [Action] {
        releaseHeldSeek(now: now)
    }

    /// mpv refused the seek: no seek is in flight after all.
    public mutating func seekFailed() {
        stalls.seekEnded()
    }

    /// Carries out the seek held behind the fence.
    mutating func releaseHeldSeek(now: Double) -> [Action] {
        guard let held = heldSeek else { return [] }
        heldSeek = nil
        echoes.orderedSeek(to: held.target, now: now)
        return [.seek(to: held.target)]
    }
}
