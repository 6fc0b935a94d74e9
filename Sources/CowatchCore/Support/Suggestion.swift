/// "Did you mean …?" for a misspelt command or option.
///
/// Threading: pure functions; any thread.
public enum Suggestion {
    /// The candidate closest to `word` by edit distance (insertions, deletions, substitutions),
    /// if it is at most `maxDistance` away and the only one that close; nil otherwise.
    public static func closest(to word: String, among candidates: [String], maxDistance: Int = 2) -> String? {
        let scored = candidates.map { ($0, distance(word, $0)) }.filter { $0.1 <= maxDistance && $0.1 > 0 }
        guard let best = scored.map(\.1).min() else { return nil }
        let winners = scored.filter { $0.1 == best }
        // A word that starts another (`--room-secret` in `--room-secret-file`) is the clearer pick.
        if winners.count > 1 { return winners.first { $0.0.hasPrefix(word) }?.0 }
        return winners.first?.0
    }

    /// Levenshtein distance over characters.
    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
