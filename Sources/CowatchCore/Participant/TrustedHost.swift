/// One host this viewer trusts (`cowatchd --trust-host`), or the host of a URL a room switched
/// to, in one comparable form: lowercase, without a trailing dot, an IPv6 address without its
/// brackets.
///
/// A trusted name also covers its subdomains (`youtube.com` covers `www.youtube.com`, never
/// `evilyoutube.com` or `youtube.com.evil.net`); an address covers only itself. A URL whose host
/// cannot be read without doubt (a user name before `@`, `%`-escapes, a backslash, non-ASCII
/// letters, an IPv4 address in any but its dotted-quad form, a bad port) has no host here, so it
/// is never trusted: the viewer is asked instead.
///
/// Threading: a value type; pure.
public struct TrustedHost: Sendable, Hashable, CustomStringConvertible {
    /// A DNS name (covers its subdomains) or an IP address (covers only itself).
    public enum Kind: Sendable, Hashable {
        case name
        case address
    }

    /// The normalized host, e.g. `youtube.com`, `127.0.0.1`, `::1`.
    public let host: String
    public let kind: Kind

    /// At most this many `--trust-host` entries.
    public static let maximumCount = 256

    public var description: String { host }

    /// Checks one `--trust-host` value: a DNS name (`youtube.com`, `*.youtube.com`, a trailing dot
    /// or uppercase letters are fine) or an IP address (`127.0.0.1`, `::1`, `[::1]`).
    /// Errors: `invalid-configuration` for anything else (a URL, a port, a path, a user name,
    /// `%`, non-ASCII, an IPv4 address not in dotted-quad form).
    public init(validating text: String) throws(CowatchError) {
        var body = Substring(text)
        if body.hasPrefix("*.") { body = body.dropFirst(2) }
        let parsed: TrustedHost?
        if body.hasPrefix("[") && body.hasSuffix("]") {
            parsed = Self.ipv6(body.dropFirst().dropLast())
        } else if body.contains(":") {
            parsed = Self.ipv6(body)
        } else {
            parsed = Self.normalized(body)
        }
        guard let parsed else {
            let shown = String(text.unicodeScalars.prefix(60).map { $0.isASCII && $0.value >= 0x20 && $0.value != 0x7f ? Character($0) : "?" })
            throw CowatchError(
                .invalidConfiguration,
                "trust-host \"\(shown)\" is not a host name such as youtube.com or an IP address such as 192.0.2.7 (no scheme, port or path)")
        }
        self = parsed
    }

    init(host: String, kind: Kind) {
        self.host = host
        self.kind = kind
    }

    /// True when this trusted host covers `other` (a URL's host): the same address, or the same
    /// name or one of its subdomains.
    public func covers(_ other: TrustedHost) -> Bool {
        guard kind == other.kind else { return false }
        switch kind {
        case .address: return host == other.host
        case .name: return other.host == host || other.host.hasSuffix("." + host)
        }
    }

    /// The host of `scheme://authority/…`, or nil when `url` is not such a URL or its host is in
    /// doubt (see the type's comment).
    public static func of(url: String) -> TrustedHost? {
        guard OpenPolicy.networkScheme(of: url) != nil, let start = url.range(of: "://")?.upperBound else { return nil }
        let rest = url[start...]
        let authority = rest.prefix { !"/?#".contains($0) }
        // Parsers disagree on these (ffmpeg takes the last @, a browser reads \ as /): never trust them.
        guard !authority.isEmpty, !authority.contains(where: { "@\\%".contains($0) || !$0.isASCII }) else { return nil }
        let host: Substring
        let port: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            guard let address = ipv6(authority[authority.index(after: authority.startIndex)..<close]) else { return nil }
            port = authority[authority.index(after: close)...]
            guard port.isEmpty || validPort(port) else { return nil }
            return address
        }
        if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            port = authority[colon...]
        } else {
            host = authority
            port = ""
        }
        guard port.isEmpty || validPort(port) else { return nil }
        return normalized(host)
    }

    /// `:` followed by 1 to 5 digits.
    static func validPort(_ text: Substring) -> Bool {
        let digits = text.dropFirst()
        return text.first == ":" && (1...5).contains(digits.count) && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// A DNS name or a dotted-quad IPv4 address, lowercased, one trailing dot dropped; nil for
    /// anything else. Labels are 1-63 of `a-z 0-9 - _`; the last label of a name starts with a
    /// letter (so `0x7f000001` or `127.1`, which resolvers read as addresses, are neither).
    static func normalized(_ text: Substring) -> TrustedHost? {
        guard text.allSatisfy(\.isASCII) else { return nil }
        var name = text.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        guard !name.isEmpty, name.utf8.count <= 253 else { return nil }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-_")
        guard labels.allSatisfy({ (1...63).contains($0.count) && $0.allSatisfy(allowed.contains) }) else { return nil }
        if labels.allSatisfy({ $0.allSatisfy(\.isNumber) }) {
            guard labels.count == 4,
                labels.allSatisfy({ label in label.count <= 3 && (label == "0" || !label.hasPrefix("0")) && Int(label)! <= 255 })
            else { return nil }
            return TrustedHost(host: name, kind: .address)
        }
        guard let first = labels.last?.first, first.isLetter else { return nil }
        return TrustedHost(host: name, kind: .name)
    }

    /// An IPv6 address (hex digits, `:` and, for an embedded IPv4 address, `.`), lowercased;
    /// nil for anything else, a zone (`%eth0`) included. Not rewritten to a canonical form:
    /// another spelling of a trusted address is simply not trusted.
    static func ipv6(_ text: Substring) -> TrustedHost? {
        guard text.allSatisfy(\.isASCII) else { return nil }
        let address = text.lowercased()
        guard (2...45).contains(address.count), address.filter({ $0 == ":" }).count >= 2,
            address.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }), !address.contains(":::")
        else { return nil }
        return TrustedHost(host: address, kind: .address)
    }
}
