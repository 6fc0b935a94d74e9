import CowatchCore
import CowatchTestSupport
import Testing

/// True when parsing threw `protocol-violation` (typed throws: nothing else can come out).
private func refused<T>(_ parse: () throws(CowatchError) -> T) -> Bool {
    do {
        _ = try parse()
        return false
    } catch {
        return error.code == .protocolViolation
    }
}

private func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
private func be32(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
private func address(_ text: String) -> IPAddressBytes { IPAddressBytes(text: text)! }

@Suite("PortMappingCodec: IP addresses")
struct PortMappingCodecAddressTests {
    @Test(
        "parses text and prints the canonical form (dotted IPv4, RFC 5952 IPv6)",
        arguments: [
            ("192.168.1.1", "192.168.1.1"), ("0.0.0.0", "0.0.0.0"), ("255.255.255.255", "255.255.255.255"),
            ("::", "::"), ("::1", "::1"), ("1::", "1::"), ("2001:db8::1", "2001:db8::1"),
            ("2001:DB8:0:0:0:0:0:1", "2001:db8::1"),
            ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
            ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),  // one zero group is not compressed
            ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),  // a tie: the first run
            ("1:0:0:2:0:0:0:3", "1:0:0:2::3"),  // the longest run
            ("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"),
            ("fe80::1", "fe80::1"), ("FE80::ABCD", "fe80::abcd"),
            ("::ffff:1.2.3.4", "1.2.3.4"),  // IPv4-mapped is IPv4
            ("::ffff:0102:0304", "1.2.3.4"),
            ("::1.2.3.4", "::102:304"),  // IPv4-compatible (deprecated) is just IPv6
            ("64:ff9b::192.0.2.33", "64:ff9b::c000:221"),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
            ("0000:0000:0000:0000:0000:ffff:255.255.255.255", "255.255.255.255"),  // 45 bytes, the longest
        ])
    func roundTrip(text: String, canonical: String) throws {
        let parsed = try #require(IPAddressBytes(text: text))
        #expect(parsed.description == canonical)
        #expect(IPAddressBytes(text: canonical) == parsed)
        #expect(IPAddressBytes(bytes16: parsed.bytes) == parsed)
        #expect(parsed.bytes.count == 16)
    }

    @Test("IPv4 is stored as ::ffff:a.b.c.d; the byte initialisers take exact counts only")
    func bytes() throws {
        let v4 = try #require(IPAddressBytes(ipv4: [192, 168, 1, 20]))
        #expect(v4.isIPv4)
        #expect(v4.ipv4Bytes == [192, 168, 1, 20])
        #expect(v4.bytes == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 192, 168, 1, 20])
        #expect(v4 == address("192.168.1.20"))
        let v6 = address("2001:db8::1")
        #expect(!v6.isIPv4 && v6.ipv4Bytes == nil)
        #expect(v6.bytes == [0x20, 0x01, 0x0D, 0xB8] + Array(repeating: 0, count: 11) + [1])
        #expect(IPAddressBytes(ipv4: [1, 2, 3]) == nil)
        #expect(IPAddressBytes(ipv4: [1, 2, 3, 4, 5]) == nil)
        #expect(IPAddressBytes(bytes16: [UInt8](repeating: 0, count: 15)) == nil)
        #expect(IPAddressBytes(bytes16: [UInt8](repeating: 0, count: 17)) == nil)
        #expect(IPAddressBytes.unspecifiedIPv4 == address("0.0.0.0"))
        #expect(IPAddressBytes.unspecifiedIPv6 == address("::"))
    }

    @Test("every address of a random sample survives description and back")
    func randomRoundTrip() throws {
        var random = SeededRandom(seed: 42)
        for round in 0..<2000 {
            var bytes = random.bytes(16)
            // Plenty of zero runs, to exercise the compression.
            for index in 0..<16 where random.below(3) == 0 { bytes[index] = 0 }
            if round % 4 == 0 { bytes.replaceSubrange(0..<12, with: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]) }
            let value = try #require(IPAddressBytes(bytes16: bytes))
            #expect(IPAddressBytes(text: value.description) == value, "\(value)")
        }
    }

    /// Refused on purpose: short forms and leading zeros (`inet_aton` reads `01` as octal, so the
    /// text is ambiguous), zone ids, brackets, spaces, a `::` that stands for nothing, two `::`.
    @Test(
        "refuses hostile and ambiguous text without trapping",
        arguments: [
            "", "1.2.3", "1.2.3.256", "1.2.3.4.5", "01.2.3.4", "1.2.3.04", "1.2.3.00", "1..3.4", ".1.2.3.4", "1.2.3.4.",
            " 1.2.3.4", "1.2.3.4 ", "16909060", "0x1.2.3.4", "1.2.3.-4", "1.2.3.+4", "1.2.3.1000", "１.2.3.4",
            ":::", "1::2::3", "::1::", ":1::", "1::2:", ":", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9",
            "1:2:3:4:5:6:7::8",  // "::" standing for no group
            "::1:2:3:4:5:6:7:8", "12345::", "g::", "fe80::1%en0", "[::1]", "1.2.3.4::", "::1.2.3", "::1.2.3.4:5",
            "1:2:3:4:5:6:7:1.2.3.4", "::ffff:01.2.3.4", "::ffff:1.2.3.256", "1.2.3.4:5::", "::-1",
            String(repeating: "1", count: 10_000), String(repeating: ":", count: 46),
            "0000:0000:0000:0000:0000:0000:0000:0000:0",  // 41 bytes but nine groups
        ])
    func refusesText(text: String) {
        #expect(IPAddressBytes(text: text) == nil)
    }

    struct Row: Sendable, CustomStringConvertible {
        var text: String
        var unspecified = false, loopback = false, privateIPv4 = false, cgnat = false, linkLocal = false
        var uniqueLocal = false, global = false
        var description: String { text }
    }

    @Test(
        "classifies addresses",
        arguments: [
            Row(text: "0.0.0.0", unspecified: true), Row(text: "::", unspecified: true),
            Row(text: "127.0.0.1", loopback: true), Row(text: "127.255.0.9", loopback: true), Row(text: "::1", loopback: true),
            Row(text: "10.1.2.3", privateIPv4: true), Row(text: "172.16.0.1", privateIPv4: true),
            Row(text: "172.31.255.255", privateIPv4: true), Row(text: "172.32.0.1", global: true),
            Row(text: "172.15.0.1", global: true), Row(text: "192.168.1.1", privateIPv4: true),
            Row(text: "100.64.0.1", cgnat: true), Row(text: "100.127.255.254", cgnat: true),
            Row(text: "100.128.0.1", global: true), Row(text: "100.63.255.255", global: true),
            Row(text: "169.254.10.1", linkLocal: true), Row(text: "fe80::1", linkLocal: true),
            Row(text: "febf::1", linkLocal: true), Row(text: "fec0::1"),
            Row(text: "fc00::1", uniqueLocal: true), Row(text: "fd12:3456::1", uniqueLocal: true),
            Row(text: "8.8.8.8", global: true), Row(text: "1.1.1.1", global: true),
            Row(text: "203.0.113.7", global: true),  // documentation ranges count as global
            Row(text: "2001:db8::1", global: true), Row(text: "2a00:1450::1", global: true),
            Row(text: "3fff:ffff::1", global: true), Row(text: "4000::1"), Row(text: "ff02::1"),
            Row(text: "0.1.2.3"), Row(text: "192.0.0.8"), Row(text: "198.18.0.1"), Row(text: "198.19.255.1"),
            Row(text: "198.20.0.1", global: true), Row(text: "224.0.0.1"), Row(text: "239.255.255.250"),
            Row(text: "240.0.0.1"), Row(text: "255.255.255.255"), Row(text: "::ffff:8.8.8.8", global: true),
            Row(text: "::ffff:0.0.0.0", unspecified: true),
        ])
    func classifies(row: Row) throws {
        let value = try #require(IPAddressBytes(text: row.text))
        #expect(value.isUnspecified == row.unspecified)
        #expect(value.isLoopback == row.loopback)
        #expect(value.isPrivateIPv4 == row.privateIPv4)
        #expect(value.isCarrierGradeNAT == row.cgnat)
        #expect(value.isLinkLocal == row.linkLocal)
        #expect(value.isUniqueLocalIPv6 == row.uniqueLocal)
        #expect(value.isGlobalUnicast == row.global)
    }

    @Test("random text never traps")
    func randomText() {
        var random = SeededRandom(seed: 7)
        let alphabet = Array("0123456789abcdefABCDEF:.%[] x-".utf8)
        for _ in 0..<20_000 {
            let length = random.below(48)
            let text = String(decoding: (0..<length).map { _ in alphabet[random.below(alphabet.count)] }, as: UTF8.self)
            if let value = IPAddressBytes(text: text) {
                #expect(IPAddressBytes(text: value.description) == value, "\(text)")
            }
        }
    }
}

@Suite("PortMappingCodec: NAT-PMP")
struct PortMappingCodecNATPMPTests {
    static let addressReply: [UInt8] = [0, 128, 0, 0] + be32(0x0001_2345) + [203, 0, 113, 7]
    static let mappingReply: [UInt8] = [0, 130, 0, 0] + be32(600) + be16(7433) + be16(50000) + be32(7200)
    static let deleteReply: [UInt8] = [0, 130, 0, 0] + be32(601) + be16(7433) + be16(0) + be32(0)

    @Test("requests are the RFC 6886 bytes")
    func requests() {
        #expect(NATPMP.port == 5351)
        #expect(NATPMP.externalAddressRequest() == [0, 0])
        #expect(
            NATPMP.mapTCPRequest(internalPort: 7433, suggestedExternalPort: 7433, lifetime: 7200)
                == [0, 2, 0, 0, 0x1D, 0x09, 0x1D, 0x09, 0x00, 0x00, 0x1C, 0x20])
        #expect(
            NATPMP.mapTCPRequest(internalPort: 0xFFFF, suggestedExternalPort: 1, lifetime: 0xFFFF_FFFF)
                == [0, 2, 0, 0, 0xFF, 0xFF, 0x00, 0x01, 0xFF, 0xFF, 0xFF, 0xFF])
        // Delete: lifetime 0, suggested port 0.
        #expect(NATPMP.mapTCPRequest(internalPort: 7433, suggestedExternalPort: 0, lifetime: 0) == [0, 2, 0, 0, 0x1D, 0x09, 0, 0, 0, 0, 0, 0])
    }

    @Test("hand-built replies parse")
    func replies() throws {
        #expect(try NATPMP.parse(Self.addressReply) == .externalAddress(epoch: 0x0001_2345, address: address("203.0.113.7")))
        #expect(
            try NATPMP.parse(Self.mappingReply) == .mapping(epoch: 600, internalPort: 7433, externalPort: 50000, lifetime: 7200))
        #expect(try NATPMP.parse(Self.deleteReply) == .mapping(epoch: 601, internalPort: 7433, externalPort: 0, lifetime: 0))
        // A gateway without an external address yet says 0.0.0.0; the caller judges.
        let none: [UInt8] = [0, 128, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0]
        #expect(try NATPMP.parse(none) == .externalAddress(epoch: 9, address: .unspecifiedIPv4))
    }

    @Test("failures carry the opcode and a readable result code")
    func failures() throws {
        let refusedMapping: [UInt8] = [0, 130, 0, 2] + be32(5) + be16(7433) + be16(7433) + be32(0)
        #expect(try NATPMP.parse(refusedMapping) == .failure(opcode: 130, result: .notAuthorized))
        // Header only, as some gateways send, and an echoed 12-byte request (unsupported opcode).
        #expect(try NATPMP.parse([0, 128, 0, 3, 0, 0, 0, 1]) == .failure(opcode: 128, result: .networkFailure))
        #expect(try NATPMP.parse([0, 130, 0, 5, 0x1D, 0x09, 0x1D, 0x09, 0, 0, 0x1C, 0x20]) == .failure(opcode: 130, result: .unsupportedOpcode))
        #expect(try NATPMP.parse([0, 128, 0x01, 0x00, 0, 0, 0, 1]) == .failure(opcode: 128, result: NATPMP.ResultCode(rawValue: 256)))
        #expect(NATPMP.ResultCode.notAuthorized.description == "the router refuses port mapping (not authorised)")
        #expect(NATPMP.ResultCode(rawValue: 77).description == "result code 77")
        let named: [NATPMP.ResultCode] = [.success, .unsupportedVersion, .notAuthorized, .networkFailure, .outOfResources, .unsupportedOpcode]
        #expect(named.map(\.rawValue) == [0, 1, 2, 3, 4, 5])
        #expect(Set(named.map(\.description)).count == named.count)
        #expect(!named.contains { $0.description.hasPrefix("result code") })
    }

    @Test(
        "refuses malformed replies",
        arguments: [
            [1, 128, 0, 0] + be32(1) + [1, 2, 3, 4],  // version 1
            [2, 128, 0, 0] + be32(1) + [1, 2, 3, 4],  // a PCP server's reply
            [0, 0, 0, 0] + be32(1) + [1, 2, 3, 4],  // opcode 0: a request
            [0, 2, 0, 0] + be32(1) + be16(1) + be16(1) + be32(1),  // opcode 2: a request
            [0, 129, 0, 0] + be32(1) + be16(1) + be16(1) + be32(1),  // UDP: never asked
            [0, 131, 0, 0] + be32(1) + be16(1) + be16(1) + be32(1),  // unknown
            [0, 255, 0, 0] + be32(1) + be16(1) + be16(1) + be32(1),
            PortMappingCodecNATPMPTests.addressReply + [0],  // 13 bytes
            Array(PortMappingCodecNATPMPTests.mappingReply.dropLast()),  // 15 bytes
            PortMappingCodecNATPMPTests.mappingReply + [0, 0, 0, 0],  // 20 bytes
            [0, 128, 0, 0] + be32(1) + be16(1) + be16(1) + be32(1),  // an address reply of 16 bytes
            [0, 130, 0, 0] + be32(1) + [1, 2, 3, 4],  // a mapping reply of 12 bytes
            [0, 130, 0, 0] + be32(1) + be16(7433) + be16(0) + be32(60),  // live, external port 0
            [0, 130, 0, 0] + be32(1) + be16(0) + be16(7433) + be32(60),  // live, internal port 0
            [0, 130, 0, 2] + be32(1) + [UInt8](repeating: 0, count: 12),  // a failure of 20 bytes
            [0, 128, 0, 0] + [UInt8](repeating: 0, count: 1097),  // 1101 bytes
        ] as [[UInt8]])
    func refusesMalformed(bytes: [UInt8]) {
        #expect(refused { () throws(CowatchError) in try NATPMP.parse(bytes) })
    }

    /// Failure replies are accepted from 8 bytes up (gateways differ in what they send), so only
    /// cuts below the header are checked for them.
    @Test("every truncation of a valid reply is refused")
    func truncations() {
        for reply in [Self.addressReply, Self.mappingReply, Self.deleteReply] {
            for length in 0..<reply.count {
                #expect(refused { () throws(CowatchError) in try NATPMP.parse(Array(reply.prefix(length))) }, "\(reply) cut to \(length)")
            }
        }
        let failure: [UInt8] = [0, 130, 0, 4] + be32(1) + [UInt8](repeating: 0, count: 8)
        for length in 0..<8 {
            #expect(refused { () throws(CowatchError) in try NATPMP.parse(Array(failure.prefix(length))) })
        }
    }

    @Test("random bytes and mutated replies never trap")
    func randomBytes() {
        var random = SeededRandom(seed: 0x5EED)
        var parsed = 0
        for round in 0..<30_000 {
            var bytes: [UInt8]
            switch round % 3 {
            case 0: bytes = random.bytes(random.below(24))
            case 1:
                bytes = [Self.addressReply, Self.mappingReply][random.below(2)]
                for _ in 0..<(1 + random.below(3)) { bytes[random.below(bytes.count)] = UInt8(truncatingIfNeeded: random.next()) }
            default:
                bytes = [0, [128, 129, 130, 131][random.below(4)]] + random.bytes(random.below(20))
            }
            do {
                _ = try NATPMP.parse(bytes)
                parsed += 1
            } catch {
                #expect(error.code == .protocolViolation)
            }
        }
        #expect(parsed > 0)
        #expect(refused { () throws(CowatchError) in try NATPMP.parse(random.bytes(5000)) })
    }
}

@Suite("PortMappingCodec: PCP")
struct PortMappingCodecPCPTests {
    static let nonce: [UInt8] = Array(1...12)
    static let client = address("192.168.1.20")

    static func header(opcode: UInt8 = 0x81, result: UInt8 = 0, lifetime: UInt32 = 7200, epoch: UInt32 = 1000) -> [UInt8] {
        [2, opcode, 0, result] + be32(lifetime) + be32(epoch) + [UInt8](repeating: 0, count: 12)
    }

    static func mapBody(
        nonce: [UInt8] = nonce, protocolNumber: UInt8 = 6, internalPort: UInt16 = 7433, externalPort: UInt16 = 50000,
        externalAddress: IPAddressBytes = address("203.0.113.7")
    ) -> [UInt8] {
        nonce + [protocolNumber, 0, 0, 0] + be16(internalPort) + be16(externalPort) + externalAddress.bytes
    }

    static let successReply = header() + mapBody()
    static let expected = PCP.MapResponse(
        result: .success, lifetime: 7200, epoch: 1000, nonce: nonce, protocolNumber: 6, internalPort: 7433,
        externalPort: 50000, externalAddress: address("203.0.113.7"))

    static func option(_ code: UInt8, _ data: [UInt8]) -> [UInt8] {
        [code, 0] + be16(UInt16(data.count)) + data + [UInt8](repeating: 0, count: (4 - data.count % 4) % 4)
    }

    @Test("a MAP request is the RFC 6887 bytes")
    func request() {
        #expect(PCP.port == 5351 && PCP.version == 2)
        let bytes = PCP.mapRequest(
            client: Self.client, nonce: Self.nonce, internalPort: 7433, suggestedExternalPort: 7433,
            suggestedExternalAddress: nil, lifetime: 7200)
        let expected: [UInt8] =
            [2, 1, 0, 0, 0x00, 0x00, 0x1C, 0x20]  // version, opcode MAP (R clear), reserved, lifetime
            + [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 192, 168, 1, 20]  // client ::ffff:192.168.1.20
            + [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]  // nonce
            + [6, 0, 0, 0, 0x1D, 0x09, 0x1D, 0x09]  // TCP, reserved, internal and suggested port
            + [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0, 0, 0]  // any IPv4 address (§11.1)
        #expect(bytes == expected)
        #expect(bytes.count == 60)
    }

    @Test("a MAP request for an IPv6 client, with and without a suggested address")
    func requestIPv6() {
        let client = address("2001:db8::20")
        let any = PCP.mapRequest(
            client: client, nonce: Self.nonce, internalPort: 1, suggestedExternalPort: 0, suggestedExternalAddress: nil, lifetime: 0)
        #expect(Array(any[8..<24]) == client.bytes)
        #expect(Array(any[44..<60]) == [UInt8](repeating: 0, count: 16))
        let suggested = PCP.mapRequest(
            client: client, nonce: Self.nonce, internalPort: 1, suggestedExternalPort: 2,
            suggestedExternalAddress: address("2001:db8::99"), lifetime: 0)
        #expect(Array(suggested[4..<8]) == [0, 0, 0, 0])
        #expect(Array(suggested[40..<44]) == [0, 1, 0, 2])
        #expect(Array(suggested[44..<60]) == address("2001:db8::99").bytes)
    }

    @Test("a hand-built success reply parses, with or without options")
    func success() throws {
        #expect(try PCP.parse(Self.successReply) == .map(Self.expected))
        #expect(PCP.nonceMatches(Self.expected, Self.nonce))
        #expect(!PCP.nonceMatches(Self.expected, Array(repeating: 0, count: 12)))
        // THIRD_PARTY, PREFER_FAILURE, FILTER at their lengths, and unknown options, are walked.
        let options =
            Self.option(1, address("192.168.1.20").bytes) + Self.option(2, []) + Self.option(3, [UInt8](repeating: 0, count: 20))
            + Self.option(200, [1, 2, 3]) + Self.option(90, [])
        #expect(try PCP.parse(Self.successReply + options) == .map(Self.expected))
        // Reserved header bytes are ignored on receipt.
        var noisy = Self.successReply
        noisy[2] = 0xAA
        for index in 12..<24 { noisy[index] = 0x55 }
        #expect(try PCP.parse(noisy) == .map(Self.expected))
        // A deletion: lifetime 0, and the ports and address may be zero.
        let deleted = Self.header(lifetime: 0) + Self.mapBody(externalPort: 0, externalAddress: .unspecifiedIPv4)
        guard case .map(let response) = try PCP.parse(deleted) else {
            Issue.record("not a map")
            return
        }
        #expect(response.lifetime == 0 && response.externalPort == 0)
    }

    @Test("a NAT-PMP-only gateway's reply, or another PCP version's, is unsupportedVersion")
    func unsupportedVersion() throws {
        #expect(try PCP.parse([0, 128, 0, 1] + be32(77)) == .unsupportedVersion(serverVersion: 0))
        #expect(try PCP.parse([0, 0, 0, 1] + be32(77)) == .unsupportedVersion(serverVersion: 0))  // RFC 6886's original figure
        #expect(try PCP.parse([0, 129, 0, 1] + be32(77) + [0, 0, 0, 0]) == .unsupportedVersion(serverVersion: 0))
        var version1 = Self.header(opcode: 0x81, result: 1)
        version1[0] = 1
        #expect(try PCP.parse(version1) == .unsupportedVersion(serverVersion: 1))
        // Not "unsupported version": refused.
        #expect(refused { () throws(CowatchError) in try PCP.parse([0, 128, 0, 2] + be32(77)) })
        #expect(refused { () throws(CowatchError) in try PCP.parse([0, 128, 0, 0] + be32(77) + [1, 2, 3, 4]) })
        #expect(refused { () throws(CowatchError) in try PCP.parse([0, 130, 0, 1] + be32(77)) })
        #expect(refused { () throws(CowatchError) in try PCP.parse([0, 128, 0, 1] + be32(77) + [UInt8](repeating: 0, count: 12)) })
        var other = Self.successReply
        other[0] = 3
        #expect(refused { () throws(CowatchError) in try PCP.parse(other) })
    }

    @Test("failures carry the opcode and a readable result code")
    func failures() throws {
        #expect(try PCP.parse(Self.header(result: 2)) == .failure(opcode: 1, result: .notAuthorized))
        #expect(try PCP.parse(Self.header(result: 12) + Self.mapBody()) == .failure(opcode: 1, result: .addressMismatch))
        #expect(try PCP.parse(Self.header(opcode: 0x82, result: 4)) == .failure(opcode: 2, result: .unsupportedOpcode))
        #expect(try PCP.parse(Self.header(result: 200)) == .failure(opcode: 1, result: PCP.ResultCode(rawValue: 200)))
        let named: [PCP.ResultCode] = [
            .success, .unsupportedVersion, .notAuthorized, .malformedRequest, .unsupportedOpcode, .unsupportedOption,
            .malformedOption, .networkFailure, .noResources, .unsupportedProtocol, .userExceededQuota,
            .cannotProvideExternal, .addressMismatch, .excessiveRemotePeers,
        ]
        #expect(named.map(\.rawValue) == Array(0...13))
        #expect(Set(named.map(\.description)).count == named.count)
        #expect(!named.contains { $0.description.hasPrefix("result code") })
        #expect(PCP.ResultCode.notAuthorized.description == "the router refuses port mapping (not authorised)")
        #expect(PCP.ResultCode(rawValue: 14).description == "result code 14")
    }

    @Test(
        "refuses malformed replies",
        arguments: [
            PortMappingCodecPCPTests.header(opcode: 0x01) + PortMappingCodecPCPTests.mapBody(),  // R bit clear: a request
            PortMappingCodecPCPTests.header(opcode: 0x80) + PortMappingCodecPCPTests.mapBody(),  // a successful ANNOUNCE: never asked
            PortMappingCodecPCPTests.header(opcode: 0x82) + PortMappingCodecPCPTests.mapBody(),  // a successful PEER: never asked
            PortMappingCodecPCPTests.header(opcode: 0x85, result: 2),  // a failure for an unknown opcode
            PortMappingCodecPCPTests.header(),  // MAP body missing
            PortMappingCodecPCPTests.header() + Array(PortMappingCodecPCPTests.mapBody().prefix(32)),  // MAP body of 32 bytes
            Array(PortMappingCodecPCPTests.header().prefix(20)),  // shorter than the header
            PortMappingCodecPCPTests.header() + PortMappingCodecPCPTests.mapBody() + [0],  // not a multiple of 4
            PortMappingCodecPCPTests.header() + PortMappingCodecPCPTests.mapBody() + PortMappingCodecPCPTests.option(0, []),  // reserved option code
            PortMappingCodecPCPTests.header() + PortMappingCodecPCPTests.mapBody() + PortMappingCodecPCPTests.option(1, [UInt8](repeating: 0, count: 15)),  // THIRD_PARTY of 15
            PortMappingCodecPCPTests.header() + PortMappingCodecPCPTests.mapBody() + PortMappingCodecPCPTests.option(2, [0]),  // PREFER_FAILURE with data
            PortMappingCodecPCPTests.header() + PortMappingCodecPCPTests.mapBody() + PortMappingCodecPCPTests.option(3, [UInt8](repeating: 0, count: 16)),  // FILTER of 16
            PortMappingCodecPCPTests.header() + PortMappingCodecPCPTests.mapBody() + [200, 0, 0, 8, 1, 2, 3, 4],  // an option running past the end
            PortMappingCodecPCPTests.header() + PortMappingCodecPCPTests.mapBody() + [200, 0, 0xFF, 0xFF],  // 65535 bytes of option data
            PortMappingCodecPCPTests.header() + PortMappingCodecPCPTests.mapBody() + [UInt8](repeating: 0, count: 1044),  // 1104 bytes
            PortMappingCodecPCPTests.header() + PortMappingCodecPCPTests.mapBody(externalPort: 0),  // live, external port 0
            PortMappingCodecPCPTests.header() + PortMappingCodecPCPTests.mapBody(internalPort: 0),  // live, internal port 0 for TCP
            PortMappingCodecPCPTests.header() + PortMappingCodecPCPTests.mapBody(externalAddress: .unspecifiedIPv4),  // live, no address
            PortMappingCodecPCPTests.header() + PortMappingCodecPCPTests.mapBody(externalAddress: .unspecifiedIPv6),
        ] as [[UInt8]])
    func refusesMalformed(bytes: [UInt8]) {
        #expect(refused { () throws(CowatchError) in try PCP.parse(bytes) })
    }

    /// With options, a cut at an option boundary is a shorter valid reply, so only the other cuts
    /// are checked there.
    @Test("every truncation of a valid reply is refused")
    func truncations() {
        for length in 0..<Self.successReply.count {
            #expect(refused { () throws(CowatchError) in try PCP.parse(Array(Self.successReply.prefix(length))) }, "cut to \(length)")
        }
        let withOptions = Self.successReply + Self.option(1, address("192.168.1.20").bytes) + Self.option(200, [9, 9, 9, 9, 9])
        for length in 0..<withOptions.count where length != 60 && length != 80 {
            #expect(refused { () throws(CowatchError) in try PCP.parse(Array(withOptions.prefix(length))) }, "cut to \(length)")
        }
        let natpmp: [UInt8] = [0, 128, 0, 1] + be32(77)
        for length in 0..<natpmp.count {
            #expect(refused { () throws(CowatchError) in try PCP.parse(Array(natpmp.prefix(length))) })
        }
    }

    @Test("random bytes and mutated replies never trap")
    func randomBytes() {
        var random = SeededRandom(seed: 0xC0FFEE)
        let withOptions = Self.successReply + Self.option(1, Self.client.bytes) + Self.option(201, [1, 2, 3])
        var parsed = 0
        for round in 0..<30_000 {
            var bytes: [UInt8]
            switch round % 4 {
            case 0: bytes = random.bytes(random.below(100))
            case 1:
                bytes = [Self.successReply, withOptions][random.below(2)]
                for _ in 0..<(1 + random.below(3)) { bytes[random.below(bytes.count)] = UInt8(truncatingIfNeeded: random.next()) }
            case 2:
                // A valid head, then random option words.
                bytes = Self.successReply + random.bytes(4 * random.below(12))
            default:
                bytes = [[0, 1, 2, 3][random.below(4)]] + random.bytes(random.below(64))
            }
            do {
                _ = try PCP.parse(bytes)
                parsed += 1
            } catch {
                #expect(error.code == .protocolViolation)
            }
        }
        #expect(parsed > 0)
        #expect(refused { () throws(CowatchError) in try PCP.parse(random.bytes(5000)) })
    }
}
