/// The control protocol's version, reported by `get_status` as `protocol_version`.
/// Bump the minor number for additions, the major one for anything that breaks a client.
public let controlProtocolVersion = "1.6"

/// The longest request line the control socket accepts, in bytes (without the newline).
/// A longer line gets a `line-too-long` reply and the connection is closed.
public let controlMaxLineBytes = 131_072

/// One parsed request line: `{"command": [...], "request_id": ...}`.
public struct ControlRequest: Sendable, Hashable {
    /// Echoed verbatim in the reply; any JSON value (mpv uses integers). Null when absent.
    public var requestID: JSONValue
    public var command: ControlCommand

    public init(requestID: JSONValue = .null, command: ControlCommand) {
        self.requestID = requestID
        self.command = command
    }

    /// The request as one JSON line (without newline).
    public func encoded() -> [UInt8] {
        var object: [String: JSONValue] = ["command": .array(command.arguments)]
        if requestID != .null { object["request_id"] = requestID }
        return JSONValue.object(object).encoded()
    }

    /// The outcome of decoding one line: the request, or an error together with whatever
    /// request id could be recovered so the reply can still be matched.
    public enum Decoded: Sendable {
        case request(ControlRequest)
        case failure(requestID: JSONValue, error: CowatchError)
    }

    /// Decodes one line. Never throws: bad input becomes `.failure` with a stable code.
    public static func decode<Bytes: Collection<UInt8>>(line: Bytes) -> Decoded {
        let value: JSONValue
        do {
            value = try JSONValue.parse(line)
        } catch {
            return .failure(requestID: .null, error: error)
        }
        guard let object = value.objectValue else {
            return .failure(requestID: .null, error: CowatchError(.invalidRequest, "a request must be a JSON object"))
        }
        let requestID = object["request_id"] ?? .null
        guard let arguments = object["command"]?.arrayValue else {
            return .failure(
                requestID: requestID,
                error: CowatchError(.invalidRequest, "a request needs a \"command\" array"))
        }
        do {
            return .request(ControlRequest(requestID: requestID, command: try ControlCommand(arguments: arguments)))
        } catch {
            return .failure(requestID: requestID, error: error)
        }
    }
}

/// A reply line: `{"request_id": …, "error": "success", "data": …}` or an error with `message`.
public struct ControlReply: Sendable, Hashable {
    public var requestID: JSONValue
    public var result: Result<JSONValue, CowatchError>

    public init(requestID: JSONValue, result: Result<JSONValue, CowatchError>) {
        self.requestID = requestID
        self.result = result
    }

    public static func success(_ requestID: JSONValue, _ data: JSONValue = .null) -> Self {
        .init(requestID: requestID, result: .success(data))
    }

    public static func failure(_ requestID: JSONValue, _ error: CowatchError) -> Self {
        .init(requestID: requestID, result: .failure(error))
    }

    public var json: JSONValue {
        switch result {
        case .success(let data):
            return ["request_id": requestID, "error": "success", "data": data]
        case .failure(let error):
            return ["request_id": requestID, "error": .string(error.code.rawValue), "message": .string(error.message)]
        }
    }

    /// Reads a reply back (used by clients). Returns nil when the object is not a reply.
    public init?(json: JSONValue) {
        guard let object = json.objectValue, let code = object["error"]?.stringValue else { return nil }
        requestID = object["request_id"] ?? .null
        if code == "success" {
            result = .success(object["data"] ?? .null)
        } else {
            result = .failure(CowatchError(CowatchError.Code(rawValue: code), object["message"]?.stringValue ?? code))
        }
    }
}

/// An event line: `{"event": "name", …fields}`, sent to every connected client.
public struct ControlEvent: Sendable, Hashable {
    /// Event names the daemon sends.
    public enum Name {
        /// Paused, speed or position changed, or a seek finished. Fields: the `get_status` fields.
        public static let state = "state"
        /// Playback reached the end of the media and holds there.
        public static let endOfFile = "end-of-file"
        /// Something went wrong that no request caused. Fields: `code`, `message`.
        public static let error = "error"
        /// Someone in the room did something. Fields: `participant`, `action`, `text`, and per action more.
        public static let notice = "notice"
        /// This daemon's room session changed. Fields: `state` (`waiting`, `joined`, `invalidated`), `reason`.
        public static let session = "session"
        /// Under `--accept-open ask`: someone switched the room to new media, which this daemon
        /// opens only after `accept_open`. Fields: `by`, `url`, `title`, `id`.
        public static let openOffer = "open-offer"
        /// (1.3) A chat line. Fields: `participant`, `text`, `history` (true for lines sent
        /// before this daemon joined).
        public static let chat = "chat"
        /// (1.3) A messenger message for us. Fields: `participant`, `topic`, `payload`, `reliable`.
        public static let message = "message"
        /// (1.5) An attachment is in the room. Fields: `id`, `name`, `size`, `participant` (who
        /// added it), `meta`, `history` (true when it was there before this daemon joined).
        public static let attachmentAdded = "attachment-added"
        /// (1.5) An attachment was removed for everyone. Fields: `id`, `participant` (who).
        public static let attachmentRemoved = "attachment-removed"
        /// (1.5) A transfer of ours moved on. Fields: `id`, `name`, `direction` (`upload` or
        /// `download`), `done`, `total` (bytes), `resumed_from` (bytes an interrupted transfer
        /// already had), `state` (`running`, `done`, `failed`; `code` and `message` when failed).
        public static let attachmentProgress = "attachment-progress"
    }

    public var name: String
    public var fields: [String: JSONValue]

    public init(name: String, fields: [String: JSONValue] = [:]) {
        self.name = name
        self.fields = fields
    }

    public var json: JSONValue {
        var object = fields
        object["event"] = .string(name)
        return .object(object)
    }

    public init?(json: JSONValue) {
        guard var object = json.objectValue, let name = object["event"]?.stringValue else { return nil }
        object["event"] = nil
        self.name = name
        self.fields = object
    }
}
