/// An IPv4 or IPv6 address as its 16 bytes in network order, with an IPv4 address stored as the
/// IPv4-mapped IPv6 address `::ffff:a.b.c.d` (the form PCP carries on the wire, RFC 6887 §5).
///
/// Parses and prints text, and classifies the address (private, carrier-grade NAT, global, …) so
/// a caller can tell whether a router's external address is reachable from the Internet or is
/// itself behind another NAT. No I/O, no Foundation.
///
/// Threading: a value type; safe to share.
public struct IPAddressBytes: Sendable, Hashable, CustomStringConvertible {
    // Two words rather than an array: no allocation, and equality and hashing come for free.
    private var high: UInt64
    private var low: UInt64

    /// `::`, IPv6's "no address".
    public static let unspecifiedIPv6 = IPAddressBytes(high: 0, low: 0)

    /// `0.0.0.0` (stored as `::ffff:0.0.0.0`), IPv4's "no address".
    public static let unspecifiedIPv4 = IPAddressBytes(high: 0, low: 0xFFFF_0000_0000)

    private init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The address from exactly 16 bytes in network order; nil for any other count.
    public init?(bytes16: some Collection<UInt8>) {
        guard bytes16.count == 16 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes16.enumerated() {
            if index < 8 {
                high = high << 8 | UInt64(byte)
            } else {
                low = low << 8 | UInt64(byte)
            }
        }
        self.high = high
        self.low = low
    }

    /// The IPv4 address from exactly 4 bytes in network order (stored as `::ffff:a.b.c.d`); nil
    /// for any other count.
    public init?(ipv4 bytes4: some Collection<UInt8>) {
        guard bytes4.count == 4 else { return nil }
        var value: UInt64 = 0
        for byte in bytes4 { value = value << 8 | UInt64(byte) }
        self.high = 0
        self.low = 0xFFFF_0000_0000 | value
    }

    /// Parses dotted IPv4 (`192.168.1.1`) or IPv6 text (`2001:db8::1`, `::ffff:1.2.3.4`, upper or
    /// lower case); nil for anything else. Never traps, and bounded: text longer than the longest
    /// address (45 bytes) is refused before it is looked at.
    ///
    /// Refused on purpose: IPv4 octets with a leading zero (`01.2.3.4`: C's `inet_aton` reads
    /// them as octal, so the text is ambiguous), the short forms `inet_aton` accepts (`1.2.3`,
    /// `16909060`), zone ids (`fe80::1%en0`), brackets, surrounding spaces, and a `::` that would
    /// stand for no group at all (`1:2:3:4:5:6:7::8`). An embedded dotted IPv4 address may only
    /// end an IPv6 address. `::ffff:1.2.3.4` is the same value as `1.2.3.4`.
    public init?(text: String) {
        let utf8 = Array(text.utf8.prefix(46))
        guard !utf8.isEmpty, utf8.count <= 45 else { return nil }
        if utf8.contains(UInt8(ascii: ":")) {
            guard let words = Self.parseIPv6(utf8[...]) else { return nil }
            var bytes: [UInt8] = []
            for word in words { bytes += [UInt8(word >> 8), UInt8(word & 0xFF)] }
            self.init(bytes16: bytes)
        } else {
            guard let octets = Self.parseIPv4(utf8[...]) else { return nil }
            self.init(ipv4: octets)
        }
    }

    /// The 16 bytes in network order (an IPv4 address as `::ffff:a.b.c.d`).
    public var bytes: [UInt8] {
        (0..<16).map { byte(at: $0) }
    }

    /// True for an IPv4 address (stored as IPv4-mapped, `::ffff:0:0/96`).
    public var isIPv4: Bool { high == 0 && low >> 32 == 0xFFFF }

    /// The 4 bytes of an IPv4 address; nil for IPv6.
    public var ipv4Bytes: [UInt8]? {
        isIPv4 ? (12..<16).map { byte(at: $0) } : nil
    }

    /// Dotted decimal for IPv4; for IPv6 the RFC 5952 text: lowercase hex without leading zeros,
    /// the longest run of two or more zero groups (the first, if tied) written `::`.
    public var description: String {
        if let v4 = ipv4Bytes { return v4.map { String($0) }.joined(separator: ".") }
        let words = (0..<8).map { UInt16(byte(at: 2 * $0)) << 8 | UInt16(byte(at: 2 * $0 + 1)) }
        var bestStart = -1
        var bestLength = 1  // a single zero group is not compressed (RFC 5952 §4.2.2)
        var index = 0
        while index < 8 {
            guard words[index] == 0 else {
                index += 1
                continue
            }
            var end = index
            while end < 8 && words[end] == 0 { end += 1 }
            if end - index > bestLength {
                bestStart = index
                bestLength = end - index
            }
            index = end
        }
        func hex(_ range: Range<Int>) -> String {
            range.map { String(words[$0], radix: 16) }.joined(separator: ":")
        }
        guard bestStart >= 0 else { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
    }

    // MARK: - Classification

    /// `0.0.0.0` or `::`: "no address".
    public var isUnspecified: Bool {
        isIPv4 ? low & 0xFFFF_FFFF == 0 : high == 0 && low == 0
    }

    /// `127.0.0.0/8` or `::1`.
    public var isLoopback: Bool {
        isIPv4 ? byte(at: 12) == 127 : high == 0 && low == 1
    }

    /// The RFC 1918 ranges: `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16`. False for IPv6.
    public var isPrivateIPv4: Bool {
        guard let v4 = ipv4Bytes else { return false }
        return v4[0] == 10 || (v4[0] == 172 && v4[1] & 0xF0 == 16) || (v4[0] == 192 && v4[1] == 168)
    }

    /// `100.64.0.0/10` (RFC 6598), the shared space of carrier-grade NAT: a router whose external
    /// address is here is itself behind the provider's NAT, so a mapping on it does not make a
    /// port reachable from the Internet. False for IPv6.
    public var isCarrierGradeNAT: Bool {
        guard let v4 = ipv4Bytes else { return false }
        return v4[0] == 100 && v4[1] & 0xC0 == 64
    }

    /// `169.254.0.0/16` or `fe80::/10`.
    public var isLinkLocal: Bool {
        if let v4 = ipv4Bytes { return v4[0] == 169 && v4[1] == 254 }
        return byte(at: 0) == 0xFE && byte(at: 1) & 0xC0 == 0x80
    }

    /// `fc00::/7` (RFC 4193), IPv6's counterpart of the private IPv4 ranges. False for IPv4.
    public var isUniqueLocalIPv6: Bool {
        !isIPv4 && byte(at: 0) & 0xFE == 0xFC
    }

    /// Whether the address can be a host's address on the public Internet, judged by range only.
    ///
    /// IPv4: true unless in `0.0.0.0/8`, `10.0.0.0/8`, `100.64.0.0/10`, `127.0.0.0/8`,
    /// `169.254.0.0/16`, `172.16.0.0/12`, `192.0.0.0/24` (protocol assignments), `192.168.0.0/16`,
    /// `198.18.0.0/15` (benchmarking), `224.0.0.0/4` (multicast) or `240.0.0.0/4` (reserved, and
    /// the broadcast address). IPv6: true exactly in `2000::/3`.
    ///
    /// The documentation ranges (`192.0.2.0/24`, `198.51.100.0/24`, `203.0.113.0/24`,
    /// `2001:db8::/32`) count as global, so that examples and tests can stand for public addresses.
    public var isGlobalUnicast: Bool {
        guard let v4 = ipv4Bytes else { return byte(at: 0) & 0xE0 == 0x20 }
        let (a, b, c) = (v4[0], v4[1], v4[2])
        if a == 0 || a == 127 || a >= 224 { return false }
        if isPrivateIPv4 || isCarrierGradeNAT || isLinkLocal { return false }
        if a == 192 && b == 0 && c == 0 { return false }
        if a == 198 && b & 0xFE == 18 { return false }
        return true
    }

    // MARK: - Pieces

    private func byte(at index: Int) -> UInt8 {
        let word = index < 8 ? high : low
        return UInt8(truncatingIfNeeded: word >> UInt64(8 * (7 - index % 8)))
    }

    /// Exactly four decimal octets, each 0–255 with no leading zero.
    private static func parseIPv4(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var octets: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(isDecimalDigit) else { return nil }
            if part.count > 1 && part.first == UInt8(ascii: "0") { return nil }
            let value = part.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            guard value <= 255 else { return nil }
            octets.append(UInt8(value))
        }
        return octets
    }

    /// Eight 16-bit groups, or fewer around one `::`; the last piece may be dotted IPv4.
    private static func parseIPv6(_ text: ArraySlice<UInt8>) -> [UInt16]? {
        let colon = UInt8(ascii: ":")
        // Split at the first "::" (if any); a second one anywhere is refused below, as an empty group.
        var head = text
        var tail: ArraySlice<UInt8>? = nil
        var index = text.startIndex
        while index + 1 < text.endIndex {
            if text[index] == colon && text[index + 1] == colon {
                head = text[text.startIndex..<index]
                tail = text[(index + 2)...]
                break
            }
            index += 1
        }
        // Groups of one side: "" is none; otherwise every piece between colons is non-empty.
        func groups(_ side: ArraySlice<UInt8>, mayEndInIPv4: Bool) -> [UInt16]? {
            if side.isEmpty { return [] }
            let pieces = side.split(separator: colon, omittingEmptySubsequences: false)
            var words: [UInt16] = []
            for (position, piece) in pieces.enumerated() {
                if piece.contains(UInt8(ascii: ".")) {
                    guard mayEndInIPv4, position == pieces.count - 1, let v4 = parseIPv4(piece) else { return nil }
                    words += [UInt16(v4[0]) << 8 | UInt16(v4[1]), UInt16(v4[2]) << 8 | UInt16(v4[3])]
                    continue
                }
                guard (1...4).contains(piece.count) else { return nil }
                var word: UInt16 = 0
                for character in piece {
                    guard let nibble = hexValue(character) else { return nil }
                    word = word << 4 | UInt16(nibble)
                }
                words.append(word)
            }
            return words
        }
        guard let tail else {
            guard let words = groups(head, mayEndInIPv4: true), words.count == 8 else { return nil }
            return words
        }
        guard let front = groups(head, mayEndInIPv4: false), let back = groups(tail, mayEndInIPv4: true),
            front.count + back.count <= 7
        else { return nil }
        return front + Array(repeating: 0, count: 8 - front.count - back.count) + back
    }

    private static func isDecimalDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
