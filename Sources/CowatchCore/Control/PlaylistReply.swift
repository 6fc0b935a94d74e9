/// (1.7) `get_playlist`'s reply, and the state the `playlist` event carries: the room's shared
/// playlist as this daemon has it, with what it knows on top of the room's list (its own path for
/// each file it has, whether it can play each entry, who said they lack one).
///
/// Entries carry their number as people see it (`number`, 1-based: `#1` is the first) and the
/// server's `id`; commands address entries by number. `json` and `init(json:)` are its one codec.
/// Labels whose set is closed (`repeat`, `editing`, `kind`) are read strictly.
///
/// ```json
/// {"countdown":3,"current":2,"editing":"managers","entries":[{"added_by":"bob","current":false,
///  "duration":1330,"here":true,"id":4,"kind":"file","lacking":[],"local":"/films/ep1.mkv",
///  "name":"ep1.mkv","number":1,"size":734003200,"title":"Episode 1","unknown":[],"url":null}, …],
///  "repeat":"none","shuffle":false,"version":12}
/// ```
///
/// Threading: a value type, safe to share.
/// Errors: the decoder throws `malformed-control-message` (see `ControlFields`).
public struct PlaylistReply: ControlReplyData {
    /// Who may edit the list in a managed room.
    public enum Editing: String, Sendable, Hashable, CaseIterable {
        /// Every member (the owner opened it; in an unmanaged room everyone always may).
        case open
        /// The owner and operators.
        case managers
    }

    /// What an entry plays.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A local file, by identity: each participant plays its own copy.
        case file
        /// A network URL.
        case url
    }

    /// One entry of the list.
    public struct Entry: Sendable, Hashable {
        /// Its place as people see it: 1 for the first.
        public var number: Int
        /// The server's id for it (never reused in the room).
        public var id: PlaylistEntry.ID
        /// What people see: the title given, else the file's name, else the URL's last component.
        public var title: String
        public var kind: Kind
        /// The URL, for a URL entry.
        public var url: String?
        /// The file's name as its adder had it (a hint), for a file entry.
        public var name: String?
        /// The file's size in bytes, for a file entry.
        public var size: Int?
        /// Seconds, when known.
        public var duration: Double?
        public var addedBy: String
        /// The entry the group plays or last played.
        public var current: Bool
        /// This daemon's own file for the entry, when it has one: local information, only ever on
        /// this daemon's control socket.
        public var local: String?
        /// This daemon can play it (it has the file, or may open the URL).
        public var here: Bool
        /// Members who said they lack it.
        public var lacking: [String]
        /// Members who have not said whether they have it.
        public var unknown: [String]

        public init(
            number: Int, id: PlaylistEntry.ID, title: String, kind: Kind, url: String? = nil, name: String? = nil,
            size: Int? = nil, duration: Double? = nil, addedBy: String, current: Bool = false, local: String? = nil,
            here: Bool = false, lacking: [String] = [], unknown: [String] = []
        ) {
            self.number = number
            self.id = id
            self.title = title
            self.kind = kind
            self.url = url
            self.name = name
            self.size = size
            self.duration = duration
            self.addedBy = addedBy
            self.current = current
            self.local = local
            self.here = here
            self.lacking = lacking
            self.unknown = unknown
        }

        public var json: JSONValue {
            [
                "number": .count(number), "id": .count(id), "title": .string(title), "kind": .string(kind.rawValue),
                "url": url.map(JSONValue.string) ?? .null, "name": name.map(JSONValue.string) ?? .null,
                "size": size.map(JSONValue.count) ?? .null, "duration": .finite(duration), "added_by": .string(addedBy),
                "current": .bool(current), "local": local.map(JSONValue.string) ?? .null, "here": .bool(here),
                "lacking": .array(lacking.map(JSONValue.string)), "unknown": .array(unknown.map(JSONValue.string)),
            ]
        }

        public init(_ fields: ControlFields) throws(CowatchError) {
            number = try fields.count("number")
            id = try fields.count("id")
            title = try fields.string("title")
            kind = try fields.enum("kind", as: Kind.self)
            url = try fields.optionalString("url")
            name = try fields.optionalString("name")
            size = try fields.optionalCount("size")
            duration = try fields.optionalNumber("duration")
            addedBy = try fields.string("added_by")
            current = try fields.optionalBool("current") ?? false
            local = try fields.optionalString("local")
            here = try fields.optionalBool("here") ?? false
            lacking = try fields.optionalStrings("lacking") ?? []
            unknown = try fields.optionalStrings("unknown") ?? []
        }
    }

    /// The list's version: grows with every change; an edit is made against it.
    public var version: Int
    /// The number of the entry the group plays or last played; nil when none is in the list.
    public var current: Int?
    public var repeatMode: PlaylistRepeat
    public var shuffle: Bool
    public var editing: Editing
    /// Seconds between everyone having loaded a new entry and everyone starting it.
    public var countdown: Double
    /// In order: `entries[0]` is #1.
    public var entries: [Entry]

    public init(
        version: Int = 0, current: Int? = nil, repeatMode: PlaylistRepeat = .none, shuffle: Bool = false,
        editing: Editing = .managers, countdown: Double = 3, entries: [Entry] = []
    ) {
        self.version = version
        self.current = current
        self.repeatMode = repeatMode
        self.shuffle = shuffle
        self.editing = editing
        self.countdown = countdown
        self.entries = entries
    }

    /// The reply for the room's `state`, with what this daemon knows: `local`, its own file for
    /// each entry it has one for; `here`, the entries it can play; `members`, the room's
    /// participants, so that one who never reported counts as not having said. `me` (this
    /// daemon's own name) is left out of `lacking` and `unknown`: `here` says it.
    public init(
        state: PlaylistState, local: [PlaylistEntry.ID: String] = [:], here: Set<PlaylistEntry.ID> = [],
        members: [String] = [], me: String? = nil
    ) {
        let reported = Set(state.availability.map(\.name))
        let silent = members.filter { !reported.contains($0) && $0 != me }
        var entries: [Entry] = []
        entries.reserveCapacity(state.entries.count)
        for (index, entry) in state.entries.enumerated() {
            var lacking: [String] = []
            var unknown = silent
            for availability in state.availability where availability.name != me {
                let mark = index < availability.marks.count ? availability.marks[index] : .unknown
                switch mark {
                case .has: break
                case .lacks: lacking.append(availability.name)
                case .unknown: unknown.append(availability.name)
                }
            }
            var reply = Entry(
                number: index + 1, id: entry.id, title: entry.displayTitle, kind: .url, addedBy: entry.addedBy,
                current: entry.id == state.current, local: local[entry.id], here: here.contains(entry.id),
                lacking: lacking.sorted(), unknown: unknown.sorted())
            switch entry.media {
            case .url(let url):
                reply.url = url
            case .file(let file):
                reply.kind = .file
                reply.name = file.name
                reply.size = file.size
                reply.duration = file.duration
            }
            entries.append(reply)
        }
        self.init(
            version: state.version, current: state.current.flatMap { id in state.entries.firstIndex { $0.id == id } }.map { $0 + 1 },
            repeatMode: state.repeatMode, shuffle: state.shuffle, editing: state.openEditing ? .open : .managers,
            countdown: state.countdown, entries: entries)
    }

    /// The current entry, when one is in the list.
    public var currentEntry: Entry? {
        guard let current, current >= 1, current <= entries.count else { return nil }
        return entries[current - 1]
    }

    public var json: JSONValue {
        [
            "version": .count(version), "current": current.map(JSONValue.count) ?? .null,
            "repeat": .string(repeatMode.rawValue), "shuffle": .bool(shuffle), "editing": .string(editing.rawValue),
            "countdown": .number(countdown), "entries": .array(entries.map(\.json)),
        ]
    }

    public init(json: JSONValue) throws(CowatchError) {
        try self.init(ControlFields(json, what: "the playlist"))
    }

    /// Reads the fields `json` writes (also inside the `playlist` event's `state`).
    public init(_ fields: ControlFields) throws(CowatchError) {
        version = try fields.count("version")
        current = try fields.optionalCount("current")
        repeatMode = try fields.enum("repeat", as: PlaylistRepeat.self)
        shuffle = try fields.bool("shuffle")
        editing = try fields.enum("editing", as: Editing.self)
        countdown = try fields.number("countdown")
        var entries: [Entry] = []
        for entry in try ControlFields.list(fields.object["entries"] ?? .null, what: "\(fields.what)'s entries") {
            entries.append(try Entry(entry))
        }
        self.entries = entries
    }
}

/// (1.7) The `playlist` event: the room's playlist changed (an edit, the group moving on, a
/// setting, someone's availability), or this daemon joined and received it.
///
/// Threading: a value type, safe to share.
/// Errors: the decoder throws `malformed-control-message` (see `ControlFields`).
public struct PlaylistEvent: Sendable, Hashable {
    /// The list as it is now (as `get_playlist` would answer).
    public var state: PlaylistReply
    /// The sentence naming what changed and who did it ("bob added Episode 3 as #4"); nil when
    /// nothing worth a sentence changed (the list after joining, an availability report).
    public var change: String?
    /// Who changed it; nil for the server's own moves and for no change.
    public var actor: String?

    public init(state: PlaylistReply, change: String? = nil, actor: String? = nil) {
        self.state = state
        self.change = change
        self.actor = actor
    }

    public var json: JSONValue {
        ["state": state.json, "change": change.map(JSONValue.string) ?? .null, "actor": actor.map(JSONValue.string) ?? .null]
    }

    public init(_ fields: ControlFields) throws(CowatchError) {
        state = try PlaylistReply(try fields.object("state", what: "\(fields.what)'s state"))
        change = try fields.optionalString("change")
        actor = try fields.optionalString("actor")
    }
}
