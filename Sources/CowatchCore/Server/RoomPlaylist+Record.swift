/// The playlist as kept with the room's record: on the room server's disk (`rooms.json`) and in a
/// cluster's directory, so the list survives a restart and a move to another server.
///
///     {"version":13,"next_id":9,"entries":[ENTRY…],"playing":4,"cursor":0,"repeat":"all",
///      "shuffle":false,"open_editing":false,"countdown":3}
///
/// ENTRY as on the wire (`WireCodec+Playlist.swift`). Reading checks everything again (a file
/// or a directory is not this process): an entry that is not valid, or whose id repeats, is left
/// out; at most `maxEntries` (and `maxListBytes`) are kept; numbers out of range fall back to their defaults. A record
/// without a playlist (written before there were playlists) reads as an empty list.
///
/// Threading: pure functions.
extension RoomPlaylist {
    public var recordJSON: JSONValue {
        var object: [String: JSONValue] = [
            "version": .number(Double(version)), "next_id": .number(Double(nextID)), "entries": .array(entries.map(\.json)),
            "cursor": .number(Double(cursor)), "repeat": .string(repeatMode.rawValue), "shuffle": .bool(shuffle),
            "open_editing": .bool(openEditing), "countdown": .number(countdown),
        ]
        if let playing { object["playing"] = .number(Double(playing)) }
        return .object(object)
    }

    /// nil when `value` is not an object.
    public init?(recordJSON value: JSONValue) {
        guard let object = value.objectValue else { return nil }
        func count(_ key: String) -> Int? {
            guard let number = object[key]?.numberValue, number.isFinite, number >= 0, number <= 9.0e15,
                number.rounded() == number
            else { return nil }
            return Int(number)
        }
        self.init(countdown: object["countdown"]?.numberValue ?? Self.defaultCountdown)
        var seen: Set<PlaylistEntry.ID> = []
        var bytes = 0
        for value in object["entries"]?.arrayValue ?? [] where entries.count < Self.maxEntries {
            guard let reader = try? WireReader(object: value), let entry = try? PlaylistEntry(wire: reader),
                (try? Self.checked([PlaylistItem(media: entry.media, title: entry.title)])) != nil,
                bytes + entry.wireCost <= Self.maxListBytes, seen.insert(entry.id).inserted
            else { continue }
            bytes += entry.wireCost
            entries.append(entry)
        }
        version = count("version") ?? 0
        membershipVersion = version
        nextID = max(count("next_id") ?? 1, (entries.map(\.id).max() ?? 0) + 1)
        playing = count("playing")
        cursor = min(count("cursor") ?? 0, entries.count)
        repeatMode = object["repeat"]?.stringValue.flatMap(PlaylistRepeat.init(rawValue:)) ?? .none
        shuffle = object["shuffle"]?.boolValue ?? false
        openEditing = object["open_editing"]?.boolValue ?? false
        playingDuration = playing.flatMap(entry)?.duration
    }
}
