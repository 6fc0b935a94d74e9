/// NAT-PMP (RFC 6886) messages: the requests a client sends to its gateway's UDP port 5351 to learn
/// the external IPv4 address and to forward a TCP port, and a parser for the gateway's replies.
///
/// Pure codecs: no I/O, no clock. A reply is hostile input: its size is bounded, every field is
/// checked, and parsing never traps; anything malformed is a `protocol-violation`.
///
/// Threading: stateless; safe to use from anywhere.
public enum NATPMP {
    /// The gateway's UDP port for requests (the same port PCP uses).
    public static let port = 5351

    /// The longest reply looked at; anything longer is refused unread (PCP's limit, RFC 6887 §7).
    public static let maxMessageBytes = 1100

    /// "What is your external address?": version 0, opcode 0 (RFC 6886 §3.2).
    public static func externalAddressRequest() -> [UInt8] {
        [0, 0]
    }

    /// "Forward `suggestedExternalPort` (0: any) to `internalPort` of this host over TCP for
    /// `lifetime` seconds": version 0, opcode 2 (RFC 6886 §3.3). A lifetime of 0 deletes the
    /// mapping of `internalPort` (send a suggested external port of 0 then).
    public static func mapTCPRequest(internalPort: UInt16, suggestedExternalPort: UInt16, lifetime: UInt32) -> [UInt8] {
        var bytes: [UInt8] = [0, 2, 0, 0]
        PortMappingWire.append(internalPort, to: &bytes)
        PortMappingWire.append(suggestedExternalPort, to: &bytes)
        PortMappingWire.append(lifetime, to: &bytes)
        return bytes
    }

    /// A gateway's reply, checked.
    public enum Response: Sendable, Equatable {
        /// The gateway's external IPv4 address (which may be `0.0.0.0` when it has none yet), and
        /// its epoch: seconds since its mapping table was last reset. An epoch that goes backwards
        /// means the gateway lost its mappings.
        case externalAddress(epoch: UInt32, address: IPAddressBytes)
        /// A TCP mapping the gateway made (or deleted, when `lifetime` is 0). The external port
        /// may differ from the one suggested.
        case mapping(epoch: UInt32, internalPort: UInt16, externalPort: UInt16, lifetime: UInt32)
        /// The gateway refused: `opcode` is the reply's (128 for the address, 130 for a mapping).
        case failure(opcode: UInt8, result: ResultCode)
    }

    /// Opcodes of the replies this client can receive: to opcode 0 and to opcode 2 (TCP).
    static let externalAddressReply: UInt8 = 128
    static let mapTCPReply: UInt8 = 130

    /// Parses one UDP payload from the gateway.
    ///
    /// Refused (`protocol-violation`): more than 1100 bytes; fewer than 8 (the common header); a
    /// version other than 0; an opcode that is not a reply (below 128) or not a reply to a request
    /// this client sends (a UDP mapping reply, 129, included); a success reply that is not exactly
    /// 12 bytes (address) or 16 bytes (mapping); a failure reply longer than 16 bytes; a live
    /// mapping (lifetime above 0) with port 0 on either side.
    public static func parse(_ bytes: [UInt8]) throws(CowatchError) -> Response {
        guard bytes.count <= maxMessageBytes else { throw violation("a reply of \(bytes.count) bytes is too long") }
        var reader = PortMappingWire.Reader(bytes, protocolName: "NAT-PMP")
        let version = try reader.uint8()
        let opcode = try reader.uint8()
        let result = ResultCode(rawValue: try reader.uint16())
        let epoch = try reader.uint32()
        guard version == 0 else { throw violation("version \(version), not 0") }
        guard opcode >= 128 else { throw violation("opcode \(opcode) is a request, not a reply") }
        guard opcode == externalAddressReply || opcode == mapTCPReply else {
            throw violation("unexpected reply opcode \(opcode)")
        }
        guard result == .success else {
            // The RFC has failures carry the full reply, an echoed request or just the header;
            // none is longer than a mapping reply.
            guard bytes.count <= 16 else { throw violation("a failure reply of \(bytes.count) bytes") }
            return .failure(opcode: opcode, result: result)
        }
        if opcode == externalAddressReply {
            guard bytes.count == 12 else { throw violation("an external address reply of \(bytes.count) bytes, not 12") }
            guard let address = IPAddressBytes(ipv4: try reader.bytes(4)) else { throw violation("bad address") }
            return .externalAddress(epoch: epoch, address: address)
        }
        guard bytes.count == 16 else { throw violation("a mapping reply of \(bytes.count) bytes, not 16") }
        let internalPort = try reader.uint16()
        let externalPort = try reader.uint16()
        let lifetime = try reader.uint32()
        guard lifetime == 0 || (internalPort != 0 && externalPort != 0) else {
            throw violation("a mapping with port 0 (internal \(internalPort), external \(externalPort))")
        }
        return .mapping(epoch: epoch, internalPort: internalPort, externalPort: externalPort, lifetime: lifetime)
    }

    /// A NAT-PMP result code (RFC 6886 §3.5), 16 bits on the wire; unknown values are kept.
    public struct ResultCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }

        /// The request was done.
        public static let success = ResultCode(rawValue: 0)
        /// The gateway does not speak this version.
        public static let unsupportedVersion = ResultCode(rawValue: 1)
        /// The gateway supports mapping, but it is turned off or not allowed for this host.
        public static let notAuthorized = ResultCode(rawValue: 2)
        /// The gateway has no working external connection (e.g. no DHCP lease upstream yet).
        public static let networkFailure = ResultCode(rawValue: 3)
        /// The gateway cannot create more mappings now.
        public static let outOfResources = ResultCode(rawValue: 4)
        /// The gateway does not know the request's opcode.
        public static let unsupportedOpcode = ResultCode(rawValue: 5)

        /// What the code means, for a person.
        public var description: String {
            switch self {
            case .success: "success"
            case .unsupportedVersion: "the router does not support this NAT-PMP version"
            case .notAuthorized: "the router refuses port mapping (not authorised)"
            case .networkFailure: "the router has no working Internet connection"
            case .outOfResources: "the router cannot create more port mappings"
            case .unsupportedOpcode: "the router does not support this NAT-PMP request"
            default: "result code \(rawValue)"
            }
        }
    }

    private static func violation(_ message: String) -> CowatchError {
        CowatchError(.protocolViolation, "NAT-PMP: \(message)")
    }
}

/// Big-endian bytes for the port-mapping codecs: appending, and a reader that throws
/// `protocol-violation` instead of reading past the end.
enum PortMappingWire {
    static func append(_ value: UInt16, to bytes: inout [UInt8]) {
        bytes += [UInt8(value >> 8), UInt8(value & 0xFF)]
    }

    static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    /// Reads fields in order; every read checks the bounds first.
    ///
    /// Threading: a value type; safe to share.
    struct Reader {
        private let storage: [UInt8]
        private let protocolName: String
        private(set) var offset = 0

        init(_ bytes: [UInt8], protocolName: String) {
            self.storage = bytes
            self.protocolName = protocolName
        }

        var remaining: Int { storage.count - offset }

        mutating func bytes(_ count: Int) throws(CowatchError) -> ArraySlice<UInt8> {
            guard count >= 0, count <= remaining else {
                throw CowatchError(.protocolViolation, "\(protocolName): the message ends early (\(storage.count) bytes)")
            }
            defer { offset += count }
            return storage[offset..<(offset + count)]
        }

        mutating func skip(_ count: Int) throws(CowatchError) {
            _ = try bytes(count)
        }

        mutating func uint8() throws(CowatchError) -> UInt8 {
            try bytes(1).first ?? 0
        }

        mutating func uint16() throws(CowatchError) -> UInt16 {
            try bytes(2).reduce(0) { $0 << 8 | UInt16($1) }
        }

        mutating func uint32() throws(CowatchError) -> UInt32 {
            try bytes(4).reduce(0) { $0 << 8 | UInt32($1) }
        }
    }
}
