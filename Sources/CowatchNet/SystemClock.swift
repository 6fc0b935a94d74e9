#if canImport(Glibc)
    import Glibc
#endif

/// The shells' clock: seconds of `CLOCK_MONOTONIC` (the same clock `monotonicNow()` reads in the
/// client library and mpv's event stamps use). Services take it as a parameter, so tests can give
/// them another.
///
/// Threading: any thread.
public enum SystemClock {
    public static func monotonicSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) * 1e-9
    }
}
