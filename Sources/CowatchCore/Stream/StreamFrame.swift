/// The frames a receiver and a sharer exchange inside a film stream (issue 25), end to end
/// through the room server's relay, which passes them untouched.
///
/// Binary, big-endian, each frame a fixed header and, for data and refusals, a payload:
/// - receiver → sharer: `read` (`R`, offset UInt64, length UInt32): bytes `offset ..< offset +
///   length` of the shared file, 1 … `maxReadBytes`; `ping` (`P`, 12 zero bytes): keeps an idle
///   stream (a paused film, a full cache) alive through the watchdogs of both ends.
/// - sharer → receiver: `data` (`D`, offset, length, then `length` bytes: the file from
///   `offset`, shorter than asked only at the end of the file); `refused` (`E`, offset, length,
///   then `length` bytes of UTF-8: a `CowatchError` code, a tab, a message); `ping` answered.
///
/// Answers come in the order of the requests, so a receiver matches them by order and offset.
///
/// Threading: value types, safe to share.
public enum StreamFrame: Sendable, Hashable {
    case read(offset: Int, length: Int)
    case ping
    case data(offset: Int, bytes: [UInt8])
    case refused(offset: Int, CowatchError)

    /// The most bytes one `read` may ask for (and one `data` carry): 1 MiB.
    public static let maxReadBytes = 1 << 20
    /// The longest refusal text in bytes.
    public static let maxRefusalBytes = 512
    /// Bytes of every frame's header: kind, offset, length.
    public static let headerBytes = 13
    /// The largest offset a frame may name (`MediaIdentity.maxSize`).
    public static let maxOffset = MediaIdentity.maxSize

    /// The frame's bytes on the stream.
    public func encoded() -> [UInt8] {
        switch self {
        case .read(let offset, let length):
            return Self.header("R", offset, length)
        case .ping:
            return Self.header("P", 0, 0)
        case .data(let offset, let bytes):
            return Self.header("D", offset, bytes.count) + bytes
        case .refused(let offset, let error):
            var text = Array("\(error.code.rawValue)\t\(error.message)".utf8)
            if text.count > Self.maxRefusalBytes { text = Array(text.prefix(Self.maxRefusalBytes)) }
            return Self.header("E", offset, text.count) + text
        }
    }

    /// Just the header of a `data` frame of `length` bytes at `offset`, for a sharer that writes
    /// the file's bytes from a buffer of its own behind it.
    public static func dataHeader(offset: Int, length: Int) -> [UInt8] {
        header("D", offset, length)
    }

    private static func header(_ kind: Unicode.Scalar, _ offset: Int, _ length: Int) -> [UInt8] {
        var bytes: [UInt8] = [UInt8(kind.value)]
        let offset = UInt64(max(0, offset))
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: offset >> UInt64(shift))) }
        let length = UInt32(clamping: max(0, length))
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: length >> UInt32(shift))) }
        return bytes
    }
}

/// Reads `StreamFrame`s from a byte stream that arrives in pieces of any size (a byte at a time
/// too). What a peer sends is checked before anything is kept: an unknown kind, an offset past
/// `StreamFrame.maxOffset`, a read of 0 or more than `maxReadBytes`, a payload longer than its
/// kind allows, a refusal that is not UTF-8 — each is a `protocol-violation`, after which the
/// stream must be closed (the decoder keeps failing).
///
/// - `accepting`: the frames this end may receive (a sharer takes `read` and `ping`; a receiver
///   `data`, `refused` and `ping`); any other kind is a violation.
///
/// Threading: a value type with one owner.
public struct StreamFrameDecoder: Sendable {
    public enum Side: Sendable { case sharer, receiver }
    private let side: Side
    private var buffer: [UInt8] = []
    private var start = 0
    private var failure: CowatchError?

    public init(accepting side: Side) {
        self.side = side
    }

    /// Adds received bytes.
    public mutating func append<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
        if start > 0, start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Bytes received and not yet taken as frames.
    public var pendingBytes: Int { buffer.count - start }

    /// The next whole frame, or nil until more bytes arrive. Errors: `protocol-violation`.
    public mutating func next() throws(CowatchError) -> StreamFrame? {
        if let failure { throw failure }
        guard buffer.count - start >= StreamFrame.headerBytes else { return nil }
        let kind = buffer[start]
        var offset: UInt64 = 0
        for index in 1...8 { offset = offset << 8 | UInt64(buffer[start + index]) }
        var length: UInt32 = 0
        for index in 9...12 { length = length << 8 | UInt32(buffer[start + index]) }
        guard offset <= UInt64(StreamFrame.maxOffset) else { return try fail("a stream frame's offset is past any file") }
        let payload: Int
        switch (kind, side) {
        case (UInt8(ascii: "R"), .sharer):
            guard length > 0, Int(length) <= StreamFrame.maxReadBytes else {
                return try fail("a stream read must ask for 1 to \(StreamFrame.maxReadBytes) bytes")
            }
            payload = 0
        case (UInt8(ascii: "P"), _):
            guard offset == 0, length == 0 else { return try fail("a stream ping carries nothing") }
            payload = 0
        case (UInt8(ascii: "D"), .receiver):
            guard Int(length) <= StreamFrame.maxReadBytes else { return try fail("a stream data frame is longer than any read") }
            payload = Int(length)
        case (UInt8(ascii: "E"), .receiver):
            guard Int(length) <= StreamFrame.maxRefusalBytes else { return try fail("a stream refusal is too long") }
            payload = Int(length)
        default:
            return try fail("a stream frame of a kind this end does not take")
        }
        guard buffer.count - start >= StreamFrame.headerBytes + payload else { return nil }
        let body = Array(buffer[(start + StreamFrame.headerBytes)..<(start + StreamFrame.headerBytes + payload)])
        start += StreamFrame.headerBytes + payload
        switch kind {
        case UInt8(ascii: "R"): return .read(offset: Int(offset), length: Int(length))
        case UInt8(ascii: "P"): return .ping
        case UInt8(ascii: "D"): return .data(offset: Int(offset), bytes: body)
        default:
            guard let text = String(validating: body, as: UTF8.self), let tab = text.firstIndex(of: "\t") else {
                return try fail("a stream refusal is not a code and a message")
            }
            let code = String(text[..<tab])
            guard !code.isEmpty, code.count <= 64, code.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }) else {
                return try fail("a stream refusal's code is not one")
            }
            let message = String(text[text.index(after: tab)...]).filter { !$0.unicodeScalars.contains(where: ControlCharacters.isUnfitForDisplay) }
            return .refused(offset: Int(offset), CowatchError(CowatchError.Code(rawValue: code), message))
        }
    }

    private mutating func fail(_ message: String) throws(CowatchError) -> StreamFrame? {
        let error = CowatchError(.protocolViolation, message)
        failure = error
        throw error
    }
}
