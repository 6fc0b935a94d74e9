/// What `get_status` reports about one daemon's player.
///
/// Threading: a value type, safe to share.
public struct PlayerStatus: Sendable, Hashable {
    /// Seconds from the start of the media; nil before the media is loaded.
    public var position: Double?
    public var paused: Bool
    public var speed: Double
    /// Seconds; nil when unknown (live streams).
    public var duration: Double?
    /// The media URL as given.
    public var media: String
    /// mpv's `media-title`.
    public var title: String?
    /// This participant's name.
    public var name: String
    /// True while playback holds at the end of the media.
    public var eof: Bool
    /// Extra sections (`room`, `clock`, `drift`) added by the room layer.
    public var extra: [String: JSONValue]

    public init(
        position: Double?, paused: Bool, speed: Double, duration: Double?, media: String, title: String?,
        name: String, eof: Bool, extra: [String: JSONValue] = [:]
    ) {
        self.position = position
        self.paused = paused
        self.speed = speed
        self.duration = duration
        self.media = media
        self.title = title
        self.name = name
        self.eof = eof
        self.extra = extra
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "position": .finite(position),
            "paused": .bool(paused),
            "speed": .finite(speed),
            "duration": .finite(duration),
            "media": .string(media),
            "title": title.map(JSONValue.string) ?? .null,
            "name": .string(name),
            "eof": .bool(eof),
            "protocol_version": .string(controlProtocolVersion),
        ]
        for (key, value) in extra { object[key] = value }
        return .object(object)
    }

    /// Reads the fields back from `get_status` data or a `state` event; nil when essentials are missing.
    public init?(json: JSONValue) {
        guard let object = json.objectValue, let paused = object["paused"]?.boolValue,
            let name = object["name"]?.stringValue
        else { return nil }
        self.position = object["position"]?.numberValue
        self.paused = paused
        self.speed = object["speed"]?.numberValue ?? 1
        self.duration = object["duration"]?.numberValue
        self.media = object["media"]?.stringValue ?? ""
        self.title = object["title"]?.stringValue
        self.name = name
        self.eof = object["eof"]?.boolValue ?? false
        let known: Set<String> = [
            "position", "paused", "speed", "duration", "media", "title", "name", "eof", "protocol_version", "event",
        ]
        self.extra = object.filter { !known.contains($0.key) }
    }
}
