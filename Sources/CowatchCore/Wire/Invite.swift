/// An invite link: where the room server is, which room, the room's secret and the server's
/// certificate pin, in one line people can paste.
///
///     cowatch://HOST[:PORT]/ROOM[?secret=SECRET][&fp=sha256:FINGERPRINT][&notls=1][&alt=HOST:PORT,…]
///
/// - HOST: a DNS name (letters, digits, `-`, `.`, `_`; stored lowercased), an IPv4 address, or an
///   IPv6 address in brackets (`cowatch://[::1]:7433/room`; no zone ids).
/// - PORT: 1–65535; omitted means `Invite.defaultPort` (7433, the servers' default).
/// - ROOM: one path segment, a valid room name (`RoomName`: letters, digits, `.`, `_`, `-`, 1–64,
///   not starting with `.`).
/// - `secret`: the room secret, percent-encoded UTF-8 (`+` is a plus, not a space); not empty,
///   no control characters, at most `maxSecretBytes` bytes.
/// - `fp`: the server's `CertificateFingerprint` (`sha256:…`, base64url or hex).
/// - `notls=1`: the server runs with `--no-tls`; refused together with `fp`.
/// - `alt`: more addresses of the same server, comma-separated `HOST:PORT` (IPv6 in brackets),
///   at most `maxAlternates`: a host at home offers its router's outside address, its global
///   IPv6 address and its LAN address; a joining daemon races them in order.
///
/// Unknown query keys are refused rather than ignored: a newer invite may carry an option that
/// matters for security, and silently dropping it would be worse than asking the user to update.
/// A key given twice, a fragment (`#…`), spaces or control characters anywhere are refused too.
/// Leading and trailing whitespace (a pasted line break) is trimmed.
///
/// `text` writes the canonical form (port always written, keys in the order secret, fp, notls, alt);
/// `parse(text)` of it gives the same invite back. `description` and `redacted` hide the secret:
/// log those, never `text`.
///
/// Threading: a value type, safe to share.
public struct Invite: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var room: String
    /// The room secret, or nil for an open room.
    public var secret: String?
    /// The pinned certificate key of the server, or nil (then `known_hosts` or trust on first use).
    public var fingerprint: CertificateFingerprint?
    /// False for a server started with `--no-tls` (`notls=1`).
    public var tls: Bool
    /// Other addresses of the same server, tried after `host:port` (`alt=`).
    public var alternates: [Endpoint] = []

    public static let scheme = "cowatch"
    /// The port `cowatch-server --listen` and `cowatchd --host` use unless told otherwise.
    public static let defaultPort = 7433
    public static let maxSecretBytes = 256
    public static let maxTextLength = 2048
    public static let maxAlternates = 4

    /// Does not validate: an invite made here with a bad host or room gives a `text` that
    /// `parse` refuses. Build invites from values that were checked already (the server's own
    /// address, a `RoomName`-valid room).
    public init(
        host: String, port: Int = Invite.defaultPort, room: String, secret: String? = nil,
        fingerprint: CertificateFingerprint? = nil, tls: Bool = true
    ) {
        self.host = host
        self.port = port
        self.room = room
        self.secret = secret
        self.fingerprint = fingerprint
        self.tls = tls
    }

    /// `HOST:PORT`, with an IPv6 address in brackets (`[::1]:7433`): the form used in messages and
    /// in `known_hosts`.
    public static func authority(host: String, port: Int) -> String {
        (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }

    /// The canonical link, secret included. Do not log it; log `redacted`.
    public var text: String { render(secret: secret.map(Self.percentEncode)) }

    /// The link with the secret replaced by `…`, for logs and messages.
    public var redacted: String { render(secret: secret == nil ? nil : "…") }

    public var description: String { redacted }

    private func render(secret: String?) -> String {
        var query: [String] = []
        if let secret { query.append("secret=" + secret) }
        if let fingerprint { query.append("fp=" + fingerprint.text) }
        if !tls { query.append("notls=1") }
        if !alternates.isEmpty {
            query.append("alt=" + alternates.map { Self.authority(host: $0.host, port: $0.port) }.joined(separator: ","))
        }
        let base = "\(Self.scheme)://\(Self.authority(host: host, port: port))/\(room)"
        return query.isEmpty ? base : base + "?" + query.joined(separator: "&")
    }

    /// The first `cowatch://` link in `text` (a bare link, or the host's kept line
    /// `cowatchd --join '…' --media FILM`), up to the next space or quote; nil when there is none.
    /// Not checked: `parse` it.
    public static func findLink(in text: String) -> String? {
        let bytes = Array(text.utf8)
        let needle = Array((scheme + "://").utf8)
        guard bytes.count >= needle.count else { return nil }
        // ASCII case-insensitively: a link pasted as COWATCH:// is still one.
        let lowered = bytes.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }
        guard let start = (0...(bytes.count - needle.count)).first(where: { Array(lowered[$0..<($0 + needle.count)]) == needle })
        else { return nil }
        let stops: Set<UInt8> = [0x20, 0x27, 0x22, 0x0A, 0x0D, 0x09]
        let end = bytes[start...].firstIndex(where: { stops.contains($0) }) ?? bytes.count
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// Parses an invite link. Throws `invalid-invite` saying what is wrong (never echoing the
    /// secret).
    public static func parse(_ text: String) throws(CowatchError) -> Invite {
        let trimmed = Substring(text).trimmingASCIIWhitespace()
        guard trimmed.utf8.count <= maxTextLength else {
            throw fail("it is longer than \(maxTextLength) characters")
        }
        let isBad: (Unicode.Scalar) -> Bool = { $0.value <= 0x20 || $0.value == 0x7F || !$0.isASCII }
        guard let bad = trimmed.unicodeScalars.first(where: isBad) else { return try parseASCII(trimmed) }
        let code = "U+" + String(bad.value, radix: 16, uppercase: true)
        if bad == " " { throw fail("it contains a space (percent-encode it as %20 inside the secret)") }
        if !bad.isASCII { throw fail("it contains the non-ASCII character \(code) (percent-encode it inside the secret)") }
        throw fail("it contains the control character \(code)")
    }

    private static func parseASCII(_ text: Substring) throws(CowatchError) -> Invite {
        let schemePrefix = scheme + "://"
        guard text.lowercased().hasPrefix(schemePrefix) else {
            let shown = text.firstIndex(of: ":").map { String(text[..<$0].prefix(20)) }.flatMap { $0.lowercased() == scheme ? nil : $0 }
            throw fail(shown.map { "the scheme is \"\($0)\", not \"\(scheme)\" (it must start with \(schemePrefix))" }
                ?? "it must start with \(schemePrefix)")
        }
        var rest = text.dropFirst(schemePrefix.count)
        if rest.contains("#") { throw fail("it has a fragment (#…); percent-encode # inside the secret as %23") }

        var queryText: Substring?
        if let question = rest.firstIndex(of: "?") {
            queryText = rest[rest.index(after: question)...]
            rest = rest[..<question]
        }
        guard let slash = rest.firstIndex(of: "/") else {
            throw fail("it names no room (expected \(schemePrefix)HOST:PORT/ROOM)")
        }
        let (host, port) = try parseAuthority(rest[..<slash])
        let room = String(rest[rest.index(after: slash)...])
        guard !room.isEmpty else { throw fail("it names no room (expected \(schemePrefix)HOST:PORT/ROOM)") }
        guard !room.contains("/") else { throw fail("the room must be one path segment, not \"\(room.prefix(70))\"") }
        guard RoomName.isValid(room) else {
            throw fail("the room name \"\(room.prefix(70))\" must be 1–\(RoomName.maxLength) letters, digits, '.', '_' or '-', not starting with '.'")
        }

        var invite = Invite(host: host, port: port, room: room)
        if let queryText { try parseQuery(queryText, into: &invite) }
        return invite
    }

    private static func parseAuthority(_ authority: Substring) throws(CowatchError) -> (String, Int) {
        guard !authority.isEmpty else { throw fail("it names no host (expected \(scheme)://HOST:PORT/ROOM)") }
        if authority.contains("@") { throw fail("it has user information (…@) before the host, which cowatch does not use") }
        let host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw fail("the IPv6 address has no closing ']'") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw fail("unexpected \"\(after.prefix(20))\" after the IPv6 address") }
                portText = after.dropFirst()
            }
            guard isIPv6Literal(host) else {
                throw fail(host.contains("%") ? "IPv6 zone ids (…%eth0) are not supported" : "\"[\(host.prefix(60))]\" is not an IPv6 address")
            }
        } else {
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = parts[0]
            if parts.count == 2 { portText = parts[1] }
            if portText?.contains(":") == true { throw fail("put an IPv6 address in brackets: \(scheme)://[ADDRESS]:PORT/ROOM") }
            guard !host.isEmpty else { throw fail("it names no host (expected \(scheme)://HOST:PORT/ROOM)") }
            guard isHostName(host) else {
                throw fail("the host \"\(host.prefix(70))\" must be a DNS name (letters, digits, '-', '.', '_') or an IP address")
            }
        }
        var port = defaultPort
        if let portText {
            guard !portText.isEmpty, portText.count <= 5, portText.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let value = Int(portText), (1...65535).contains(value)
            else { throw fail("the port \"\(portText.prefix(20))\" must be a number from 1 to 65535") }
            port = value
        }
        return (host.lowercased(), port)
    }

    private static func parseQuery(_ query: Substring, into invite: inout Invite) throws(CowatchError) {
        var seen: Set<String> = []
        for pair in query.split(separator: "&", omittingEmptySubsequences: false) {
            guard !pair.isEmpty else { throw fail("the query has an empty part (\"&&\" or a trailing '&')") }
            guard let equals = pair.firstIndex(of: "=") else {
                throw fail("a query part has no '=' (expected KEY=VALUE)")
            }
            let key = String(pair[..<equals])
            let rawValue = pair[pair.index(after: equals)...]
            guard seen.insert(key).inserted else { throw fail("\"\(key.prefix(20))\" is given twice") }
            switch key {
            case "secret":
                guard let value = percentDecode(rawValue) else {
                    throw fail("the secret is not correctly percent-encoded UTF-8 (write % as %25)")
                }
                guard !value.isEmpty else { throw fail("the secret is empty (leave out secret= for an open room)") }
                guard value.utf8.count <= maxSecretBytes else { throw fail("the secret is longer than \(maxSecretBytes) bytes") }
                guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                    throw fail("the secret contains a control character")
                }
                invite.secret = value
            case "fp":
                guard let value = percentDecode(rawValue), let fingerprint = CertificateFingerprint(text: value) else {
                    throw fail("the fingerprint fp=\(rawValue.prefix(80)) must be sha256: and 43 base64url characters (or 64 lowercase hex digits)")
                }
                invite.fingerprint = fingerprint
            case "notls":
                guard rawValue == "1" else { throw fail("notls must be 1, not \"\(rawValue.prefix(20))\"") }
                invite.tls = false
            case "alt":
                let items = rawValue.split(separator: ",", omittingEmptySubsequences: false)
                guard items.count <= maxAlternates else { throw fail("it has more than \(maxAlternates) other addresses (alt=)") }
                for item in items {
                    guard !item.isEmpty else { throw fail("alt= has an empty address") }
                    let (host, port) = try parseAuthority(item)
                    invite.alternates.append(Endpoint(host: host, port: port))
                }
            default:
                throw fail("it has the unknown option \"\(key.prefix(20))\" (a newer cowatch may understand it; known: secret, fp, notls, alt)")
            }
        }
        if !invite.tls && invite.fingerprint != nil {
            throw fail("it has both notls=1 and a certificate fingerprint; a server without TLS has no certificate")
        }
    }

    private static func fail(_ reason: String) -> CowatchError {
        CowatchError(.invalidInvite, "the invite is not valid: \(reason)")
    }

    // MARK: - Pieces

    private static func isHostName(_ host: Substring) -> Bool {
        host.utf8.count <= 253 && !host.hasPrefix(".") && !host.hasPrefix("-")
            && host.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "-._".unicodeScalars.contains($0)
            }
    }

    /// An IPv6 address (`IPAddressBytes` parses it; an IPv4 address alone does not count).
    private static func isIPv6Literal(_ host: Substring) -> Bool {
        host.contains(":") && IPAddressBytes(text: String(host)) != nil
    }

    private static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)

    /// Every byte of the UTF-8 outside the unreserved set as `%XX` (uppercase).
    static func percentEncode(_ value: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        for byte in value.utf8 {
            if unreserved.contains(byte) {
                output.append(byte)
            } else {
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `%XX` (either case) to bytes, then strict UTF-8; nil for a broken escape or invalid UTF-8.
    static func percentDecode(_ value: Substring) -> String? {
        func nibble(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        let input = Array(value.utf8)
        var bytes: [UInt8] = []
        var index = 0
        while index < input.count {
            if input[index] == UInt8(ascii: "%") {
                guard index + 2 < input.count, let high = nibble(input[index + 1]), let low = nibble(input[index + 2]) else { return nil }
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(input[index])
                index += 1
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

extension Substring {
    fileprivate func trimmingASCIIWhitespace() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return self[endIndex...] }
        return self[first...last]
    }
}
