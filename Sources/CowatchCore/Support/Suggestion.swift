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

    /// Every name as near as the nearest to `typed` (lowercased): within two edits (one for a
    /// two- or three-letter word, none for one letter), else the one name it starts, if only one.
    public static func nearest(_ typed: String, among names: [String]) -> [String] {
        let word = typed.lowercased()
        // A one- or two-letter word is within two edits of every short command: no guess.
        let limit = min(2, word.count - 1)
        let scored = names.map { (name: $0, distance: distance(word, $0)) }.filter { $0.distance <= limit }
        if let best = scored.map(\.distance).min() {
            return scored.filter { $0.distance == best }.map(\.name)
        }
        let starting = names.filter { $0.hasPrefix(word) }
        return word.count >= 3 && starting.count == 1 ? starting : []
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions and transpositions
    /// of neighbours each count one.
    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var best = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    best = min(best, table[i - 2][j - 2] + 1)
                }
                table[i][j] = best
            }
        }
        return table[a.count][b.count]
    }
}
