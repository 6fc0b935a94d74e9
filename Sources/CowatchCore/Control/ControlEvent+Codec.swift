/// The one encoder and decoder of control events: `json` writes exactly the fields the control
/// protocol documents (`man/cowatch-protocol.7`), `init(json:)` reads them back.
///
/// Threading: pure functions of value types.
extension ControlEvent {
    /// The event as one JSON object: `{"event": name, …fields}`.
    public var json: JSONValue {
        var object: [String: JSONValue]
        switch self {
        case .state(let status):
            object = status.json.objectValue ?? [:]
        case .endOfFile(let position):
            object = ["position": .finite(position)]
        case .error(let error):
            object = ["code": .string(error.code.rawValue), "message": .string(error.message)]
        case .notice(let notice):
            object = Self.fields(of: notice)
        case .session(let state):
            object = ["state": .string(state.name)]
            if let reason = state.reason {
                object["reason"] = .string(reason.code)
                if case .endedBy(let name) = reason { object["by"] = .string(name) }
                if case .removed(let code) = reason { object["code"] = .string(code.rawValue) }
            }
        case .openOffer(let offer):
            object = offer.json.objectValue ?? [:]
        case .chat(let line):
            object = ["participant": .string(line.from), "text": .string(line.text), "history": .bool(line.history)]
        case .message(let message):
            object = message.json.objectValue ?? [:]
        case .attachmentAdded(let attachment, let history):
            object = attachment.controlFields
            object["history"] = .bool(history)
        case .attachmentRemoved(let removal):
            object = removal.json.objectValue ?? [:]
        case .attachmentProgress(let progress):
            object = progress.json.objectValue ?? [:]
        case .playlist(let playlist):
            object = playlist.json.objectValue ?? [:]
        case .unknown(_, let fields):
            object = fields
        }
        object["event"] = .string(name)
        return .object(object)
    }

    /// Reads an event object. An event name this version does not know (and a notice with an
    /// action it does not know) becomes `.unknown`.
    ///
    /// Errors: `malformed-control-message` when `json` is not an object with a string `event`,
    /// or a known event lacks a field or has one of the wrong type. Never traps.
    public init(json: JSONValue) throws(CowatchError) {
        guard var object = json.objectValue else { throw .malformedControlMessage("an event is not a JSON object") }
        guard let name = object["event"]?.stringValue else { throw .malformedControlMessage("an event lacks its name") }
        object["event"] = nil
        guard let kind = Kind(rawValue: name) else {
            self = .unknown(name: name, fields: object)
            return
        }
        let fields = ControlFields(object: object, what: "the \(name) event")
        switch kind {
        case .state:
            self = .state(try PlayerStatus(fields))
        case .endOfFile:
            self = .endOfFile(position: try fields.optionalNumber("position"))
        case .error:
            self = .error(try fields.error())
        case .notice:
            guard let notice = try Self.notice(fields) else {
                self = .unknown(name: name, fields: object)
                return
            }
            self = .notice(notice)
        case .session:
            self = .session(try Self.session(fields))
        case .openOffer:
            self = .openOffer(try OpenOffer(fields))
        case .chat:
            self = .chat(
                ChatLine(from: try fields.string("participant"), text: try fields.string("text"),
                    history: try fields.optionalBool("history") ?? false))
        case .message:
            self = .message(try ReceivedMessage(fields))
        case .attachmentAdded:
            self = .attachmentAdded(try Attachment(controlFields: fields), history: try fields.optionalBool("history") ?? false)
        case .attachmentRemoved:
            self = .attachmentRemoved(try AttachmentRemoval(fields))
        case .attachmentProgress:
            self = .attachmentProgress(try TransferProgress(fields))
        case .playlist:
            self = .playlist(try PlaylistEvent(fields))
        }
    }

    /// Parses one line (without its newline) and reads the event in it.
    /// Errors: `invalid-json`, or those of `init(json:)`.
    public init<Bytes: Collection<UInt8>>(line: Bytes) throws(CowatchError) {
        try self.init(json: try JSONValue.parse(line))
    }

    // MARK: Parts

    private static func fields(of notice: Notice) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "participant": .string(notice.actor), "action": .string(notice.action.rawValue), "text": .string(notice.text),
        ]
        if let position = notice.position { object["position"] = .number(position) }
        if let from = notice.from { object["from"] = .number(from) }
        if let to = notice.to { object["to"] = .number(to) }
        if let rate = notice.rate { object["rate"] = .number(rate) }
        if let others = notice.others { object["others"] = .array(others.map(JSONValue.string)) }
        if let detail = notice.detail { object["detail"] = .string(detail) }
        if let title = notice.title { object["title"] = .string(title) }
        return object
    }

    /// The notice, or nil when its action is not one this version knows. `text` is not read:
    /// `Notice.text` makes it again.
    private static func notice(_ fields: ControlFields) throws(CowatchError) -> Notice? {
        let actor = try fields.string("participant")
        guard let action = NoticeAction(rawValue: try fields.string("action")) else { return nil }
        return Notice(
            actor: actor, action: action, position: try fields.optionalNumber("position"),
            from: try fields.optionalNumber("from"), to: try fields.optionalNumber("to"),
            rate: try fields.optionalNumber("rate"), others: try fields.optionalStrings("others"),
            detail: try fields.optionalString("detail"), title: try fields.optionalString("title"))
    }

    private static func session(_ fields: ControlFields) throws(CowatchError) -> SessionState {
        switch try fields.string("state") {
        case "waiting": return .waiting
        case "joined": return .joined
        case "invalidated":
            switch try fields.string("reason") {
            case "left": return .invalidated(.left)
            case "ended-by": return .invalidated(.endedBy(try fields.string("by")))
            case "removed": return .invalidated(.removed(CowatchError.Code(rawValue: try fields.string("code"))))
            case "server-gone": return .invalidated(.serverGone)
            case let code: return .invalidated(.refused(CowatchError.Code(rawValue: code)))
            }
        case let other:
            throw .malformedControlMessage("\(fields.what): state \"\(other.prefix(40))\" is not one this client knows")
        }
    }
}
