/// Bytes a second over the last ~5 s, from per-second sums (bounded whatever the rate), for a
/// stream's status.
///
/// Threading: a value type; one owner.
struct ThroughputMeter: Sendable {
    static let seconds = 5
    private var sums: [(second: Int, bytes: Int)] = []
    private var since: Double?

    mutating func add(_ bytes: Int, now: Double) {
        if since == nil { since = now }
        let second = Int(now.rounded(.down))
        if sums.last?.second == second {
            sums[sums.count - 1].bytes += bytes
        } else {
            sums.append((second, bytes))
        }
        sums.removeAll { $0.second <= second - Self.seconds }
    }

    func rate(now: Double) -> Double {
        guard let since else { return 0 }
        let second = Int(now.rounded(.down))
        let recent = sums.filter { $0.second > second - Self.seconds }.reduce(0) { $0 + $1.bytes }
        return Double(recent) / min(Double(Self.seconds), max(1, now - since))
    }
}
