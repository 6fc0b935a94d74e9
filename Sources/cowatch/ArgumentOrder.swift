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

