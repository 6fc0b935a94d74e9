/// Typed reads of one JSON object of the control protocol (an event, a status section), for
/// the decoders of `ControlEvent`, `PlayerStatus` and `RoomStatus`.
///
/// A required field that is absent, any field of the wrong type, and a count that is not a whole
/// number a `Double` holds exactly are errors; an optional field may be absent or null. Fields
/// the reader is not asked about are ignored (a newer daemon may add some).
///
/// Threading: a value type, safe to share.
/// Errors: `malformed-control-message` (`CowatchError.malformedControlMessage`), naming the
/// object (`what`) and the field.
public struct ControlFields: Sendable {
    /// The object as received.
    public let object: [String: JSONValue]
    /// What the object is, for error messages: "the notice event", "the room status".
    public let what: String

    /// The largest count accepted: integers beyond 2⁵³ are not exact in JSON's numbers.
    public static let maxCount = 9_007_199_254_740_992.0

    /// Reads `value`, which must be a JSON object. Throws `malformed-control-message` otherwise.
    public init(_ value: JSONValue, what: String) throws(CowatchError) {
        guard let object = value.objectValue else { throw .malformedControlMessage("\(what) is not a JSON object") }
        self.init(object: object, what: what)
    }

    public init(object: [String: JSONValue], what: String) {
        self.object = object
        self.what = what
    }

    /// Reads `value`, which must be a JSON array of objects (a list reply such as
    /// `get_participants`); `what` names the reply ("the get_participants reply"), its entries
    /// are "`what`'s entry". Throws `malformed-control-message` otherwise.
    public static func list(_ value: JSONValue, what: String) throws(CowatchError) -> [ControlFields] {
        guard let entries = value.arrayValue else { throw .malformedControlMessage("\(what) is not a JSON array") }
        var list: [ControlFields] = []
        list.reserveCapacity(entries.count)
        for entry in entries { list.append(try ControlFields(entry, what: "\(what)'s entry")) }
        return list
    }

    /// The value of `key`, nil when absent or null.
    public func value(_ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    public func string(_ key: String) throws(CowatchError) -> String {
        guard let value = try optionalString(key) else { throw missing(key) }
        return value
    }

    public func optionalString(_ key: String) throws(CowatchError) -> String? {
        guard let value = value(key) else { return nil }
        guard let text = value.stringValue else { throw wrongType(key, "a string") }
        return text
    }

    public func number(_ key: String) throws(CowatchError) -> Double {
        guard let value = try optionalNumber(key) else { throw missing(key) }
        return value
    }

    public func optionalNumber(_ key: String) throws(CowatchError) -> Double? {
        guard let value = value(key) else { return nil }
        guard let number = value.numberValue, number.isFinite else { throw wrongType(key, "a number") }
        return number
    }

    /// A whole number within ±`maxCount` (a count, a byte offset, an id).
    public func count(_ key: String) throws(CowatchError) -> Int {
        guard let value = try optionalCount(key) else { throw missing(key) }
        return value
    }

    public func optionalCount(_ key: String) throws(CowatchError) -> Int? {
        guard let number = try optionalNumber(key) else { return nil }
        guard abs(number) <= Self.maxCount, number.rounded(.towardZero) == number else {
            throw wrongType(key, "a whole number of at most 2^53")
        }
        return Int(number)
    }

    public func bool(_ key: String) throws(CowatchError) -> Bool {
        guard let value = try optionalBool(key) else { throw missing(key) }
        return value
    }

    public func optionalBool(_ key: String) throws(CowatchError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard let flag = value.boolValue else { throw wrongType(key, "true or false") }
        return flag
    }

    public func strings(_ key: String) throws(CowatchError) -> [String] {
        guard let value = try optionalStrings(key) else { throw missing(key) }
        return value
    }

    public func optionalStrings(_ key: String) throws(CowatchError) -> [String]? {
        guard let value = value(key) else { return nil }
        guard let list = value.arrayValue else { throw wrongType(key, "a list of strings") }
        var texts: [String] = []
        texts.reserveCapacity(list.count)
        for entry in list {
            guard let text = entry.stringValue else { throw wrongType(key, "a list of strings") }
            texts.append(text)
        }
        return texts
    }

    /// A nested object, read as its own `ControlFields`; nil when absent or null.
    public func optionalObject(_ key: String, what inner: String) throws(CowatchError) -> ControlFields? {
        guard let value = value(key) else { return nil }
        guard let nested = value.objectValue else { throw wrongType(key, "an object") }
        return ControlFields(object: nested, what: inner)
    }

    public func object(_ key: String, what inner: String) throws(CowatchError) -> ControlFields {
        guard let value = try optionalObject(key, what: inner) else { throw missing(key) }
        return value
    }

    /// A value of a `RawRepresentable` string enum (`NoticeAction`, `ActivityType`, …).
    public func optionalEnum<Value: RawRepresentable>(_ key: String, as _: Value.Type) throws(CowatchError) -> Value?
    where Value.RawValue == String {
        guard let text = try optionalString(key) else { return nil }
        guard let parsed = Value(rawValue: text) else {
            throw .malformedControlMessage("\(what): \(key) \"\(text.prefix(40))\" is not one this client knows")
        }
        return parsed
    }

    public func `enum`<Value: RawRepresentable>(_ key: String, as type: Value.Type) throws(CowatchError) -> Value
    where Value.RawValue == String {
        guard let value = try optionalEnum(key, as: type) else { throw missing(key) }
        return value
    }

    /// An error with code and message from `code`/`message` fields (an `error` event, `last_error`).
    public func error() throws(CowatchError) -> CowatchError {
        let code = try string("code")
        return CowatchError(CowatchError.Code(rawValue: code), try optionalString("message") ?? code)
    }

    private func missing(_ key: String) -> CowatchError {
        .malformedControlMessage("\(what) lacks \(key)")
    }

    private func wrongType(_ key: String, _ wanted: String) -> CowatchError {
        .malformedControlMessage("\(what): \(key) must be \(wanted)")
    }
}

extension CowatchError {
    /// `malformed-control-message`: what the daemon sent cannot be read as the type expected.
    public static func malformedControlMessage(_ message: String) -> CowatchError {
        CowatchError(.malformedControlMessage, message)
    }
}

extension JSONValue {
    /// A count as JSON (counts are carried as numbers).
    static func count(_ value: Int) -> JSONValue { .number(Double(value)) }
}
