/// The payloads of `ControlEvent` that no other type of the core already describes, each with
/// its part of the event codec (`json` and `init(_:)` from `ControlFields`).
///
/// Threading: value types, safe to share.
/// Errors: the decoders throw `malformed-control-message` (see `ControlFields`).

/// Media someone switched the room to, offered under `--accept-open ask`: an `open-offer` event,
/// and `open_offer` in `get_status`'s room section.
public struct OpenOffer: Sendable, Hashable {
    /// The activity's id in the room.
    public var id: Int
    public var url: String
    public var title: String
    /// Who opened it (the event always names someone; the status may say null).
    public var by: String?

    public init(id: Int, url: String, title: String, by: String?) {
        self.id = id
        self.url = url
        self.title = title
        self.by = by
    }

    public var json: JSONValue {
        ["id": .count(id), "url": .string(url), "title": .string(title), "by": by.map(JSONValue.string) ?? .null]
    }

    public init(_ fields: ControlFields) throws(CowatchError) {
        id = try fields.count("id")
        url = try fields.string("url")
        title = try fields.string("title")
        by = try fields.optionalString("by")
    }
}

/// A messenger message for us, as the `message` event carries it.
public struct ReceivedMessage: Sendable, Hashable {
    /// Who sent it ("?" when the server did not say).
    public var participant: String
    public var topic: String
    /// The payload: the JSON the sender gave, or a string when it was not JSON.
    public var payload: JSONValue
    public var reliable: Bool

    public init(participant: String, topic: String, payload: JSONValue, reliable: Bool) {
        self.participant = participant
        self.topic = topic
        self.payload = payload
        self.reliable = reliable
    }

    public var json: JSONValue {
        ["participant": .string(participant), "topic": .string(topic), "payload": payload, "reliable": .bool(reliable)]
    }

    public init(_ fields: ControlFields) throws(CowatchError) {
        participant = try fields.string("participant")
        topic = try fields.string("topic")
        payload = fields.object["payload"] ?? .null
        reliable = try fields.optionalBool("reliable") ?? true
    }
}

/// An attachment removed for everyone.
public struct AttachmentRemoval: Sendable, Hashable {
    /// The attachment's SHA-256.
    public var id: String
    /// Who removed it.
    public var participant: String
    /// Its name, when this daemon knew the attachment.
    public var name: String?

    public init(id: String, participant: String, name: String?) {
        self.id = id
        self.participant = participant
        self.name = name
    }

    public var json: JSONValue {
        ["id": .string(id), "participant": .string(participant), "name": name.map(JSONValue.string) ?? .null]
    }

    public init(_ fields: ControlFields) throws(CowatchError) {
        id = try fields.string("id")
        participant = try fields.string("participant")
        name = try fields.optionalString("name")
    }
}

/// How far one transfer of ours has come.
public struct TransferProgress: Sendable, Hashable {
    public enum Direction: String, Sendable, Hashable, CaseIterable {
        case upload, download
    }

    /// Running, done, or failed with an error.
    public enum Stage: Sendable, Hashable {
        case running
        case done
        case failed(CowatchError)

        /// `running`, `done` or `failed`.
        public var name: String {
            switch self {
            case .running: "running"
            case .done: "done"
            case .failed: "failed"
            }
        }
    }

    /// The attachment's SHA-256.
    public var id: String
    public var name: String
    public var direction: Direction
    /// Bytes moved so far, of `total`.
    public var done: Int
    public var total: Int
    /// Bytes an interrupted transfer already had when this attempt resumed it.
    public var resumedFrom: Int
    public var stage: Stage

    public init(id: String, name: String, direction: Direction, done: Int, total: Int, resumedFrom: Int, stage: Stage) {
        self.id = id
        self.name = name
        self.direction = direction
        self.done = done
        self.total = total
        self.resumedFrom = resumedFrom
        self.stage = stage
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(id), "name": .string(name), "direction": .string(direction.rawValue), "done": .count(done),
            "total": .count(total), "state": .string(stage.name), "resumed_from": .count(resumedFrom),
        ]
        if case .failed(let error) = stage {
            object["code"] = .string(error.code.rawValue)
            object["message"] = .string(error.message)
        }
        return .object(object)
    }

    public init(_ fields: ControlFields) throws(CowatchError) {
        id = try fields.string("id")
        name = try fields.string("name")
        direction = try fields.enum("direction", as: Direction.self)
        done = try fields.count("done")
        total = try fields.count("total")
        resumedFrom = try fields.optionalCount("resumed_from") ?? 0
        switch try fields.string("state") {
        case "running": stage = .running
        case "done": stage = .done
        case "failed": stage = .failed(try fields.error())
        case let other: throw .malformedControlMessage("\(fields.what): state \"\(other.prefix(40))\" is not one this client knows")
        }
    }
}
