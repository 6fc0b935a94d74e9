import ArgumentParser
import CowatchClient
import CowatchCore
import Foundation

// The room's shared playlist: `cowatch playlist [show]` and its subcommands, and the short forms
// `cowatch add`, `remove`, `move`, `jump`, `next`, `prev`, `repeat` and `shuffle`.
//
// Entries are named by their number as `cowatch playlist` shows them (#1 is the first). Files are
// sent as absolute paths of this machine (the daemon sends the room their identity, never the
// path); a file that does not exist is refused here, before anything is sent.

struct PlaylistGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "playlist",
        abstract: "The room's shared playlist: show it (the default), add, insert, remove, move, jump, clear, undo, save…",
        discussion: """
            Entries are named by their number as shown (#1 is the first). Files are matched by what they hold, \
            not by name: each viewer plays their own copy; one who lacks it is named and not waited for.
            """,
        subcommands: [
            ShowPlaylist.self, AddToPlaylist.self, InsertIntoPlaylist.self, RemoveFromPlaylist.self, MoveInPlaylist.self,
            JumpInPlaylist.self, NextInPlaylist.self, PrevInPlaylist.self, ClearPlaylist.self, UndoPlaylist.self,
            RepeatPlaylist.self, ShufflePlaylist.self, OpenPlaylist.self, ClosePlaylist.self, PlaylistCountdownSetting.self,
            PickForEntry.self, SavePlaylist.self,
        ],
        defaultSubcommand: ShowPlaylist.self)
}

/// Seconds to wait for an edit that carries files: the daemon reads each one's identity first.
private let filesTimeout = 120.0

/// What an edit prints once the daemon answers with the playlist (`--json`: the reply as it came).
enum PlaylistShown {
    /// The whole list and the settings line.
    case list
    /// The current entry's line.
    case current
    /// The settings line.
    case settings
}

/// Shared body of the playlist's edits: send, then show the list (or part of it) as it now is.
protocol PlaylistEditCommand: ParsableCommand {
    var connection: ConnectionOptions { get }
    func command() throws -> ControlCommand
    /// What to print from the reply.
    var shown: PlaylistShown { get }
    /// Said when the reply is not a playlist (nothing to show).
    var done: String { get }
    var timeout: Double { get }
}

extension PlaylistEditCommand {
    var shown: PlaylistShown { .list }
    var timeout: Double { 15 }

    func run() throws {
        let data = try connection.send(try command(), timeout: timeout)
        if connection.json {
            printJSON(data)
            return
        }
        guard let reply = try? PlaylistReply(json: data) else {
            print(done)
            return
        }
        switch shown {
        case .list: print(reply.lines.joined(separator: "\n"))
        case .current: print(reply.currentEntry.map(PlaylistReply.line) ?? done)
        case .settings: print(reply.settingsLine)
        }
    }
}

/// The command for `arguments`, checked by the control protocol's own parser (the arguments were
/// checked in `validate()` already: what it still refuses is one line on stderr).
private func checked(_ arguments: [JSONValue]) throws -> ControlCommand {
    do {
        return try ControlCommand(arguments: arguments)
    } catch {
        throw CLIFailure(error)
    }
}

/// An entry number as typed: `3` or `#3`.
func playlistNumber(_ text: String) throws -> Int {
    let digits = text.hasPrefix("#") ? String(text.dropFirst()) : text
    guard let number = Int(digits), (1...PlaylistCommand.maxNumber).contains(number) else {
        throw ValidationError("\"\(text.prefix(40))\" is not an entry number: write 3 for #3, as cowatch playlist shows them")
    }
    return number
}

/// Checks media as typed, before anything else (`validate()`): 1–500 of them, each a URL a room
/// opens (anything with `://`) or a file path; a usage error otherwise.
func validatePlaylistSources(_ typed: [String]) throws {
    guard !typed.isEmpty else { throw ValidationError("give at least one file or URL") }
    guard typed.count <= PlaylistCommand.maxItems else {
        throw ValidationError("at most \(PlaylistCommand.maxItems) at once (a playlist holds \(PlaylistState.maxEntries) entries)")
    }
    for text in typed {
        do {
            _ = try PlaylistCommand.Source(checking: text.contains("://") ? text : absolute(text))
        } catch {
            throw ValidationError("\(text.prefix(80)): \(error.message)")
        }
    }
}

/// Media as typed: a URL (anything with `://`) as it is, a file as an absolute path of this
/// machine. A file that does not exist, or a directory, is refused here (`not-found`), before
/// anything is sent.
func playlistSources(_ typed: [String]) throws -> JSONValue {
    try validatePlaylistSources(typed)
    var sources: [JSONValue] = []
    for text in typed {
        if text.contains("://") {
            sources.append(.string(text))
            continue
        }
        let path = absolute(text)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CLIFailure(CowatchError(.notFound, "no such file: \(text.prefix(200))"))
        }
        guard !isDirectory.boolValue else {
            throw CLIFailure(CowatchError(.invalidArgument, "\(text.prefix(200)) is a directory: name its files (\(text.prefix(200))/*.mkv)"))
        }
        sources.append(.string(path))
    }
    return .array(sources)
}

struct ShowPlaylist: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show the playlist: ▶ the current entry, durations, who added each, who lacks it; then repeat, shuffle, editing, countdown.")
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        let data = try connection.send(.getPlaylist)
        if connection.json {
            printJSON(data)
            return
        }
        print(try connection.read(PlaylistReply.self, from: data).lines.joined(separator: "\n"))
    }
}

struct AddToPlaylist: PlaylistEditCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add files or URLs to the end of the room's playlist (--next: right after the current entry).")
    @OptionGroup var connection: ConnectionOptions
    @Flag(help: "Put them right after the current entry.") var next = false
    @Argument(help: ArgumentHelp("Files of this machine, or network URLs (http, https, …).", valueName: "FILE|URL"), completion: .file())
    var media: [String] = []

    func validate() throws { try validatePlaylistSources(media) }
    func command() throws -> ControlCommand {
        try checked(["playlist_add", try playlistSources(media), .string(next ? "next" : "end")])
    }
    var done: String { "added \(media.count == 1 ? "1 entry" : "\(media.count) entries")" }
    var timeout: Double { filesTimeout }
}

struct InsertIntoPlaylist: PlaylistEditCommand {
    static let configuration = CommandConfiguration(
        commandName: "insert", abstract: "Insert files or URLs before entry #N (one more than the last appends).")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: ArgumentHelp("The entry to insert before.", valueName: "N")) var number: String
    @Argument(help: ArgumentHelp("Files of this machine, or network URLs.", valueName: "FILE|URL"), completion: .file())
    var media: [String] = []

    func validate() throws {
        _ = try playlistNumber(number)
        try validatePlaylistSources(media)
    }
    func command() throws -> ControlCommand {
        try checked(["playlist_insert", try playlistSources(media), .number(Double(try playlistNumber(number)))])
    }
    var done: String { "inserted before #\(number)" }
    var timeout: Double { filesTimeout }
}

struct RemoveFromPlaylist: PlaylistEditCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove entry #N from the playlist (the current one keeps playing).")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: ArgumentHelp("The entry.", valueName: "N")) var number: String

    func validate() throws { _ = try command() }
    func command() throws -> ControlCommand { .playlist(.remove(try playlistNumber(number))) }
    var done: String { "removed #\(number)" }
}

struct MoveInPlaylist: PlaylistEditCommand {
    static let configuration = CommandConfiguration(commandName: "move", abstract: "Move entry #N so that it becomes #M.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: ArgumentHelp("The entry.", valueName: "N")) var number: String
    @Argument(help: ArgumentHelp("Its new place.", valueName: "M")) var place: String

    func validate() throws { _ = try command() }
    func command() throws -> ControlCommand { .playlist(.move(try playlistNumber(number), to: try playlistNumber(place))) }
    var done: String { "moved #\(number) to #\(place)" }
}

struct JumpInPlaylist: PlaylistEditCommand {
    static let configuration = CommandConfiguration(
        commandName: "jump", abstract: "Play entry #N now, for everyone (they start together once all have it).")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: ArgumentHelp("The entry.", valueName: "N")) var number: String

    func validate() throws { _ = try command() }
    func command() throws -> ControlCommand { .playlist(.jump(try playlistNumber(number))) }
    var shown: PlaylistShown { .current }
    var done: String { "playing #\(number) for everyone" }
}

struct NextInPlaylist: PlaylistEditCommand {
    static let configuration = CommandConfiguration(commandName: "next", abstract: "Play the next entry of the playlist, for everyone.")
    @OptionGroup var connection: ConnectionOptions
    func command() -> ControlCommand { .playlist(.next) }
    var shown: PlaylistShown { .current }
    var done: String { "playing the next entry for everyone" }
}

struct PrevInPlaylist: PlaylistEditCommand {
    static let configuration = CommandConfiguration(commandName: "prev", abstract: "Play the previous entry of the playlist, for everyone.")
    @OptionGroup var connection: ConnectionOptions
    func command() -> ControlCommand { .playlist(.previous) }
    var shown: PlaylistShown { .current }
    var done: String { "playing the previous entry for everyone" }
}

struct ClearPlaylist: PlaylistEditCommand {
    static let configuration = CommandConfiguration(
        commandName: "clear", abstract: "Empty the playlist (what plays keeps playing; playlist undo brings the list back).")
    @OptionGroup var connection: ConnectionOptions
    func command() -> ControlCommand { .playlist(.clear) }
    var done: String { "emptied the playlist" }
}

struct UndoPlaylist: PlaylistEditCommand {
    static let configuration = CommandConfiguration(
        commandName: "undo", abstract: "Take back the last change to the list (add, insert, remove, move, replace, clear or shuffle).")
    @OptionGroup var connection: ConnectionOptions
    func command() -> ControlCommand { .playlist(.undo) }
    var done: String { "took back the last change" }
}

struct RepeatPlaylist: PlaylistEditCommand {
    static let configuration = CommandConfiguration(
        commandName: "repeat",
        abstract: "At the end of an entry: none (the list stops at its end), one (the entry again) or all (from #1 again).")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: ArgumentHelp("none, one or all.", valueName: "none|one|all"), completion: .list(["none", "one", "all"]))
    var mode: String

    func validate() throws { _ = try command() }
    func command() throws -> ControlCommand {
        guard let parsed = PlaylistRepeat(rawValue: mode.lowercased()) else {
            throw ValidationError("repeat takes none, one or all")
        }
        return .playlist(.setRepeat(parsed))
    }
    var shown: PlaylistShown { .settings }
    var done: String { "repeat \(mode.lowercased())" }
}

struct ShufflePlaylist: PlaylistEditCommand {
    static let configuration = CommandConfiguration(
        commandName: "shuffle", abstract: "on: shuffle the entries after the current one; off: keep the order.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: ArgumentHelp("on or off.", valueName: "on|off"), completion: .list(["on", "off"])) var setting: String

    func validate() throws { _ = try command() }
    func command() throws -> ControlCommand {
        switch setting.lowercased() {
        case "on", "yes", "true": return .playlist(.setShuffle(true))
        case "off", "no", "false": return .playlist(.setShuffle(false))
        default: throw ValidationError("shuffle takes on or off")
        }
    }
    var shown: PlaylistShown { .list }
    var done: String { "shuffle \(setting.lowercased())" }
}

struct OpenPlaylist: PlaylistEditCommand {
    static let configuration = CommandConfiguration(
        commandName: "open", abstract: "The owner, in a managed room: let every member edit the playlist.")
    @OptionGroup var connection: ConnectionOptions
    func command() -> ControlCommand { .playlist(.setEditing(open: true)) }
    var shown: PlaylistShown { .settings }
    var done: String { "everyone may edit the playlist" }
}

struct ClosePlaylist: PlaylistEditCommand {
    static let configuration = CommandConfiguration(
        commandName: "close", abstract: "The owner, in a managed room: only the owner and operators edit the playlist again.")
    @OptionGroup var connection: ConnectionOptions
    func command() -> ControlCommand { .playlist(.setEditing(open: false)) }
    var shown: PlaylistShown { .settings }
    var done: String { "only the owner and operators edit the playlist" }
}

struct PlaylistCountdownSetting: PlaylistEditCommand {
    static let configuration = CommandConfiguration(
        commandName: "countdown",
        abstract: "Seconds between everyone having loaded the next entry and everyone starting it (0 to 60; 3 by default).")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: ArgumentHelp("Seconds, 0 to 60.", valueName: "SECONDS")) var seconds: Double

    func validate() throws { _ = try command() }
    func command() throws -> ControlCommand {
        guard seconds.isFinite, (0...PlaylistCommand.maxCountdown).contains(seconds) else {
            throw ValidationError("the countdown is 0 to \(Int(PlaylistCommand.maxCountdown)) seconds")
        }
        return .playlist(.setCountdown(seconds))
    }
    var shown: PlaylistShown { .settings }
    var done: String { "countdown \(seconds) s" }
}

struct PickForEntry: PlaylistEditCommand {
    static let configuration = CommandConfiguration(
        commandName: "pick",
        abstract: "Play this file of yours for entry #N, although it is not the same file (another encode, a cut): --force.",
        discussion: "Only your player is concerned; the others play their own copies.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: ArgumentHelp("The entry.", valueName: "N")) var number: String
    @Argument(help: "The file to play for it.", completion: .file()) var file: String
    @Flag(help: "Use it although its content differs from the entry's.") var force = false

    func validate() throws {
        _ = try playlistNumber(number)
        guard !file.contains("://") else { throw ValidationError("pick takes a file of this machine, not a URL") }
        try validatePlaylistSources([file])
    }
    func command() throws -> ControlCommand {
        let path = try playlistSources([file]).arrayValue?.first ?? .null
        return try checked(["playlist_pick", .number(Double(try playlistNumber(number))), path, .bool(force)])
    }
    var done: String { "#\(number) plays \(file) here" }
    var timeout: Double { filesTimeout }
}

struct SavePlaylist: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "save",
        abstract: "Write the playlist to an extended M3U file: your own path for each file you have, the URL for a URL.",
        discussion: "A file you lack is a comment line (# missing here: NAME). An existing FILE is replaced only with --force.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: ArgumentHelp("The M3U file to write.", valueName: "FILE.m3u"), completion: .file(extensions: ["m3u", "m3u8"]))
    var file: String
    @Flag(help: "Replace FILE if it exists.") var force = false

    func run() throws {
        let reply = try connection.read(PlaylistReply.self, from: try connection.send(.getPlaylist))
        try save(reply.m3u, to: file, replacing: force)
        let missing = reply.missingHere
        let names = missing.prefix(5).map { $0.name ?? $0.title }.joined(separator: ", ") + (missing.count > 5 ? ", …" : "")
        let note = missing.isEmpty ? "" : " (\(missing.count) missing here: \(names))"
        let count = reply.entries.count == 1 ? "1 entry" : "\(reply.entries.count) entries"
        if !connection.json { print("saved \(count) to \(file)\(note)") }
    }

    /// Writes `text` to `path`: a new file (mode 0644 less the umask), or with `replacing` an
    /// existing one truncated; never through a symbolic link.
    private func save(_ text: String, to path: String, replacing: Bool) throws {
        let flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (replacing ? O_TRUNC : O_EXCL)
        let descriptor = open(path, flags, 0o644)
        guard descriptor >= 0 else {
            let code = errno
            switch code {
            case EEXIST:
                throw CLIFailure(CowatchError(.alreadyExists, "\(path) exists; --force replaces it"))
            case ELOOP:
                throw CLIFailure(CowatchError(.unsafePath, "\(path) is a symbolic link; not written through"))
            default:
                throw CLIFailure(CowatchError(.ioError, "cannot write \(path): \(String(cString: strerror(code)))"))
            }
        }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw CLIFailure(CowatchError(.ioError, "cannot write \(path): \(String(cString: strerror(errno)))"))
            }
            offset += written
        }
    }
}
