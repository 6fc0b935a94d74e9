/// RESP2, the Redis protocol, as far as a room directory needs it: values, their encoding, and an
/// incremental parser for replies.
///
/// The parser is fed whatever bytes arrived and yields complete values; a partial value waits for
/// more. Everything is bounded (line, bulk string, array length, nesting), because a directory
/// server that misbehaves must not grow us: past a bound `feed` throws `protocol-violation` and
/// the connection should be dropped.
///
/// Threading: value types; one owner.
public enum RESPValue: Sendable, Hashable {
    case simple(String)
    case error(String)
    case integer(Int)
    /// A bulk string; nil is RESP2's null bulk string (`$-1`).
    case bulk([UInt8]?)
    /// An array; nil is RESP2's null array (`*-1`).
    case array([RESPValue]?)

    /// The wire form of this value.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        encode(into: &out)
        return out
    }

    func encode(into out: inout [UInt8]) {
        switch self {
        case .simple(let text):
            out.append(UInt8(ascii: "+"))
            out += Self.oneLine(text)
            out += [13, 10]
        case .error(let text):
            out.append(UInt8(ascii: "-"))
            out += Self.oneLine(text)
            out += [13, 10]
        case .integer(let value):
            out += Array(":\(value)\r\n".utf8)
        case .bulk(nil):
            out += Array("$-1\r\n".utf8)
        case .bulk(let bytes?):
            out += Array("$\(bytes.count)\r\n".utf8)
            out += bytes
            out += [13, 10]
        case .array(nil):
            out += Array("*-1\r\n".utf8)
        case .array(let values?):
            out += Array("*\(values.count)\r\n".utf8)
            for value in values { value.encode(into: &out) }
        }
    }

    /// Simple strings and errors cannot hold CR or LF: they become spaces.
    private static func oneLine(_ text: String) -> [UInt8] {
        text.utf8.map { $0 == 13 || $0 == 10 ? UInt8(ascii: " ") : $0 }
    }

    /// A command as Redis expects it from a client: an array of bulk strings.
    public static func command(_ words: [String]) -> RESPValue {
        .array(words.map { .bulk(Array($0.utf8)) })
    }

    /// The text of a bulk or simple string (nil for anything else, or a null bulk string).
    public var text: String? {
        switch self {
        case .simple(let text): text
        case .bulk(let bytes?): String(decoding: bytes, as: UTF8.self)
        default: nil
        }
    }
}

/// Reads RESP2 values out of a byte stream. See `RESPValue`.
public struct RESPParser: Sendable {
    public struct Limits: Sendable, Equatable {
        /// The longest header or simple line (without CRLF). Default 4096.
        public var maxLineBytes = 4096
        /// The longest bulk string. Default 512 KiB.
        public var maxBulkBytes = 524_288
        /// The most elements in one array. Default 1024.
        public var maxArrayCount = 1024
        /// Arrays within arrays. Default 4.
        public var maxDepth = 4

        public init() {}
    }

    public let limits: Limits
    private var buffer: [UInt8] = []

    public init(limits: Limits = .init()) {
        self.limits = limits
    }

    /// Bytes held for a value not complete yet.
    public var pendingBytes: Int { buffer.count }

    /// Adds `bytes` and returns every value now complete, in order. Throws `protocol-violation`
    /// on malformed input or a value past the limits (the stream cannot be trusted after that).
    public mutating func feed<Bytes: Sequence<UInt8>>(_ bytes: Bytes) throws(CowatchError) -> [RESPValue] {
        buffer.append(contentsOf: bytes)
        var values: [RESPValue] = []
        var start = 0
        while start < buffer.count {
            var index = start
            guard let value = try parse(at: &index, depth: 0) else { break }
            values.append(value)
            start = index
        }
        if start > 0 { buffer.removeFirst(start) }
        // A value under way can never be longer than the largest legal one.
        let bound = limits.maxBulkBytes + limits.maxLineBytes + (limits.maxArrayCount + 1) * (limits.maxLineBytes + 2)
        if buffer.count > bound { throw Self.violation("a reply longer than \(bound) bytes") }
        return values
    }

    static func violation(_ message: String) -> CowatchError {
        CowatchError(.protocolViolation, "redis: \(message)")
    }

    /// One value starting at `index`, advancing it past the value; nil when incomplete.
    private func parse(at index: inout Int, depth: Int) throws(CowatchError) -> RESPValue? {
        guard index < buffer.count else { return nil }
        let kind = buffer[index]
        var cursor = index + 1
        guard let line = try readLine(at: &cursor) else { return nil }
        switch kind {
        case UInt8(ascii: "+"):
            index = cursor
            return .simple(String(decoding: line, as: UTF8.self))
        case UInt8(ascii: "-"):
            index = cursor
            return .error(String(decoding: line, as: UTF8.self))
        case UInt8(ascii: ":"):
            index = cursor
            return .integer(try Self.integer(line))
        case UInt8(ascii: "$"):
            let length = try Self.integer(line)
            if length == -1 {
                index = cursor
                return .bulk(nil)
            }
            guard (0...limits.maxBulkBytes).contains(length) else { throw Self.violation("bulk string of \(length) bytes") }
            guard buffer.count - cursor >= length + 2 else { return nil }
            guard buffer[cursor + length] == 13, buffer[cursor + length + 1] == 10 else {
                throw Self.violation("bulk string not ended by CRLF")
            }
            let bytes = Array(buffer[cursor..<(cursor + length)])
            index = cursor + length + 2
            return .bulk(bytes)
        case UInt8(ascii: "*"):
            let count = try Self.integer(line)
            if count == -1 {
                index = cursor
                return .array(nil)
            }
            guard (0...limits.maxArrayCount).contains(count) else { throw Self.violation("array of \(count) elements") }
            guard depth < limits.maxDepth else { throw Self.violation("arrays nested too deep") }
            var elements: [RESPValue] = []
            elements.reserveCapacity(count)
            for _ in 0..<count {
                guard let element = try parse(at: &cursor, depth: depth + 1) else { return nil }
                elements.append(element)
            }
            index = cursor
            return .array(elements)
        default:
            throw Self.violation("unknown type byte \(kind)")
        }
    }

    /// The bytes up to CRLF from `cursor`, moving it past the CRLF; nil when no CRLF yet.
    private func readLine(at cursor: inout Int) throws(CowatchError) -> ArraySlice<UInt8>? {
        var end = cursor
        while end < buffer.count {
            if buffer[end] == 13 {
                guard end + 1 < buffer.count else { return nil }
                guard buffer[end + 1] == 10 else { throw Self.violation("CR without LF") }
                let line = buffer[cursor..<end]
                cursor = end + 2
                return line
            }
            if buffer[end] == 10 { throw Self.violation("LF without CR") }
            end += 1
            if end - cursor > limits.maxLineBytes { throw Self.violation("a line longer than \(limits.maxLineBytes) bytes") }
        }
        guard end - cursor <= limits.maxLineBytes else { throw Self.violation("a line longer than \(limits.maxLineBytes) bytes") }
        return nil
    }

    private static func integer(_ line: ArraySlice<UInt8>) throws(CowatchError) -> Int {
        guard !line.isEmpty, line.count <= 20, let value = Int(String(decoding: line, as: UTF8.self)) else {
            throw violation("not an integer")
        }
        return value
    }
}
