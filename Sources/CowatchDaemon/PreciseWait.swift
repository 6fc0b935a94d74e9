import CowatchClient
import Foundation

/// Blocks the calling thread until CLOCK_MONOTONIC reaches `instant` (seconds): an absolute
/// `clock_nanosleep` to `spin` before it, then a spin for the rest.
///
/// Why not a spin all the way: a room's players start on one instant, and each daemon used to
/// spin the last 2 ms. On two cores, three daemons spinning at once took the CPU from the very
/// mpv threads that had to carry out the start, and one player started up to 1.6 ms late. The
/// kernel wakes a sleeper within about 50–100 µs when a core is free, so the spin is only as
/// long as that.
///
/// Threading: any thread; it blocks that thread (at most a few ms, as the caller schedules it).
func waitUntilMonotonic(_ instant: Double, spin: Double = 0.000_1) {
    let sleepUntil = instant - spin
    if monotonicNow() < sleepUntil {
        var target = timespec()
        target.tv_sec = Int(sleepUntil.rounded(.down))
        target.tv_nsec = Int((sleepUntil - Double(target.tv_sec)) * 1e9)
        // EINTR: sleep on to the same absolute instant.
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, nil) == EINTR {}
    }
    while monotonicNow() < instant {}
}
