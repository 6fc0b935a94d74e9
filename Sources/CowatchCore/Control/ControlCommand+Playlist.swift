/// (1.7) The playlist's commands on the wire: `get_playlist` and the `playlist_*` commands,
/// parsed from their JSON arrays and written back (`ControlCommand.init(arguments:)` and
/// `arguments` hand them here).
///
/// Every argument is hostile until checked: entry numbers are JSON integers 1…501 (never
/// strings, fractions or booleans), lists hold 1–500 strings, each an absolute path (at most 4096
/// bytes, as `attach`'s) or a network URL of a scheme a room may open (at most 4096 bytes, as
/// `open`'s), none with control characters.
///
/// Threading: pure functions of value types.
extension ControlCommand {
    /// The playlist command `kind` names, from its arguments (after the name).
    /// Errors: `wrong-argument-count`, `invalid-argument`.
    static func playlist(_ kind: Name, _ args: [JSONValue]) throws(CowatchError) -> ControlCommand {
        func expectCount(_ allowed: ClosedRange<Int>) throws(CowatchError) {
            guard allowed.contains(args.count) else {
                let wanted = allowed.lowerBound == allowed.upperBound
                    ? "\(allowed.lowerBound)" : "\(allowed.lowerBound) to \(allowed.upperBound)"
                throw CowatchError(.wrongArgumentCount, "\(kind.rawValue) takes \(wanted) argument(s), got \(args.count)")
            }
        }
        func number(_ index: Int, _ what: String) throws(CowatchError) -> Int {
            try Self.entryNumber(args[index], what: "\(kind.rawValue)'s \(what)")
        }
        func flag(_ index: Int, _ meaning: String) throws(CowatchError) -> Bool {
            guard let on = args[index].boolValue else {
                throw CowatchError(.invalidArgument, "\(kind.rawValue) takes true or false (\(meaning))")
            }
            return on
        }
        let command: PlaylistCommand
        switch kind {
        case .getPlaylist:
            try expectCount(0...0)
            return .getPlaylist
        case .playlistAdd:
            try expectCount(1...2)
            var next = false
            if args.count > 1, args[1] != .null {
                switch args[1].stringValue ?? "" {
                case "end": next = false
                case "next": next = true
                default: throw CowatchError(.invalidArgument, "playlist_add's place is \"end\" (the default) or \"next\"")
                }
            }
            command = .add(try Self.playlistSources(args[0], what: kind.rawValue), next: next)
        case .playlistInsert:
            try expectCount(2...2)
            command = .insert(try Self.playlistSources(args[0], what: kind.rawValue), before: try number(1, "place"))
        case .playlistReplace:
            try expectCount(1...1)
            command = .replace(try Self.playlistSources(args[0], what: kind.rawValue))
        case .playlistRemove:
            try expectCount(1...1)
            command = .remove(try number(0, "entry"))
        case .playlistMove:
            try expectCount(2...2)
            command = .move(try number(0, "entry"), to: try number(1, "place"))
        case .playlistJump:
            try expectCount(1...1)
            command = .jump(try number(0, "entry"))
        case .playlistNext:
            try expectCount(0...0)
            command = .next
        case .playlistPrev:
            try expectCount(0...0)
            command = .previous
        case .playlistClear:
            try expectCount(0...0)
            command = .clear
        case .playlistUndo:
            try expectCount(0...0)
            command = .undo
        case .playlistRepeat:
            try expectCount(1...1)
            guard let text = args[0].stringValue, let mode = PlaylistRepeat(rawValue: text) else {
                throw CowatchError(.invalidArgument, "playlist_repeat takes \"none\", \"one\" or \"all\"")
            }
            command = .setRepeat(mode)
        case .playlistShuffle:
            try expectCount(1...1)
            command = .setShuffle(try flag(0, "true: shuffle the entries after the current one"))
        case .playlistEditing:
            try expectCount(1...1)
            command = .setEditing(open: try flag(0, "true: every member may edit, false: the owner and operators only"))
        case .playlistCountdown:
            try expectCount(1...1)
            guard let seconds = args[0].numberValue, seconds.isFinite, (0...PlaylistCommand.maxCountdown).contains(seconds) else {
                throw CowatchError(
                    .invalidArgument, "playlist_countdown takes a number of seconds from 0 to \(Int(PlaylistCommand.maxCountdown))")
            }
            command = .setCountdown(seconds)
        case .playlistPick:
            // ["playlist_pick", N, PATH, FORCE?]: FORCE true plays a file whose identity differs.
            try expectCount(2...3)
            var force = false
            if args.count > 2 { force = try flag(2, "true: use it although it is not the entry's file") }
            command = .pick(try number(0, "entry"), path: try Self.absolutePath(args[1], what: "playlist_pick"), force: force)
        default:
            throw CowatchError(.unknownCommand, "\(kind.rawValue) is not a playlist command")
        }
        return .playlist(command)
    }

    /// The wire array of a playlist command (name included).
    static func playlistArguments(_ command: PlaylistCommand) -> [JSONValue] {
        let name = JSONValue.string(command.kind.rawValue)
        func list(_ sources: [PlaylistCommand.Source]) -> JSONValue { .array(sources.map { .string($0.text) }) }
        switch command {
        case .add(let sources, let next): return [name, list(sources), .string(next ? "next" : "end")]
        case .insert(let sources, let before): return [name, list(sources), .count(before)]
        case .replace(let sources): return [name, list(sources)]
        case .remove(let number), .jump(let number): return [name, .count(number)]
        case .move(let number, let to): return [name, .count(number), .count(to)]
        case .next, .previous, .clear, .undo: return [name]
        case .setRepeat(let mode): return [name, .string(mode.rawValue)]
        case .setShuffle(let on), .setEditing(let on): return [name, .bool(on)]
        case .setCountdown(let seconds): return [name, .number(seconds)]
        case .pick(let number, let path, let force): return [name, .count(number), .string(path), .bool(force)]
        }
    }

    /// An entry number as people see it: a JSON integer from 1 to `PlaylistCommand.maxNumber`.
    /// Strings, fractions and booleans are refused (unlike seek's numbers, a string is never read
    /// as a number here: a position is never typed into JSON by hand).
    static func entryNumber(_ value: JSONValue, what: String) throws(CowatchError) -> Int {
        guard let number = value.numberValue, number.isFinite, number.rounded(.towardZero) == number,
            number >= 1, number <= Double(PlaylistCommand.maxNumber)
        else {
            throw CowatchError(.invalidArgument, "\(what) is an entry number, a whole number from 1 to \(PlaylistCommand.maxNumber)")
        }
        return Int(number)
    }

    /// A list of 1–`PlaylistCommand.maxItems` media: absolute paths or network URLs.
    static func playlistSources(_ value: JSONValue, what: String) throws(CowatchError) -> [PlaylistCommand.Source] {
        guard let list = value.arrayValue, (1...PlaylistCommand.maxItems).contains(list.count) else {
            throw CowatchError(
                .invalidArgument, "\(what) takes a list of 1–\(PlaylistCommand.maxItems) file paths or URLs, e.g. [\"/films/a.mkv\"]")
        }
        var sources: [PlaylistCommand.Source] = []
        sources.reserveCapacity(list.count)
        for item in list { sources.append(try playlistSource(item, what: what)) }
        return sources
    }

    /// One medium: an absolute path (as `attach`'s) or a network URL of a scheme a room may open
    /// (at most `maxURLLength` bytes, as `open`'s), without control characters
    /// (`PlaylistCommand.Source.init(checking:)`).
    static func playlistSource(_ value: JSONValue, what: String) throws(CowatchError) -> PlaylistCommand.Source {
        guard let text = value.stringValue else {
            throw CowatchError(.invalidArgument, "\(what) takes file paths and URLs, as strings")
        }
        do {
            return try PlaylistCommand.Source(checking: text)
        } catch {
            throw CowatchError(.invalidArgument, "\(what): \(error.message)")
        }
    }
}
