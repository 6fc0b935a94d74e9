#if canImport(Glibc)
import Glibc
#endif

/// The one monotonic time the shells run on: seconds that only move forward, and ways to wait
/// for an instant on them. The core's machines never read it (they take `now` as a parameter);
/// the daemon's services are given one, so their tests can give them a manual clock instead.
///
/// Threading: every method may be called from any thread or task.
public protocol MonotonicClock: Sendable {
    /// Seconds since an arbitrary origin; never goes back.
    func now() -> Double
    /// Suspends the calling task until `now() >= deadline`. Throws `CancellationError` when the
    /// task is cancelled first.
    func sleep(until deadline: Double) async throws
    /// Blocks the calling thread until `now() >= deadline`, as precisely as the clock can: for the
    /// last few milliseconds before a scheduled start. A caller keeps such waits short.
    func waitPrecisely(until deadline: Double)
}

extension MonotonicClock {
    /// Suspends for `seconds` of this clock (at once when not positive).
    /// Throws `CancellationError` when the task is cancelled first.
    public func sleep(seconds: Double) async throws {
        try await sleep(until: now() + seconds)
    }
}

/// The machine's `CLOCK_MONOTONIC`, the clock mpv stamps its own events with: the daemon, the room
/// server and the client library all read this one.
///
/// Threading: any thread.
public struct SystemClock: MonotonicClock {
    public init() {}

    /// Seconds of `CLOCK_MONOTONIC`.
    public static func monotonicSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) * 1e-9
    }

    public func now() -> Double { Self.monotonicSeconds() }

    /// An infinite `deadline` sleeps until cancelled.
    public func sleep(until deadline: Double) async throws {
        while true {
            let left = deadline - Self.monotonicSeconds()
            guard left > 0 else { return try Task.checkCancellation() }
            // In bounded steps: a `Duration` cannot hold an infinite or huge wait.
            try await Task.sleep(for: .seconds(min(left, 3600)))
        }
    }

    /// An absolute `clock_nanosleep` to `spin` before `deadline`, then a spin for the rest.
    ///
    /// Why not a spin all the way: a room's players start on one instant, and each daemon used to
    /// spin the last 2 ms. On two cores, three daemons spinning at once took the CPU from the very
    /// mpv threads that had to carry out the start, and one player started up to 1.6 ms late. The
    /// kernel wakes a sleeper within about 50–100 µs when a core is free, so the spin is only as
    /// long as that.
    public func waitPrecisely(until deadline: Double) {
        Self.waitPrecisely(until: deadline, spin: 0.000_1)
    }

    /// `waitPrecisely(until:)` with the spin chosen (seconds).
    public static func waitPrecisely(until deadline: Double, spin: Double) {
        let sleepUntil = deadline - spin
        if monotonicSeconds() < sleepUntil {
            var target = timespec()
            target.tv_sec = Int(sleepUntil.rounded(.down))
            target.tv_nsec = Int((sleepUntil - Double(target.tv_sec)) * 1e9)
            // EINTR: sleep on to the same absolute instant.
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, nil) == EINTR {}
        }
        while monotonicSeconds() < deadline {}
    }
}
