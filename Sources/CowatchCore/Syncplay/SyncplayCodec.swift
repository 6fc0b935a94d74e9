/// Syncplay's lines to `[SyncplayCommand]` and back: the one place that reads or writes its JSON.
///
/// Everything a Syncplay peer sends is checked here: the line is one JSON object of known
/// commands; every string is bounded and free of control characters (a server's message of the
/// day may hold line breaks); every number is finite and of a sane size; a playlist holds at most
/// `maxPlaylistFiles` names. Unknown keys inside a command are ignored, as Syncplay does (newer
/// versions add them); an unknown command is refused, as Syncplay does.
///
/// Threading: pure functions; any thread.
public enum SyncplayCodec {
    /// Syncplay closes a connection whose line is longer than this (bytes, without `\r\n`).
    public static let maxLineBytes = 16_384
    /// The longest string of any field, in characters (file names and URLs included).
    public static let maxTextLength = 1_000
    /// Syncplay's own bound on a shared playlist.
    public static let maxPlaylistFiles = 250
    /// Users one `List` answer may carry.
    public static let maxListedUsers = 1_000

    /// The commands of one line (without its `\r\n`), in a fixed order: TLS, Hello, Set, List,
    /// State, Chat, Error.
    ///
    /// Errors: `invalid-json` (not JSON), `protocol-violation` (not an object, a field of the
    /// wrong kind, a bad string or number), `unknown-command`.
    public static func decode<Bytes: Collection<UInt8>>(line: Bytes) throws(CowatchError) -> [SyncplayCommand] {
        guard line.count <= maxLineBytes else { throw .syncplayLine("the line is longer than \(maxLineBytes) bytes") }
        guard case .object(let object) = try JSONValue.parse(line) else { throw .syncplayLine("the line is not a JSON object") }
        if let unknown = object.keys.sorted().first(where: { !commandOrder.contains($0) }) {
            throw CowatchError(.unknownCommand, "a Syncplay command Cowatch does not know: \(SyncplayText.quoted(unknown))")
        }
        var commands: [SyncplayCommand] = []
        for name in commandOrder {
            guard let body = object[name] else { continue }
            commands.append(try SyncplayDecoder.command(name, body))
        }
        guard !commands.isEmpty else { throw .syncplayLine("the line holds no command") }
        return commands
    }

    /// One line for `commands` (each command once; a later one of the same kind replaces an
    /// earlier one), ending in `\r\n`.
    public static func encode(_ commands: [SyncplayCommand]) -> [UInt8] {
        var object: [String: JSONValue] = [:]
        for command in commands {
            let (name, body) = SyncplayEncoder.command(command)
            object[name] = body
        }
        return JSONValue.object(object).encoded() + [0x0D, 0x0A]
    }

    /// One line for one command, ending in `\r\n`.
    public static func encode(_ command: SyncplayCommand) -> [UInt8] { encode([command]) }

    static let commandOrder = ["TLS", "Hello", "Set", "List", "State", "Chat", "Error"]
}

extension CowatchError {
    /// A Syncplay peer's line that breaks the protocol.
    static func syncplayLine(_ reason: String) -> CowatchError {
        CowatchError(.protocolViolation, "a bad Syncplay line: \(reason)")
    }
}

/// Checks on a peer's strings.
enum SyncplayText {
    /// A string of at most `SyncplayCodec.maxTextLength` characters without control characters
    /// (line breaks too when `lines`).
    static func check(_ text: String, _ what: String, lines: Bool = false) throws(CowatchError) -> String {
        guard text.count <= SyncplayCodec.maxTextLength else {
            throw .syncplayLine("\(what) is longer than \(SyncplayCodec.maxTextLength) characters")
        }
        let bad = text.unicodeScalars.contains { scalar in
            ControlCharacters.isControl(scalar) && !(lines && scalar == "\n")
        }
        guard !bad else { throw .syncplayLine("\(what) holds control characters") }
        return text
    }

    /// `text` for a message about it: at most 40 characters, controls shown as `?`.
    static func quoted(_ text: String) -> String {
        let shown = String(String.UnicodeScalarView(text.unicodeScalars.prefix(40).map { ControlCharacters.isControl($0) ? "?" : $0 }))
        return "\"\(shown)\(text.unicodeScalars.count > 40 ? "…" : "")\""
    }
}
