/// PCP (RFC 6887) messages for the MAP opcode only: the request that asks a gateway to forward a
/// TCP port, and a parser for its replies, including the reply of a gateway that only speaks
/// NAT-PMP, so the caller can fall back to `NATPMP`.
///
/// Pure codecs: no I/O, no clock. A reply is hostile input: its size is bounded, every field is
/// checked, options are walked with bounds, and parsing never traps; anything malformed is a
/// `protocol-violation`.
///
/// Threading: stateless; safe to use from anywhere.
public enum PCP {
    /// The gateway's UDP port for requests (the same port NAT-PMP uses).
    public static let port = 5351
    /// The protocol version this client speaks.
    public static let version: UInt8 = 2
    /// The longest message PCP allows (RFC 6887 §7); longer replies are refused unread.
    public static let maxMessageBytes = 1100
    /// The length of a MAP nonce.
    public static let nonceLength = 12

    static let headerLength = 24
    static let mapBodyLength = 36
    static let opcodeAnnounce: UInt8 = 0
    static let opcodeMap: UInt8 = 1
    static let opcodePeer: UInt8 = 2
    static let protocolTCP: UInt8 = 6

    /// A MAP request (RFC 6887 §11.1) for TCP: "forward `suggestedExternalPort` (0: any) on
    /// `suggestedExternalAddress` (nil: any) to `internalPort` of `client` for `lifetime`
    /// seconds". A lifetime of 0 deletes the mapping. `client` is this host's address as the
    /// gateway sees it (the source address of the request); a mismatch earns `addressMismatch`.
    /// Resend with the same `nonce` to renew; a reply is only ours if it carries it.
    ///
    /// 24 bytes of common header and 36 of MAP body, no options. With no suggested address the
    /// field is `::` for an IPv6 client and `::ffff:0.0.0.0` for an IPv4 one, as §11.1 asks.
    ///
    /// - Precondition: `nonce` is `PCP.nonceLength` (12) bytes; the caller makes it (randomly).
    public static func mapRequest(
        client: IPAddressBytes, nonce: [UInt8], internalPort: UInt16, suggestedExternalPort: UInt16,
        suggestedExternalAddress: IPAddressBytes?, lifetime: UInt32
    ) -> [UInt8] {
        precondition(nonce.count == nonceLength, "a PCP nonce is \(nonceLength) bytes")
        var bytes: [UInt8] = [version, opcodeMap, 0, 0]
        PortMappingWire.append(lifetime, to: &bytes)
        bytes += client.bytes
        bytes += nonce
        bytes += [protocolTCP, 0, 0, 0]
        PortMappingWire.append(internalPort, to: &bytes)
        PortMappingWire.append(suggestedExternalPort, to: &bytes)
        let anyAddress = client.isIPv4 ? IPAddressBytes.unspecifiedIPv4 : IPAddressBytes.unspecifiedIPv6
        bytes += (suggestedExternalAddress ?? anyAddress).bytes
        return bytes
    }

    /// A successful MAP reply (RFC 6887 §11.1). Compare `nonce` and `protocolNumber` with the
    /// request before believing it (`nonceMatches`).
    ///
    /// Threading: a value type; safe to share.
    public struct MapResponse: Sendable, Equatable {
        /// Always `.success`: failures are `ParsedResponse.failure`.
        public var result: ResultCode
        /// Seconds the mapping lasts (0: it was deleted); may differ from what was asked.
        public var lifetime: UInt32
        /// Seconds since the gateway's state was last reset; going backwards means it lost mappings.
        public var epoch: UInt32
        /// The request's nonce, echoed (12 bytes).
        public var nonce: [UInt8]
        /// The IP protocol mapped (6: TCP).
        public var protocolNumber: UInt8
        public var internalPort: UInt16
        /// The port assigned, which may differ from the one suggested.
        public var externalPort: UInt16
        /// The address assigned; an IPv4 address for a NAT44 gateway.
        public var externalAddress: IPAddressBytes

        public init(
            result: ResultCode, lifetime: UInt32, epoch: UInt32, nonce: [UInt8], protocolNumber: UInt8,
            internalPort: UInt16, externalPort: UInt16, externalAddress: IPAddressBytes
        ) {
            self.result = result
            self.lifetime = lifetime
            self.epoch = epoch
            self.nonce = nonce
            self.protocolNumber = protocolNumber
            self.internalPort = internalPort
            self.externalPort = externalPort
            self.externalAddress = externalAddress
        }
    }

    /// A gateway's reply, checked.
    public enum ParsedResponse: Sendable, Equatable {
        /// The mapping was made (or deleted).
        case map(MapResponse)
        /// The gateway does not speak PCP version 2: `serverVersion` 0 is a NAT-PMP-only
        /// gateway (fall back to `NATPMP`); another value is the version it does speak.
        case unsupportedVersion(serverVersion: UInt8)
        /// The gateway refused: `opcode` without the R bit (1 for MAP).
        case failure(opcode: UInt8, result: ResultCode)
    }

    /// Whether a reply belongs to the request made with `nonce`.
    public static func nonceMatches(_ response: MapResponse, _ nonce: [UInt8]) -> Bool {
        response.nonce == nonce
    }

    /// Parses one UDP payload from the gateway.
    ///
    /// Refused (`protocol-violation`): more than 1100 bytes; a PCP reply shorter than 24 bytes
    /// or not a multiple of 4; the R (response) bit clear; a version other than 2 that is not an
    /// "unsupported version" reply; a failure for an opcode other than ANNOUNCE, MAP or PEER; a
    /// success for anything but MAP; a MAP body shorter than 36 bytes; a live mapping (lifetime
    /// above 0) with external port 0, internal port 0 for a specific protocol, or external address
    /// unspecified; an option that runs past the end, has reserved code 0, or a known code with
    /// the wrong length. Other options are skipped.
    public static func parse(_ bytes: [UInt8]) throws(CowatchError) -> ParsedResponse {
        guard bytes.count <= maxMessageBytes else { throw violation("a reply of \(bytes.count) bytes is too long") }
        var reader = PortMappingWire.Reader(bytes, protocolName: "PCP")
        let replyVersion = try reader.uint8()
        if replyVersion != version { return try parseOtherVersion(bytes, version: replyVersion) }
        try checkShape(bytes)
        let opcodeByte = try reader.uint8()
        try reader.skip(1)  // reserved
        let result = ResultCode(rawValue: try reader.uint8())
        let lifetime = try reader.uint32()
        let epoch = try reader.uint32()
        try reader.skip(12)  // reserved: ignored on receipt (§7.2)
        guard opcodeByte & 0x80 != 0 else { throw violation("the R bit is clear: a request, not a reply") }
        let opcode = opcodeByte & 0x7F
        guard result == .success else {
            // An error reply may or may not copy the request's body (§7.2); nothing of it is used.
            guard [opcodeAnnounce, opcodeMap, opcodePeer].contains(opcode) else {
                throw violation("a failure for unknown opcode \(opcode)")
            }
            return .failure(opcode: opcode, result: result)
        }
        guard opcode == opcodeMap else { throw violation("an unexpected success reply to opcode \(opcode)") }
        guard reader.remaining >= mapBodyLength else {
            throw violation("a MAP body of \(reader.remaining) bytes, not \(mapBodyLength)")
        }
        let nonce = Array(try reader.bytes(nonceLength))
        let protocolNumber = try reader.uint8()
        try reader.skip(3)  // reserved
        let internalPort = try reader.uint16()
        let externalPort = try reader.uint16()
        guard let externalAddress = IPAddressBytes(bytes16: try reader.bytes(16)) else { throw violation("bad address") }
        if lifetime > 0 {
            // Port 0 means "all ports", which only goes with protocol 0 (§11.1).
            guard externalPort != 0, internalPort != 0 || protocolNumber == 0 else {
                throw violation("a mapping with port 0 (internal \(internalPort), external \(externalPort))")
            }
            guard !externalAddress.isUnspecified else { throw violation("a mapping without an external address") }
        }
        try walkOptions(&reader)
        return .map(
            MapResponse(
                result: result, lifetime: lifetime, epoch: epoch, nonce: nonce, protocolNumber: protocolNumber,
                internalPort: internalPort, externalPort: externalPort, externalAddress: externalAddress))
    }

    /// The external address a MAP failure reply carries, when the gateway filled one in: some
    /// gateways (miniupnpd among them) refuse a mapping because their own outside address is
    /// private or carrier-grade NAT, and say which address that is in the reply's body. We ask
    /// with an unspecified suggested address, so a specified one came from the gateway.
    /// Nil for anything else (a success, a short reply, another opcode, an unspecified address).
    public static func failureExternalAddress(_ bytes: [UInt8]) -> IPAddressBytes? {
        guard bytes.count >= headerLength + mapBodyLength, bytes.count <= maxMessageBytes, bytes[0] == version,
            bytes[1] == 0x80 | opcodeMap, bytes[3] != ResultCode.success.rawValue
        else { return nil }
        let start = headerLength + nonceLength + 4 + 4
        guard let address = IPAddressBytes(bytes16: bytes[start..<(start + 16)]), !address.isUnspecified else { return nil }
        return address
    }

    /// A PCP reply's length: the header at least, whole 32-bit words (§7), at most 1100 bytes.
    private static func checkShape(_ bytes: [UInt8]) throws(CowatchError) {
        guard bytes.count >= headerLength else { throw violation("a reply of \(bytes.count) bytes, shorter than the header") }
        guard bytes.count % 4 == 0 else { throw violation("a reply of \(bytes.count) bytes, not a multiple of 4") }
    }

    /// A reply in another version: only "unsupported version" (result 1) is understood.
    ///
    /// A NAT-PMP-only gateway answers a PCP request with NAT-PMP's 8-byte version-0 reply, whose
    /// 16-bit result code 1 sits where PCP's reserved byte and 8-bit result code are (RFC 6887 §9).
    /// Its opcode is 128 (RFC 6886 errata 3618), 0 in older gateways, or 129 when the request's
    /// opcode is echoed. A PCP gateway of another version sends a full PCP header with its version.
    private static func parseOtherVersion(_ bytes: [UInt8], version serverVersion: UInt8) throws(CowatchError) -> ParsedResponse {
        if serverVersion == 0 {
            guard (8...16).contains(bytes.count) else { throw violation("a version-0 reply of \(bytes.count) bytes") }
            guard [0, 128, 129].contains(bytes[1]) else { throw violation("a version-0 reply with opcode \(bytes[1])") }
        } else {
            try checkShape(bytes)
            guard bytes[1] & 0x80 != 0 else { throw violation("the R bit is clear: a request, not a reply") }
        }
        guard bytes[2] == 0, bytes[3] == ResultCode.unsupportedVersion.rawValue else {
            throw violation("version \(serverVersion), not \(version)")
        }
        return .unsupportedVersion(serverVersion: serverVersion)
    }

    /// Walks the options after the MAP body (§7.3): each is a code, a reserved byte, a 16-bit data
    /// length, and the data padded to a multiple of 4.
    private static func walkOptions(_ reader: inout PortMappingWire.Reader) throws(CowatchError) {
        while reader.remaining > 0 {
            guard reader.remaining >= 4 else { throw violation("an option header cut short") }
            let code = try reader.uint8()
            try reader.skip(1)
            let length = Int(try reader.uint16())
            let padded = (length + 3) & ~3
            guard padded <= reader.remaining else { throw violation("option \(code) of \(length) bytes runs past the end") }
            // The options defined for MAP have fixed lengths (§13); others are skipped.
            let expected: Int? =
                switch code {
                case 0: -1  // reserved
                case 1: 16  // THIRD_PARTY
                case 2: 0  // PREFER_FAILURE
                case 3: 20  // FILTER
                default: nil
                }
            if let expected, expected != length {
                throw violation(code == 0 ? "option code 0 is reserved" : "option \(code) of \(length) bytes, not \(expected)")
            }
            try reader.skip(padded)
        }
    }

    /// A PCP result code (RFC 6887 §7.4), 8 bits on the wire; unknown values are kept.
    public struct ResultCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// The request was done.
        public static let success = ResultCode(rawValue: 0)
        /// The gateway does not speak this version.
        public static let unsupportedVersion = ResultCode(rawValue: 1)
        /// The gateway supports the request, but it is turned off or not allowed for this host.
        public static let notAuthorized = ResultCode(rawValue: 2)
        /// The gateway could not parse the request.
        public static let malformedRequest = ResultCode(rawValue: 3)
        /// The gateway does not know the opcode.
        public static let unsupportedOpcode = ResultCode(rawValue: 4)
        /// The gateway does not know a mandatory option of the request.
        public static let unsupportedOption = ResultCode(rawValue: 5)
        /// An option of the request was malformed.
        public static let malformedOption = ResultCode(rawValue: 6)
        /// The gateway has no working external connection; retry later.
        public static let networkFailure = ResultCode(rawValue: 7)
        /// The gateway has no resources for the mapping now.
        public static let noResources = ResultCode(rawValue: 8)
        /// The gateway does not map this IP protocol.
        public static let unsupportedProtocol = ResultCode(rawValue: 9)
        /// This host has used up its quota of mappings.
        public static let userExceededQuota = ResultCode(rawValue: 10)
        /// The suggested external address or port cannot be given (with PREFER_FAILURE, or an
        /// address the gateway does not have).
        public static let cannotProvideExternal = ResultCode(rawValue: 11)
        /// The request's client address is not the source address the gateway saw: another NAT
        /// sits between this host and the gateway.
        public static let addressMismatch = ResultCode(rawValue: 12)
        /// Too many remote peers for a PEER request.
        public static let excessiveRemotePeers = ResultCode(rawValue: 13)

        /// What the code means, for a person.
        public var description: String {
            switch self {
            case .success: "success"
            case .unsupportedVersion: "the router does not support this PCP version"
            case .notAuthorized: "the router refuses port mapping (not authorised)"
            case .malformedRequest: "the router could not read the request (malformed request)"
            case .unsupportedOpcode: "the router does not support this PCP request"
            case .unsupportedOption: "the router does not support an option of the request"
            case .malformedOption: "the router could not read an option of the request"
            case .networkFailure: "the router has no working Internet connection"
            case .noResources: "the router cannot create more port mappings"
            case .unsupportedProtocol: "the router cannot map this protocol"
            case .userExceededQuota: "this computer has used up its quota of port mappings on the router"
            case .cannotProvideExternal: "the router cannot give the requested external address or port"
            case .addressMismatch: "another NAT sits between this computer and the router (address mismatch)"
            case .excessiveRemotePeers: "the router allows no more remote peers"
            default: "result code \(rawValue)"
            }
        }
    }

    private static func violation(_ message: String) -> CowatchError {
        CowatchError(.protocolViolation, "PCP: \(message)")
    }
}
