/// The chat's and the messenger's replies: `get_chat` (the recent lines), `send_message` (the
/// message's id and, when reliable, who it reached) and `show_room` (the room line).
///
/// Each type's `json` and `init(json:)` are its one codec.
///
/// Threading: value types, safe to share.
/// Errors: the decoders throw `malformed-control-message` (see `ControlFields`).

/// `get_chat`'s reply: the recent lines, oldest first, as a JSON array of `participant`, `text`,
/// `history`.
public struct ChatReply: ControlReplyData {
    /// The lines (`ChatLine.id` is not carried: it stays nil).
    public var lines: [ChatLine]

    public init(lines: [ChatLine]) {
        self.lines = lines
    }

    public var json: JSONValue {
        .array(lines.map { ["participant": .string($0.from), "text": .string($0.text), "history": .bool($0.history)] })
    }

    public init(json: JSONValue) throws(CowatchError) {
        var lines: [ChatLine] = []
        for fields in try ControlFields.list(json, what: "the get_chat reply") {
            lines.append(
                ChatLine(
                    from: try fields.string("participant"), text: try fields.string("text"),
                    history: try fields.optionalBool("history") ?? false))
        }
        self.lines = lines
    }
}

/// `send_message`'s reply: `id`, and for a reliable message `delivered`, the names it reached
/// (absent for an unreliable one: nobody says).
public struct SendMessageReply: ControlReplyData {
    /// The sender's id of the message.
    public var id: Int
    /// Who acknowledged it; nil for an unreliable message.
    public var delivered: [String]?

    public init(id: Int, delivered: [String]?) {
        self.id = id
        self.delivered = delivered
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = ["id": .count(id)]
        if let delivered { object["delivered"] = .array(delivered.map(JSONValue.string)) }
        return .object(object)
    }

    public init(json: JSONValue) throws(CowatchError) {
        let fields = try ControlFields(json, what: "the send_message reply")
        id = try fields.count("id")
        delivered = try fields.optionalStrings("delivered")
    }
}

/// `show_room`'s reply: `text`, the room line shown on the player's screen.
public struct ShowRoomReply: ControlReplyData {
    public var text: String

    public init(text: String) {
        self.text = text
    }

    public var json: JSONValue { ["text": .string(text)] }

    public init(json: JSONValue) throws(CowatchError) {
        text = try ControlFields(json, what: "the show_room reply").string("text")
    }
}
