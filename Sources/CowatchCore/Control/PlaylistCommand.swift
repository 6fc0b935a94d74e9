/// (1.7) An edit of the room's shared playlist, or a local choice about it, as a control client
/// asks for it: `ControlCommand.playlist`. Its wire form (`playlist_add`, `playlist_jump`, …) is
/// parsed and written in `ControlCommand+Playlist.swift`.
///
/// Entries are addressed by their number as people see them: 1-based, `#1` is the first (never
/// the server's entry ids, which people never see). The daemon maps numbers to ids against the
/// list it has (`edit(against:items:)`) and sends the list's version with the edit, so an edit
/// made on a list that changed meanwhile comes back as `stale-playlist` instead of touching the
/// wrong entry.
///
/// Every value here is in range: numbers are 1…`maxNumber`, lists hold 1…`maxItems` sources, paths
/// are absolute and URLs network URLs of a scheme a room may open, without control characters.
///
/// Threading: a value type, safe to share.
public enum PlaylistCommand: Sendable, Hashable {
    /// Appends the media at the end, or (`next`) right after the current entry.
    case add([Source], next: Bool)
    /// Inserts the media before entry #`before` (`count + 1` appends).
    case insert([Source], before: Int)
    /// Replaces the whole list (the media playing now keeps playing).
    case replace([Source])
    /// Removes entry #n.
    case remove(Int)
    /// Moves entry #n so that it becomes #`to`.
    case move(Int, to: Int)
    /// Plays entry #n now, for everyone.
    case jump(Int)
    /// Plays the entry after the current one, for everyone.
    case next
    /// Plays the entry before the current one, for everyone.
    case previous
    /// Empties the list (the media playing now keeps playing).
    case clear
    /// Takes back the last change to the list (one level).
    case undo
    case setRepeat(PlaylistRepeat)
    /// On: the entries after the current one are reordered; off: the order stays as it is.
    case setShuffle(Bool)
    /// (The owner) In a managed room, lets every member edit the list (`true`), or only the
    /// owner and operators again (`false`).
    case setEditing(open: Bool)
    /// Seconds between everyone having loaded the next entry and everyone starting it (0…60).
    case setCountdown(Double)
    /// This daemon plays the file at `path` for entry #n, although its identity differs from the
    /// entry's (another encode, a cut); `force` must be true when it differs (the daemon checks).
    /// Local: nothing reaches the room.
    case pick(Int, path: String, force: Bool)

    /// Media to put in the list: a file of this machine or a network URL.
    public enum Source: Sendable, Hashable {
        /// An absolute path on this daemon's machine: the daemon sends the file's identity (size,
        /// fingerprint, duration, name), never the path.
        case file(String)
        /// A network URL of a scheme a room may open (http, https, …; never `file:`).
        case url(String)

        /// The longest path or URL, in bytes (as `attach`'s paths and `open`'s URLs).
        public static let maxBytes = ControlCommand.maxURLLength

        /// The text as given: the path or the URL.
        public var text: String {
            switch self {
            case .file(let path): path
            case .url(let url): url
            }
        }

        /// `text` as a file (it starts with `/`) or a network URL of a scheme a room may open
        /// (`scheme://host…`: http, https, ftp, rtsp, …; never `file:` or mpv's own sources),
        /// 1–`maxBytes` bytes without control characters.
        /// Errors: `invalid-argument`, saying which rule `text` breaks (never repeating it).
        public init(checking text: String) throws(CowatchError) {
            guard !text.isEmpty, text.utf8.count <= Self.maxBytes, ControlCharacters.isClean(text) else {
                throw CowatchError(
                    .invalidArgument, "a file path or URL is 1–\(Self.maxBytes) bytes without control characters")
            }
            if text.hasPrefix("/") {
                self = .file(text)
            } else if RoomSequencer.isNetworkURL(text) {
                self = .url(text)
            } else {
                throw CowatchError(
                    .invalidArgument,
                    "neither an absolute file path nor a network URL (http, https, …): a room never opens file: or mpv's own sources")
            }
        }
    }

    /// The highest entry number a command may name: a list holds at most 500 entries, and
    /// `insert` may name the place after the last.
    public static let maxNumber = PlaylistState.maxEntries + 1
    /// The most sources one `add`, `insert` or `replace` carries.
    public static let maxItems = PlaylistState.maxEntries
    /// The longest countdown, seconds.
    public static let maxCountdown: Double = 60

    /// The command's name on the wire.
    public var kind: ControlCommand.Name {
        switch self {
        case .add: .playlistAdd
        case .insert: .playlistInsert
        case .replace: .playlistReplace
        case .remove: .playlistRemove
        case .move: .playlistMove
        case .jump: .playlistJump
        case .next: .playlistNext
        case .previous: .playlistPrev
        case .clear: .playlistClear
        case .undo: .playlistUndo
        case .setRepeat: .playlistRepeat
        case .setShuffle: .playlistShuffle
        case .setEditing: .playlistEditing
        case .setCountdown: .playlistCountdown
        case .pick: .playlistPick
        }
    }

    /// The sources an `add`, `insert` or `replace` carries; empty for the others.
    public var sources: [Source] {
        switch self {
        case .add(let sources, _), .insert(let sources, _), .replace(let sources): sources
        default: []
        }
    }

    /// The room's edit for this command, against `state`, the list as this daemon has it:
    /// numbers become entry ids and 0-based positions. `items` are `sources` made into the room's
    /// items, in the same order (files by identity; the daemon reads them). Nil for `pick`, which
    /// is this daemon's own business.
    ///
    /// Errors: `invalid-argument` for a number with no entry in `state` ("there is no #7: the
    /// playlist has 5 entries"), or `items` not matching `sources` in number.
    public func edit(against state: PlaylistState, items: [PlaylistItem] = []) throws(CowatchError) -> PlaylistEdit? {
        guard items.count == sources.count else {
            throw CowatchError(.invalidArgument, "\(sources.count) media given, \(items.count) read")
        }
        let count = state.entries.count
        func id(_ number: Int) throws(CowatchError) -> PlaylistEntry.ID {
            try Self.entry(number, in: state).id
        }
        switch self {
        case .add(_, let next): return .add(items, next: next)
        case .insert(_, let before):
            guard before >= 1, before <= count + 1 else {
                throw CowatchError(
                    .invalidArgument, "there is no place #\(before): the playlist has \(Self.entries(count)) (#\(count + 1) appends)")
            }
            return .insert(items, at: before - 1)
        case .replace: return .replace(items)
        case .remove(let number): return .remove(try id(number))
        case .move(let number, let to):
            let entry = try id(number)
            guard to >= 1, to <= count else { throw Self.noEntry(to, count: count) }
            return .move(entry, to: to - 1)
        case .jump(let number): return .jump(try id(number))
        case .next: return .next
        case .previous: return .previous
        case .clear: return .clear
        case .undo: return .undo
        case .setRepeat(let mode): return .setRepeat(mode)
        case .setShuffle(let on): return .setShuffle(on)
        case .setEditing(let open): return .setEditing(open: open)
        case .setCountdown(let seconds): return .setCountdown(seconds)
        case .pick: return nil
        }
    }

    /// The entry #`number` names in `state`. Errors: `invalid-argument` when there is none.
    public static func entry(_ number: Int, in state: PlaylistState) throws(CowatchError) -> PlaylistEntry {
        guard number >= 1, number <= state.entries.count else { throw noEntry(number, count: state.entries.count) }
        return state.entries[number - 1]
    }

    static func noEntry(_ number: Int, count: Int) -> CowatchError {
        count == 0
            ? CowatchError(.invalidArgument, "there is no #\(number): the playlist is empty")
            : CowatchError(.invalidArgument, "there is no #\(number): the playlist has \(entries(count))")
    }

    static func entries(_ count: Int) -> String {
        count == 1 ? "1 entry" : "\(count) entries"
    }
}
