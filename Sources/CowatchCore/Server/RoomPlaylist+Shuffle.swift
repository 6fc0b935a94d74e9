/// Shuffling, seeded: the same seed gives the same order on every machine and every run (a
/// SplitMix64 generator and a Fisher–Yates shuffle of our own, never the standard library's,
/// whose algorithm may change), so a test replays a shuffle exactly.
extension RoomPlaylist {
    /// Reorders `entries[from...]` from `seed`; the entries before `from` stay where they are.
    static func shuffle(_ entries: inout [PlaylistEntry], from: Int, seed: UInt64) {
        guard from >= 0, entries.count - from > 1 else { return }
        var random = PlaylistRandom(seed: seed)
        var last = entries.count - 1
        while last > from {
            let pick = from + Int(random.next() % UInt64(last - from + 1))
            entries.swapAt(last, pick)
            last -= 1
        }
    }
}

/// SplitMix64 (Steele, Lea and Flood): a small, fast generator with a fixed sequence per seed.
///
/// Threading: a value type; one owner.
struct PlaylistRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
