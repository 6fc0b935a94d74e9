/// The playlist's messages (`PlaylistMessages.swift`) to JSON and back; `WireCodec.swift` calls
/// these from its switches.
///
/// Client → server:
///
///     {"type":"playlist_edit","id":7,"version":12,"current":4,"op":"add","entries":[ENTRY…],"next":true}
///     {"type":"playlist_have","version":12,"have":[1,2,4]}
///     {"type":"playlist_eof","activity":5,"position":1420.4}
///
/// Server → client:
///
///     {"type":"playlist","version":13,"entries":[ENTRY…],"current":4,"activity":5,"repeat":"none",
///      "shuffle":false,"open_editing":false,"countdown":3,"can_undo":true,
///      "availability":[{"name":"bob","have":"yyn?"}],
///      "change":{"actor":"bob","kind":"add","text":"bob added Episode 3 as #4","entry":4},"request_id":7}
///     {"type":"playlist_availability","version":13,"name":"bob","have":"yyn?"}
///
/// ENTRY: `{"id":4,"added_by":"bob","title":"Episode 3","url":"https://…"}` or
/// `{"id":5,"added_by":"bob","file":{"name":"ep4.mkv","size":734003200,"fingerprint":"<64 hex>","duration":1420.5}}`;
/// in an edit, without `id` and `added_by`.
///
/// Decoding checks every bound (at most `PlaylistState.maxEntries` entries, titles of at most
/// 200 characters without control characters, files as `MediaIdentity.validate()` wants them:
/// name hints without `/` or control characters, fingerprints of 64 lowercase hex digits, finite
/// numbers in range); anything else is a `protocol-violation`.
/// Whether an edit makes sense for the list (a position past its end, an unknown entry, a full
/// list, a local URL) is the server's to refuse, not the codec's.
///
/// Threading: pure functions.

extension MediaIdentity {
    /// A playlist entry's `file` object.
    var playlistJSON: JSONValue {
        var object: [String: JSONValue] = [
            "name": .string(name), "size": .number(Double(size)), "fingerprint": .string(fingerprint),
        ]
        if let duration { object["duration"] = .number(duration) }
        return .object(object)
    }

    /// A playlist entry's `file` object, checked (`validate()`); any flaw is a `protocol-violation`.
    init(playlistWire reader: WireReader) throws(CowatchError) {
        guard let name = try reader.optionalString("name", maxLength: Self.maxNameBytes) else {
            throw WireReader.violation("a file needs a \"name\"")
        }
        try self.init(
            validating: try reader.integer("size"), fingerprint: try reader.hex("fingerprint", bytes: 32),
            duration: try reader.optionalNumber("duration", range: 0...1e7), name: name)
    }
}

extension PlaylistItem {
    /// The fields of an item (an entry adds `id` and `added_by`).
    var fields: [String: JSONValue] {
        var object: [String: JSONValue] = [:]
        switch media {
        case .url(let url): object["url"] = .string(url)
        case .file(let file): object["file"] = file.playlistJSON
        }
        if let title { object["title"] = .string(title) }
        return object
    }

    init(wire reader: WireReader) throws(CowatchError) {
        let url = try reader.optionalURL("url")
        let file = try reader.optionalObject("file").map { reader throws(CowatchError) in try MediaIdentity(playlistWire: reader) }
        let media: PlaylistEntry.Media
        switch (url, file) {
        case (let url?, nil): media = .url(url)
        case (nil, let file?): media = .file(file)
        default: throw WireReader.violation("a playlist entry needs a \"url\" or a \"file\", not both")
        }
        self.init(media: media, title: try reader.playlistTitle("title"))
    }
}

extension PlaylistEntry {
    var json: JSONValue {
        var object = PlaylistItem(media: media, title: title).fields
        object["id"] = .number(Double(id))
        object["added_by"] = .string(addedBy)
        return .object(object)
    }

    init(wire reader: WireReader) throws(CowatchError) {
        let item = try PlaylistItem(wire: reader)
        self.init(
            id: try reader.integer("id"), media: item.media, title: item.title,
            addedBy: try reader.name("added_by", maxLength: ParticipantName.maxLength))
    }

    /// An upper bound of the bytes this entry takes in a `playlist` line (its JSON and a comma):
    /// what the list's byte budget (`RoomPlaylist.maxListBytes`) counts.
    var wireCost: Int {
        // Strings exactly (control characters are refused, so only `"` and `\` are escaped);
        // keys, numbers and punctuation bounded by a constant.
        func string(_ text: String) -> Int {
            text.utf8.count + text.utf8.reduce(0) { $0 + ($1 == 0x22 || $1 == 0x5c ? 1 : 0) } + 2
        }
        var cost = 96 + string(addedBy) + (title.map(string) ?? 0)
        switch media {
        case .url(let url): cost += string(url)
        case .file(let file): cost += 96 + string(file.name) + string(file.fingerprint)
        }
        return cost
    }
}

extension PlaylistEdit {
    /// The edit's fields (`op` and its arguments).
    var fields: [String: JSONValue] {
        var object: [String: JSONValue] = ["op": .string(op)]
        switch self {
        case .add(let items, let next):
            object["entries"] = .array(items.map { .object($0.fields) })
            if next { object["next"] = true }
        case .insert(let items, let at):
            object["entries"] = .array(items.map { .object($0.fields) })
            object["at"] = .number(Double(at))
        case .remove(let entry), .jump(let entry):
            object["entry"] = .number(Double(entry))
        case .move(let entry, let to):
            object["entry"] = .number(Double(entry))
            object["to"] = .number(Double(to))
        case .replace(let items):
            object["entries"] = .array(items.map { .object($0.fields) })
        case .next, .previous, .clear, .undo:
            break
        case .setRepeat(let mode):
            object["mode"] = .string(mode.rawValue)
        case .setShuffle(let on):
            object["on"] = .bool(on)
        case .setEditing(let open):
            object["open"] = .bool(open)
        case .setCountdown(let seconds):
            object["seconds"] = .number(seconds)
        }
        return object
    }

    init(wire reader: WireReader) throws(CowatchError) {
        func items() throws(CowatchError) -> [PlaylistItem] {
            guard let list = reader.raw("entries")?.arrayValue, list.count <= PlaylistState.maxEntries else {
                throw WireReader.violation("\"entries\" must be a list of at most \(PlaylistState.maxEntries) entries")
            }
            var items: [PlaylistItem] = []
            items.reserveCapacity(list.count)
            for value in list { items.append(try PlaylistItem(wire: WireReader(object: value))) }
            return items
        }
        switch try reader.word("op") {
        case "add": self = .add(try items(), next: try reader.optionalBool("next") ?? false)
        case "insert": self = .insert(try items(), at: try reader.integer("at"))
        case "remove": self = .remove(try reader.integer("entry"))
        case "move": self = .move(try reader.integer("entry"), to: try reader.integer("to"))
        case "jump": self = .jump(try reader.integer("entry"))
        case "next": self = .next
        case "previous": self = .previous
        case "replace": self = .replace(try items())
        case "clear": self = .clear
        case "undo": self = .undo
        case "repeat": self = .setRepeat(try reader.enumeration("mode", PlaylistRepeat.self))
        case "shuffle": self = .setShuffle(try reader.bool("on"))
        case "editing": self = .setEditing(open: try reader.bool("open"))
        case "countdown": self = .setCountdown(try reader.number("seconds", range: 0...RoomPlaylist.maxCountdown))
        default: throw WireReader.violation("\"op\" names no playlist edit")
        }
    }
}

extension PlaylistEditRequest {
    var json: JSONValue {
        var object = edit.fields
        object["type"] = "playlist_edit"
        object["id"] = .number(Double(id))
        object["version"] = .number(Double(version))
        if let current { object["current"] = .number(Double(current)) }
        return .object(object)
    }

    init(wire reader: WireReader) throws(CowatchError) {
        guard let id = try reader.optionalRequestID("id") else { throw WireReader.violation("playlist_edit needs an id") }
        self.init(
            id: id, version: try reader.integer("version"), current: try reader.optionalInteger("current"),
            edit: try PlaylistEdit(wire: reader))
    }
}

extension PlaylistAvailability {
    /// The marks as the wire spells them: one character per entry.
    var have: String { String(marks.map { Character($0.rawValue) }) }

    var json: JSONValue { ["name": .string(name), "have": .string(have)] }

    init(wire reader: WireReader) throws(CowatchError) {
        let name = try reader.name("name", maxLength: ParticipantName.maxLength)
        guard let have = try reader.optionalString("have", maxLength: PlaylistState.maxEntries) else {
            throw WireReader.violation("availability needs \"have\"")
        }
        var marks: [Mark] = []
        marks.reserveCapacity(have.utf8.count)
        for byte in have.utf8 {
            guard byte < 0x80, let mark = Mark(rawValue: String(UnicodeScalar(byte))) else {
                throw WireReader.violation("\"have\" must be a string of y, n and ?")
            }
            marks.append(mark)
        }
        self.init(name: name, marks: marks)
    }
}

extension PlaylistChange {
    var json: JSONValue {
        var object: [String: JSONValue] = ["kind": .string(kind), "text": .string(text)]
        if let actor { object["actor"] = .string(actor) }
        if let entry { object["entry"] = .number(Double(entry)) }
        return .object(object)
    }

    init(wire reader: WireReader) throws(CowatchError) {
        guard let text = try reader.optionalText("text", maxLength: Self.maxTextBytes) else {
            throw WireReader.violation("a playlist change needs a text")
        }
        self.init(
            actor: try reader.raw("actor") == nil ? nil : reader.name("actor", maxLength: ParticipantName.maxLength),
            kind: try reader.word("kind"), text: text, entry: try reader.optionalInteger("entry"))
    }
}

extension PlaylistState {
    /// The most entries a list holds.
    public static let maxEntries = 500

    /// The `playlist` message's fields (without `type`, `change` and `request_id`).
    var fields: [String: JSONValue] {
        var object: [String: JSONValue] = [
            "version": .number(Double(version)), "entries": .array(entries.map(\.json)),
            "repeat": .string(repeatMode.rawValue), "shuffle": .bool(shuffle), "open_editing": .bool(openEditing),
            "countdown": .number(countdown), "can_undo": .bool(canUndo), "availability": .array(availability.map(\.json)),
        ]
        if let current { object["current"] = .number(Double(current)) }
        if let activity { object["activity"] = .number(Double(activity)) }
        return object
    }

    init(wire reader: WireReader) throws(CowatchError) {
        guard let list = reader.raw("entries")?.arrayValue, list.count <= Self.maxEntries else {
            throw WireReader.violation("\"entries\" must be a list of at most \(Self.maxEntries) entries")
        }
        var entries: [PlaylistEntry] = []
        entries.reserveCapacity(list.count)
        for value in list { entries.append(try PlaylistEntry(wire: WireReader(object: value))) }
        var availability: [PlaylistAvailability] = []
        if let raw = reader.raw("availability") {
            guard let reports = raw.arrayValue, reports.count <= 1024 else {
                throw WireReader.violation("\"availability\" must be a list")
            }
            for value in reports { availability.append(try PlaylistAvailability(wire: WireReader(object: value))) }
        }
        self.init(
            version: try reader.integer("version"), entries: entries, current: try reader.optionalInteger("current"),
            activity: try reader.optionalInteger("activity"),
            repeatMode: try reader.raw("repeat") == nil ? .none : reader.enumeration("repeat", PlaylistRepeat.self),
            shuffle: try reader.optionalBool("shuffle") ?? false, openEditing: try reader.optionalBool("open_editing") ?? false,
            countdown: try reader.optionalNumber("countdown", range: 0...RoomPlaylist.maxCountdown) ?? 3,
            canUndo: try reader.optionalBool("can_undo") ?? false, availability: availability)
    }
}

extension WireReader {
    /// A playlist title, if present: 1–200 characters (at most 1024 bytes) without control
    /// characters, direction overrides or invisibles.
    func playlistTitle(_ key: String) throws(CowatchError) -> String? {
        guard let title = try optionalText(key, maxLength: PlaylistEntry.maxTitleBytes) else { return nil }
        guard !title.isEmpty, title.count <= PlaylistEntry.maxTitleCharacters else {
            throw Self.violation("\"\(key)\" must be 1–\(PlaylistEntry.maxTitleCharacters) characters")
        }
        return title
    }

    /// A list of entry ids, at most `PlaylistState.maxEntries`.
    func entryIDs(_ key: String) throws(CowatchError) -> [PlaylistEntry.ID] {
        guard let list = raw(key)?.arrayValue, list.count <= PlaylistState.maxEntries else {
            throw Self.violation("\"\(key)\" must be a list of at most \(PlaylistState.maxEntries) entry ids")
        }
        var ids: [PlaylistEntry.ID] = []
        ids.reserveCapacity(list.count)
        for value in list {
            guard let number = value.numberValue, number.isFinite, number >= 0, number <= 9.0e15, number.rounded() == number else {
                throw Self.violation("\"\(key)\" must be a list of entry ids")
            }
            ids.append(Int(number))
        }
        return ids
    }
}

extension ClientMessage {
    /// The playlist's client messages as JSON (nil for the others).
    var playlistJSON: JSONValue? {
        switch self {
        case .playlistEdit(let request):
            return request.json
        case .playlistHave(let version, let have):
            return ["type": "playlist_have", "version": .number(Double(version)), "have": .array(have.map { .number(Double($0)) })]
        case .playlistEnded(let activity, let position):
            return ["type": "playlist_eof", "activity": .number(Double(activity)), "position": .number(position)]
        default:
            return nil
        }
    }

    /// Decodes a playlist client message of type `type` (nil when `type` is not one).
    static func playlist(type: String, _ reader: WireReader) throws(CowatchError) -> ClientMessage? {
        switch type {
        case "playlist_edit":
            return .playlistEdit(try PlaylistEditRequest(wire: reader))
        case "playlist_have":
            return .playlistHave(version: try reader.integer("version"), have: try reader.entryIDs("have"))
        case "playlist_eof":
            return .playlistEnded(activity: try reader.integer("activity"), position: try reader.number("position", range: 0...1e7))
        default:
            return nil
        }
    }
}

extension ServerMessage {
    /// The playlist's server messages as JSON (nil for the others).
    var playlistJSON: JSONValue? {
        switch self {
        case .playlist(let state, let change, let requestID):
            var object = state.fields
            object["type"] = "playlist"
            if let change { object["change"] = change.json }
            if let requestID { object["request_id"] = .number(Double(requestID)) }
            return .object(object)
        case .playlistAvailability(let availability, let version):
            return [
                "type": "playlist_availability", "version": .number(Double(version)), "name": .string(availability.name),
                "have": .string(availability.have),
            ]
        default:
            return nil
        }
    }

    /// Decodes a playlist server message of type `type` (nil when `type` is not one).
    static func playlist(type: String, _ reader: WireReader) throws(CowatchError) -> ServerMessage? {
        switch type {
        case "playlist":
            return .playlist(
                try PlaylistState(wire: reader),
                change: try reader.optionalObject("change").map { reader throws(CowatchError) in try PlaylistChange(wire: reader) },
                requestID: try reader.optionalInteger("request_id"))
        case "playlist_availability":
            return .playlistAvailability(try PlaylistAvailability(wire: reader), version: try reader.integer("version"))
        default:
            return nil
        }
    }
}
