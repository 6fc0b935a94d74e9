/// The `data` of a successful control reply, typed: the daemon builds the value and sends
/// `json`, a client reads it back with `init(json:)`. Each conforming type is that reply's one
/// codec; keys a newer daemon adds are ignored.
///
/// Threading: conforming types are values, safe to share.
/// Errors: `init(json:)` throws `malformed-control-message` (see `ControlFields`), never traps.
public protocol ControlReplyData: Sendable, Hashable {
    /// The reply's data exactly as the control protocol carries it.
    var json: JSONValue { get }
    /// Reads the reply's data. Errors: `malformed-control-message`.
    init(json: JSONValue) throws(CowatchError)
}

extension ControlReplyData {
    /// Parses one line (without its newline) and reads the reply's data in it.
    /// Errors: `invalid-json`, or those of `init(json:)`.
    public init<Bytes: Collection<UInt8>>(line: Bytes) throws(CowatchError) {
        try self.init(json: try JSONValue.parse(line))
    }
}

/// `get_status` and the playback commands answer with the status.
extension PlayerStatus: ControlReplyData {}
