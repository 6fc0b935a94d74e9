/// mpv's habit, and git's: options first, `cowatch --socket X status`. The connection options
/// belong to every subcommand, so ones given before the subcommand are moved after it (before a
/// `--`, which ends the options) instead of being refused as unknown at the top level.
enum ArgumentOrder {
    static func connectionOptionsAfterSubcommand(_ arguments: [String]) -> [String] {
        var moved: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--json" || argument.hasPrefix("--socket=") || argument.hasPrefix("--name=") {
                moved.append(argument)
                index += 1
            } else if (argument == "--socket" || argument == "--name"), index + 1 < arguments.count {
                moved += [argument, arguments[index + 1]]
                index += 2
            } else {
                break
            }
        }
        // Nothing moved, or no subcommand after them: the parser's own message is the right one.
        guard !moved.isEmpty, index < arguments.count, !arguments[index].hasPrefix("-") else { return arguments }
        var rest = Array(arguments[index...])
        rest.insert(contentsOf: moved, at: rest.firstIndex(of: "--") ?? rest.count)
        return rest
    }

    /// For a refused command line that starts with an option and names a command later
    /// (`cowatch --duration 5 events`): where the options go instead.
    static func hint(_ arguments: [String], subcommands: [String]) -> String? {
        guard let first = arguments.first, first.hasPrefix("-"), !["-h", "--help", "--version"].contains(first),
            let position = arguments.firstIndex(where: { subcommands.contains($0) })
        else { return nil }
        let reordered = [arguments[position]] + arguments[..<position] + arguments[(position + 1)...]
        return "Hint: a command's options go after it: cowatch \(reordered.joined(separator: " "))"
    }
}

/// `cowatch paus`: the commands within two edits (a swapped pair of letters is one), else the one
/// command the word begins (`cowatch partic`); the closest first, in the order `--help` lists them.
enum CommandSuggestion {
    static func nearest(_ typed: String, among names: [String]) -> [String] {
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
    static func distance(_ a: String, _ b: String) -> Int {
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
