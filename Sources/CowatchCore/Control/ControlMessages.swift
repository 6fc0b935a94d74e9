/// The control protocol's version, reported by `get_status` as `protocol_version`.
/// Bump the minor number for additions, the major one for anything that breaks a client.
public let controlProtocolVersion = "1.9"

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
