/// What `get_status` reports about one daemon's player, and the fields of a `state` event.
///
/// `json` and `init(json:)` are its one codec; in a room, `room`, `clock` and `drift` are the
/// sections the room layer adds.
///
/// Threading: a value type, safe to share.
/// Errors: the decoder throws `malformed-control-message` (see `ControlFields`).
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
    /// In a room: the room, session and activity.
    public var room: RoomStatus?
    /// In a room, once the reference clock is estimated.
    public var clock: ClockStatus?
    /// In a room: how far this player is from the group.
    public var drift: DriftStatus?

    public init(
        position: Double?, paused: Bool, speed: Double, duration: Double?, media: String, title: String?,
        name: String, eof: Bool, room: RoomStatus? = nil, clock: ClockStatus? = nil, drift: DriftStatus? = nil
    ) {
        self.position = position
        self.paused = paused
        self.speed = speed
        self.duration = duration
        self.media = media
        self.title = title
        self.name = name
        self.eof = eof
        self.room = room
        self.clock = clock
        self.drift = drift
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
        if let room { object["room"] = room.json }
        if let clock { object["clock"] = clock.json }
        if let drift { object["drift"] = drift.json }
        return .object(object)
    }

    /// Reads `get_status` data (or a `state` event's fields). `paused` and `name` are required;
    /// a field left out takes its default (speed 1, no media, not at the end).
    /// Errors: `malformed-control-message`.
    public init(json: JSONValue) throws(CowatchError) {
        try self.init(ControlFields(json, what: "the status"))
    }

    public init(_ fields: ControlFields) throws(CowatchError) {
        position = try fields.optionalNumber("position")
        paused = try fields.bool("paused")
        speed = try fields.optionalNumber("speed") ?? 1
        duration = try fields.optionalNumber("duration")
        media = try fields.optionalString("media") ?? ""
        title = try fields.optionalString("title")
        name = try fields.string("name")
        eof = try fields.optionalBool("eof") ?? false
        room = try fields.optionalObject("room", what: "the room status").map(RoomStatus.init)
        clock = try fields.optionalObject("clock", what: "the clock status").map(ClockStatus.init)
        drift = try fields.optionalObject("drift", what: "the drift status").map(DriftStatus.init)
    }
}
