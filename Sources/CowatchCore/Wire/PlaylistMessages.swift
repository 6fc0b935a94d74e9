/// The room's shared playlist on the wire (feature `playlist`): entries, edits, availability
/// reports, end-of-file reports, and the server's state. Data only; `WireCodec+Playlist.swift`
/// turns them into lines and back, `RoomPlaylist` (server) is the machine that sequences them.
///
/// An entry is a network URL or a local file *by identity* (size, fingerprint, duration, with
/// its file name as a display hint): a path never crosses the wire, and every participant finds
/// its own copy by the identity. The server numbers entries (`PlaylistEntry.ID`, a counter that
/// never repeats within a room), so the same media may be in the list twice.
///
/// Threading: value types, safe to share.

/// One entry of a room's playlist, as everyone sees it.
public struct PlaylistEntry: Sendable, Hashable {
    /// The server's number for an entry: 1, 2, 3, … in the order they were added, never reused
    /// in the room (not a position: positions move).
    public typealias ID = Int

    /// The longest title, in characters (and at most `maxTitleBytes` bytes of UTF-8).
    public static let maxTitleCharacters = 200
    public static let maxTitleBytes = 1024

    /// What an entry plays.
    public enum Media: Sendable, Hashable {
        /// A network URL (a scheme a room may open: `RoomSequencer.networkSchemes`).
        case url(String)
        /// A local file, by identity (`MediaIdentity`: size, fingerprint, duration, and its name
        /// as a hint): each participant plays its own copy, found by the identity, never a path.
        case file(MediaIdentity)
    }

    public var id: ID
    public var media: Media
    /// Shown to people (1–`maxTitleCharacters` characters); nil: the file's name or the URL's
    /// last component.
    public var title: String?
    /// The participant who added it.
    public var addedBy: String

    public init(id: ID, media: Media, title: String? = nil, addedBy: String) {
        self.id = id
        self.media = media
        self.title = title
        self.addedBy = addedBy
    }

    /// What people see: the title, else the file's name, else the URL's last path component.
    public var displayTitle: String {
        if let title, !title.isEmpty { return title }
        switch media {
        case .file(let file): return file.name
        case .url(let url): return Activity(url: url).displayTitle
        }
    }

    /// The duration the entry came with (local files whose adder knew it).
    public var duration: Double? {
        if case .file(let file) = media { return file.duration }
        return nil
    }
}

/// An entry as a participant proposes it (`add`, `insert`, `replace`): no id and no adder yet,
/// the server gives both.
public struct PlaylistItem: Sendable, Hashable {
    public var media: PlaylistEntry.Media
    public var title: String?

    public init(media: PlaylistEntry.Media, title: String? = nil) {
        self.media = media
        self.title = title
    }

    public init(url: String, title: String? = nil) {
        self.init(media: .url(url), title: title)
    }

    public init(file: MediaIdentity, title: String? = nil) {
        self.init(media: .file(file), title: title)
    }
}

/// The room's repeat mode (room state, not per user).
public enum PlaylistRepeat: String, Sendable, Hashable, CaseIterable {
    /// At the end of the list the group stops (paused at the end).
    case none
    /// The current entry plays again when it ends (`next` still moves on).
    case one
    /// After the last entry, the first (reshuffled when shuffle is on).
    case all
}

/// What a participant asks the playlist to do. Positions (`at`, `to`) count from 0; in
/// sentences people read they count from 1 (`#1` is position 0).
public enum PlaylistEdit: Sendable, Hashable {
    /// Appends the items, or (`next`) puts them right after the current entry.
    case add([PlaylistItem], next: Bool)
    /// Inserts the items at position `at` (0…count).
    case insert([PlaylistItem], at: Int)
    case remove(PlaylistEntry.ID)
    /// Moves an entry to position `to` (0…count − 1, its place after the move).
    case move(PlaylistEntry.ID, to: Int)
    /// Plays this entry now, for everyone.
    case jump(PlaylistEntry.ID)
    /// Plays the entry after the current one (wrapping with repeat all), for everyone.
    case next
    /// Plays the entry before the current one (wrapping with repeat all), for everyone.
    case previous
    /// Replaces the whole list (the current media keeps playing).
    case replace([PlaylistItem])
    /// Empties the list (the current media keeps playing).
    case clear
    /// Takes back the last change to the list (one level: add, insert, remove, move, replace,
    /// clear, shuffle).
    case undo
    case setRepeat(PlaylistRepeat)
    /// On: reorders the entries after the current one (the current stays); off: keeps the order.
    case setShuffle(Bool)
    /// (Owner only) In a managed room, lets members edit the playlist too (`true`), or only the
    /// owner and operators again (`false`).
    case setEditing(open: Bool)
    /// Seconds between everyone having loaded the next entry and everyone starting it (0…60).
    case setCountdown(Double)

    /// The wire's name of the edit (`op`).
    public var op: String {
        switch self {
        case .add: "add"
        case .insert: "insert"
        case .remove: "remove"
        case .move: "move"
        case .jump: "jump"
        case .next: "next"
        case .previous: "previous"
        case .replace: "replace"
        case .clear: "clear"
        case .undo: "undo"
        case .setRepeat: "repeat"
        case .setShuffle: "shuffle"
        case .setEditing: "editing"
        case .setCountdown: "countdown"
        }
    }
}

/// One edit as sent: the sender's request id, and what it saw (the list's `version` and its
/// `current` entry). The server refuses an edit made on a list that changed since
/// (`stale-playlist`), with the list as it is.
public struct PlaylistEditRequest: Sendable, Hashable {
    /// Chosen by the sender (0…`wireMaxRequestID`): its `refused` names it, and the resulting
    /// `playlist` state echoes it to the sender only.
    public var id: Int
    public var version: Int
    public var current: PlaylistEntry.ID?
    public var edit: PlaylistEdit

    public init(id: Int, version: Int, current: PlaylistEntry.ID?, edit: PlaylistEdit) {
        self.id = id
        self.version = version
        self.current = current
        self.edit = edit
    }
}

/// What one participant said it can play, entry by entry, in the order of the state's entries.
public struct PlaylistAvailability: Sendable, Hashable {
    public enum Mark: String, Sendable, Hashable, CaseIterable {
        /// It has the entry (found its file, or may open its URL).
        case has = "y"
        /// It said it lacks the entry.
        case lacks = "n"
        /// It has not said (the entry came after its last report).
        case unknown = "?"
    }

    public var name: String
    /// One mark per entry of the list, in its order.
    public var marks: [Mark]

    public init(name: String, marks: [Mark]) {
        self.name = name
        self.marks = marks
    }

    /// The ids of `entries` this participant lacks (by position: `marks` follow `entries`).
    public func lacking(in entries: [PlaylistEntry]) -> [PlaylistEntry.ID] {
        zip(entries, marks).compactMap { $1 == .lacks ? $0.id : nil }
    }
}

/// What changed, and who changed it: the playlist's notices.
public struct PlaylistChange: Sendable, Hashable {
    /// Who did it; nil for what the server did by itself (an entry ended, the list finished).
    public var actor: String?
    /// A word: an edit's `op` (`add`, `remove`, `jump`, …), or `advance` (the current entry
    /// ended and the next started), `again` (repeat one), `finish` (the list ended; the group
    /// paused at the end). Unknown words may come from newer servers.
    public var kind: String
    /// The sentence shown to people: "bob added Episode 3 as #4", "ann skipped to #2 (Episode 2)".
    public var text: String
    /// The entry it is about, if one.
    public var entry: PlaylistEntry.ID?

    public init(actor: String?, kind: String, text: String, entry: PlaylistEntry.ID? = nil) {
        self.actor = actor
        self.kind = kind
        self.text = text
        self.entry = entry
    }

    /// The longest `text`, in bytes.
    public static let maxTextBytes = 2048
}

/// The whole playlist, as the server sends it after every change and to every joiner.
public struct PlaylistState: Sendable, Hashable {
    /// Grows with every change (edits, a new current entry, settings). An edit names the
    /// version it was made on.
    public var version: Int
    public var entries: [PlaylistEntry]
    /// The entry the group plays or last played (nil: none, or it was removed).
    public var current: PlaylistEntry.ID?
    /// The room activity (`Activity.id`) the current entry was opened as: when the room's
    /// activity has this id, the room plays `current`; when it differs, something else (an
    /// `open`, the room's first media) plays, and the list goes on after it.
    public var activity: Int?
    public var repeatMode: PlaylistRepeat
    public var shuffle: Bool
    /// Members may edit in a managed room (the owner opened it); in an unmanaged room everyone may.
    public var openEditing: Bool
    /// Seconds between everyone having loaded a new entry and everyone starting it.
    public var countdown: Double
    /// An `undo` would take something back.
    public var canUndo: Bool
    /// What each participant that reported said it can play (`playlist_have`), by name.
    public var availability: [PlaylistAvailability]

    public init(
        version: Int = 0, entries: [PlaylistEntry] = [], current: PlaylistEntry.ID? = nil, activity: Int? = nil,
        repeatMode: PlaylistRepeat = .none, shuffle: Bool = false, openEditing: Bool = false, countdown: Double = 3,
        canUndo: Bool = false, availability: [PlaylistAvailability] = []
    ) {
        self.version = version
        self.entries = entries
        self.current = current
        self.activity = activity
        self.repeatMode = repeatMode
        self.shuffle = shuffle
        self.openEditing = openEditing
        self.countdown = countdown
        self.canUndo = canUndo
        self.availability = availability
    }

    /// The entry with this id, if it is in the list.
    public func entry(_ id: PlaylistEntry.ID) -> PlaylistEntry? {
        entries.first { $0.id == id }
    }

    /// The entry the room plays when its activity is `activity` (nil: not a playlist entry).
    public func entry(forActivity activity: Int) -> PlaylistEntry? {
        guard activity == self.activity, let current else { return nil }
        return entry(current)
    }
}
