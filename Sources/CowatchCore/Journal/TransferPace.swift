/// How fast one transfer may move bytes: a token bucket of `rate` bytes a second with a burst of
/// a quarter second, so a large attachment can be kept from taking the CPU (and the link) that
/// playback sync needs (`cowatchd --transfer-rate`).
///
/// Threading: a value type; one owner. Time is injected.
public struct TransferPace: Sendable {
    /// Bytes a second; 0 means unlimited.
    public let rate: Double
    private var tokens: Double
    private var at: Double?

    public init(bytesPerSecond rate: Double) {
        self.rate = max(0, rate)
        tokens = rate / 4
    }

    /// Seconds to wait before moving `bytes` more (0: go on now); the bytes are taken either way.
    public mutating func delay(for bytes: Int, now: Double) -> Double {
        guard rate > 0 else { return 0 }
        let elapsed = max(0, now - (at ?? now))
        at = now
        tokens = min(rate / 4, tokens + elapsed * rate) - Double(bytes)
        return tokens >= 0 ? 0 : -tokens / rate
    }
}
