/// SSDP, the discovery half of UPnP: the `M-SEARCH` request that asks gateways on the local
/// network to announce themselves, and the parser for their unicast replies.
///
/// A reply is hostile input from any machine on the network: it is bounded (`maxResponseBytes`,
/// `maxHeaderLines`), and its `LOCATION` must be a plain `http://` URL on the very address the
/// reply came from, so no device can send us to fetch anything from another host.
///
/// Threading: stateless; safe from any thread.
public enum SSDP {
    public static let multicastAddress = "239.255.255.250"
    public static let port = 1900

    /// What to search for, newest first. Gateways answer the version they implement.
    public static let gatewaySearchTargets = [
        "urn:schemas-upnp-org:device:InternetGatewayDevice:2",
        "urn:schemas-upnp-org:device:InternetGatewayDevice:1",
    ]

    /// Every UPnP root device answers this, so it finds gateways that ignore the targets above,
    /// but also televisions and printers: expect descriptions without a port-mapping service.
    public static let rootDeviceSearchTarget = "upnp:rootdevice"

    /// A reply fits in one datagram; real ones are about 300–500 bytes.
    public static let maxResponseBytes = 2048
    public static let maxHeaderLines = 64
    /// UDA 1.1 allows an `MX` of 1–5 seconds; `searchRequest` clamps to this.
    public static let maxWaitRange = 1...5

    /// The `M-SEARCH` datagram for `searchTarget`, to send to `multicastAddress`:`port`.
    ///
    /// `maxWaitSeconds` is clamped to `maxWaitRange`. Characters other than printable ASCII are
    /// dropped from the target (at most 256 kept), so it cannot add header lines.
    public static func searchRequest(searchTarget: String, maxWaitSeconds: Int) -> [UInt8] {
        let target = String(decoding: searchTarget.utf8.filter(UPnPBytes.isPrintableASCII).prefix(256), as: UTF8.self)
        let wait = min(max(maxWaitSeconds, maxWaitRange.lowerBound), maxWaitRange.upperBound)
        let text =
            "M-SEARCH * HTTP/1.1\r\n"
            + "HOST: \(multicastAddress):\(port)\r\n"
            + "MAN: \"ssdp:discover\"\r\n"
            + "MX: \(wait)\r\n"
            + "ST: \(target)\r\n"
            + "\r\n"
        return Array(text.utf8)
    }

    /// A gateway's answer to `M-SEARCH`: where its device description is.
    ///
    /// Threading: a value type; safe to share.
    public struct SearchResponse: Sendable, Equatable {
        /// The device description, on the address the reply came from.
        public var location: HTTPLocation
        /// The `ST` header: which search target this answers (printable ASCII, at most 256).
        public var searchTarget: String?
        /// The `SERVER` header, for logs: non-printable characters shown as `?`, at most 128.
        public var server: String?

        public init(location: HTTPLocation, searchTarget: String? = nil, server: String? = nil) {
            self.location = location
            self.searchTarget = searchTarget
            self.server = server
        }
    }

    /// Parses one reply datagram. `responder` is the IP address (text) the datagram came from;
    /// an IPv6 zone (`%en0`) on it is ignored.
    ///
    /// Requires `HTTP/1.1 200`, at most `maxResponseBytes` bytes and `maxHeaderLines` header
    /// lines, no control characters, and exactly one `LOCATION` that `HTTPLocation` accepts and
    /// whose host is the responder's address (`::ffff:a.b.c.d` and `a.b.c.d` are the same). The
    /// final blank line may be missing: the datagram is complete anyway. Header names are
    /// case-insensitive; a body is ignored.
    ///
    /// Throws `protocol-violation` saying what is wrong, or `invalid-argument` when `responder`
    /// is not an IP address.
    public static func parseResponse(_ bytes: [UInt8], from responder: String) throws(CowatchError) -> SearchResponse {
        let responderText = responder.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        guard let responderAddress = IPAddressBytes(text: responderText) else {
            throw CowatchError(.invalidArgument, "the SSDP responder \"\(UPnPBytes.shown(responder))\" is not an IP address")
        }
        func fail(_ reason: String) -> CowatchError {
            CowatchError(.protocolViolation, "the SSDP reply from \(responderAddress) \(reason)")
        }
        guard bytes.count <= maxResponseBytes else { throw fail("is longer than \(maxResponseBytes) bytes") }

        let parsed: UPnPHTTPHead?
        do {
            parsed = try UPnPHTTPHead.parse(bytes, maxHeaderLines: maxHeaderLines, endOfInputEndsHead: true)
        } catch {
            throw fail(error.message)
        }
        guard let head = parsed else { throw fail("is empty") }
        guard head.version == "HTTP/1.1", head.status == 200 else {
            throw fail("is not \"HTTP/1.1 200\" but \"\(head.version) \(head.status)\"")
        }

        let locations = head.values("location")
        guard locations.count == 1, let locationBytes = locations.first else {
            throw fail(locations.isEmpty ? "has no LOCATION" : "has \(locations.count) LOCATION headers")
        }
        let location: HTTPLocation
        do {
            location = try HTTPLocation(parsing: String(decoding: locationBytes, as: UTF8.self))
        } catch {
            throw fail("has an unusable LOCATION: \(error.message)")
        }
        // The one rule that keeps a device from pointing us anywhere but at itself.
        guard IPAddressBytes(text: location.host) == responderAddress else {
            throw fail("points at another host (\(location.host)); a gateway may only point at itself")
        }

        let targets = head.values("st")
        guard targets.count <= 1 else { throw fail("has more than one ST header") }
        var searchTarget: String?
        if let value = targets.first {
            guard value.count <= 256, value.allSatisfy(UPnPBytes.isPrintableASCII) else {
                throw fail("has an ST that is not printable ASCII of at most 256 characters")
            }
            searchTarget = String(decoding: value, as: UTF8.self)
        }
        let server = head.values("server").first.map { UPnPBytes.shown($0, limit: 128) }
        return SearchResponse(location: location, searchTarget: searchTarget, server: server)
    }
}

/// A plain-HTTP URL on an IP address, as a UPnP gateway gives them: where its description is,
/// where its control endpoint is.
///
/// Every value passed `init(parsing:)` or `resolving(_:)`: the host is an IPv4 or IPv6 literal
/// (never a name to look up), the port 1–65535, and the path starts with `/`, holds only URL
/// characters (no spaces, controls, `#` or quotes) and is at most `maxPathLength` bytes, so it
/// can go into a request line as it is.
///
/// Threading: a value type; safe to share.
public struct HTTPLocation: Sendable, Hashable, CustomStringConvertible {
    /// The address as written, lowercased, without brackets (`192.168.1.1`, `fe80::1`).
    public let host: String
    public let port: Int
    /// The request target: path and query, starting with `/`.
    public let path: String

    public static let maxTextLength = 2048
    public static let maxPathLength = 512

    private init(checkedHost host: String, port: Int, path: String) {
        self.host = host
        self.port = port
        self.path = path
    }

    /// `HOST:PORT` for the `Host` header, an IPv6 address in brackets.
    public var authority: String { Invite.authority(host: host, port: port) }

    /// The URL, `http://AUTHORITY/PATH`.
    public var text: String { "http://\(authority)\(path)" }

    public var description: String { text }

    /// Parses `http://HOST[:PORT]/PATH`: the scheme (any case) must be `http` (no `https`: a
    /// gateway's control point is plain HTTP, and a TLS one is not something we can verify), the
    /// host an IP literal (`[…]` for IPv6, no zone id), the port 1–65535 (80 if omitted). No
    /// user information (`user@`), no fragment, no spaces, controls or non-ASCII anywhere, at most
    /// `maxTextLength` bytes in all and `maxPathLength` of path.
    ///
    /// Throws `protocol-violation` saying what is wrong.
    public init(parsing text: String) throws(CowatchError) {
        func fail(_ reason: String) -> CowatchError {
            CowatchError(.protocolViolation, "the URL \"\(UPnPBytes.shown(text))\" \(reason)")
        }
        let bytes = Array(text.utf8.prefix(Self.maxTextLength + 1))
        guard bytes.count <= Self.maxTextLength else { throw fail("is longer than \(Self.maxTextLength) bytes") }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw fail("contains a space, a control character or non-ASCII")
        }
        let scheme = Array("http://".utf8)
        guard bytes.count >= scheme.count, bytes.prefix(scheme.count).map(UPnPBytes.lowercased) == scheme else {
            throw fail("is not an http:// URL")
        }
        let rest = bytes[scheme.count...]
        let authorityEnd = rest.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard !authority.contains(UInt8(ascii: "@")) else { throw fail("has user information (…@)") }

        var hostText: ArraySlice<UInt8>
        var portText: ArraySlice<UInt8>?
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { throw fail("has no ']' after its IPv6 address") }
            hostText = authority[(authority.startIndex + 1)..<close]
            let after = authority[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { throw fail("has something other than :PORT after its IPv6 address") }
                portText = after.dropFirst()
            }
            guard hostText.contains(UInt8(ascii: ":")) else { throw fail("has an IPv4 address in brackets") }
        } else {
            let colon = authority.firstIndex(of: UInt8(ascii: ":"))
            hostText = authority[..<(colon ?? authority.endIndex)]
            if let colon { portText = authority[(colon + 1)...] }
            guard !hostText.contains(UInt8(ascii: ":")), portText?.contains(UInt8(ascii: ":")) != true else {
                throw fail("has an IPv6 address without brackets")
            }
        }
        let host = String(decoding: hostText.map(UPnPBytes.lowercased), as: UTF8.self)
        guard IPAddressBytes(text: host) != nil else {
            throw fail(host.contains("%") ? "has an IPv6 zone id" : "names a host that is not an IP address")
        }
        var port = 80
        if let portText {
            guard let value = UPnPBytes.decimal(portText, maxDigits: 5), (1...65535).contains(value) else {
                throw fail("has a port that is not a number from 1 to 65535")
            }
            port = value
        }
        let path = bytes[authorityEnd...]
        guard path.first == UInt8(ascii: "/") else { throw fail("has no path (it must start with '/')") }
        if let reason = Self.pathProblem(path) { throw fail(reason) }
        self.init(checkedHost: host, port: port, path: String(decoding: path, as: UTF8.self))
    }

    /// The location `reference` (a `controlURL` from the device description) names, seen from
    /// this one:
    /// - an absolute path (`/ctl/IPConn`): the same host and port;
    /// - an absolute URL: allowed only when it is `http` on the same address and port;
    /// - `//HOST…` likewise;
    /// - a relative path (`ctl/IPConn`, `?x`): joined to the directory of this path.
    ///
    /// Surrounding whitespace is trimmed; dot segments are passed on, not interpreted (they only
    /// ever reach this same host). Throws `protocol-violation`, for another host among others.
    public func resolving(_ reference: String) throws(CowatchError) -> HTTPLocation {
        let bytes = UPnPBytes.trimmed(Array(reference.utf8.prefix(Self.maxTextLength + 1))[...])
        func fail(_ reason: String) -> CowatchError {
            CowatchError(.protocolViolation, "the gateway's URL \"\(UPnPBytes.shown(bytes))\" \(reason)")
        }
        guard !bytes.isEmpty else { throw fail("is empty") }
        guard bytes.count <= Self.maxTextLength else { throw fail("is longer than \(Self.maxTextLength) bytes") }

        let absolute: HTTPLocation?
        if Self.hasScheme(bytes) {
            absolute = try HTTPLocation(parsing: String(decoding: bytes, as: UTF8.self))
        } else if bytes.starts(with: Array("//".utf8)) {
            absolute = try HTTPLocation(parsing: "http:" + String(decoding: bytes, as: UTF8.self))
        } else {
            absolute = nil
        }
        if let absolute {
            guard IPAddressBytes(text: absolute.host) == IPAddressBytes(text: host), absolute.port == port else {
                throw fail("points at another host than \(authority)")
            }
            return HTTPLocation(checkedHost: host, port: port, path: absolute.path)
        }

        let ownPath = Array(path.utf8)
        let ownPathWithoutQuery = ownPath[..<(ownPath.firstIndex(of: UInt8(ascii: "?")) ?? ownPath.endIndex)]
        var joined: [UInt8]
        switch bytes.first {
        case UInt8(ascii: "/"): joined = Array(bytes)
        case UInt8(ascii: "?"): joined = Array(ownPathWithoutQuery) + bytes
        case UInt8(ascii: "#"): throw fail("is only a fragment")
        default:
            let directoryEnd = (ownPathWithoutQuery.lastIndex(of: UInt8(ascii: "/")) ?? 0) + 1
            joined = Array(ownPath[..<directoryEnd]) + bytes
        }
        if let reason = Self.pathProblem(joined[...]) { throw fail(reason) }
        return HTTPLocation(checkedHost: host, port: port, path: String(decoding: joined, as: UTF8.self))
    }

    /// RFC 3986 `scheme ":"` before any `/`, `?` or `#`.
    private static func hasScheme(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > bytes.startIndex else { return false }
        let scheme = bytes[..<colon]
        return UPnPBytes.isLetter(scheme[scheme.startIndex])
            && scheme.allSatisfy { UPnPBytes.isLetter($0) || UPnPBytes.isDigit($0) || "+-.".utf8.contains($0) }
    }

    /// Why `path` cannot be a request target, or nil when it can: the URL characters of RFC 3986
    /// only (a `%` followed by two hex digits), no fragment, at most `maxPathLength` bytes.
    private static func pathProblem(_ path: ArraySlice<UInt8>) -> String? {
        guard path.count <= maxPathLength else { return "has a path longer than \(maxPathLength) bytes" }
        var index = path.startIndex
        while index < path.endIndex {
            let byte = path[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < path.endIndex, UPnPBytes.hexValue(path[index + 1]) != nil, UPnPBytes.hexValue(path[index + 2]) != nil
                else { return "has a '%' that is not followed by two hex digits" }
                index += 3
                continue
            }
            let allowed = UPnPBytes.isLetter(byte) || UPnPBytes.isDigit(byte) || "-._~!$&'()*+,;=:@/?".utf8.contains(byte)
            guard allowed else {
                return byte == UInt8(ascii: "#") ? "has a fragment (#…)" : "has the character '\(Unicode.Scalar(byte))' in its path"
            }
            index += 1
        }
        return nil
    }
}

// MARK: - Shared pieces of the UPnP codecs

/// Byte-level helpers for the UPnP codecs: everything a gateway sends is bytes first, and stays
/// bytes until checked.
enum UPnPBytes {
    static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
    static func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
    /// Space to `~`.
    static func isPrintableASCII(_ byte: UInt8) -> Bool { (0x20...0x7E).contains(byte) }
    static func isSpaceOrTab(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
    static func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
    static func lowercased(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte + 0x20 : byte }

    static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x30...0x39: Int(byte - 0x30)
        case 0x41...0x46: Int(byte - 0x41 + 10)
        case 0x61...0x66: Int(byte - 0x61 + 10)
        default: nil
        }
    }

    /// 1 to `maxDigits` decimal digits and nothing else (no sign, no space).
    static func decimal(_ bytes: some Collection<UInt8>, maxDigits: Int) -> Int? {
        guard !bytes.isEmpty, bytes.count <= maxDigits, bytes.allSatisfy(isDigit) else { return nil }
        return bytes.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// Without leading and trailing spaces, tabs, CRs and LFs.
    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard let first = bytes.firstIndex(where: { !isWhitespace($0) }), let last = bytes.lastIndex(where: { !isWhitespace($0) })
        else { return bytes[bytes.endIndex...] }
        return bytes[first...last]
    }

    /// Hostile text made safe to put in a message: printable ASCII kept, anything else shown
    /// as `?`, at most `limit` characters (then `…`).
    static func shown(_ bytes: some Collection<UInt8>, limit: Int = 80) -> String {
        let kept = bytes.prefix(limit).map { isPrintableASCII($0) ? $0 : UInt8(ascii: "?") }
        return String(decoding: kept, as: UTF8.self) + (bytes.count > limit ? "…" : "")
    }

    static func shown(_ text: String, limit: Int = 80) -> String { shown(Array(text.utf8.prefix(limit + 1)), limit: limit) }

    /// The first index of `needle` in `bytes` at or after `start`. Needles here are a few bytes
    /// long, so the plain scan is linear in practice.
    static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, start >= 0, bytes.count >= needle.count else { return nil }
        var index = start
        while index <= bytes.count - needle.count {
            if bytes[index] == needle[0] && bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}

/// The head of an HTTP/1.x response (status line and header fields), shared by the SSDP and the
/// SOAP parsers. Refuses control characters other than tab, folded lines, malformed names and
/// more than `maxHeaderLines` fields; accepts CRLF or bare LF line ends.
///
/// Threading: a value type; safe to share.
struct UPnPHTTPHead {
    /// `HTTP/1.0` or `HTTP/1.1`.
    var version: String
    var status: Int
    /// Field names lowercased; values without surrounding spaces and tabs.
    var fields: [(name: String, value: ArraySlice<UInt8>)]
    /// Where the body starts (after the blank line), or the end of the input.
    var bodyStart: Int

    func values(_ name: String) -> [ArraySlice<UInt8>] {
        fields.filter { $0.name == name }.map(\.value)
    }

    /// The head, or nil when it has not fully arrived. With `endOfInputEndsHead` (a datagram),
    /// the end of the input ends it as well as a blank line does, and nil means no bytes at all.
    /// Throws `protocol-violation` with a reason fit to follow "the reply …".
    static func parse(_ bytes: [UInt8], maxHeaderLines: Int, endOfInputEndsHead: Bool) throws(CowatchError) -> UPnPHTTPHead? {
        func fail(_ reason: String) -> CowatchError { CowatchError(.protocolViolation, reason) }
        var head = UPnPHTTPHead(version: "", status: 0, fields: [], bodyStart: bytes.count)
        var start = 0
        var sawStatusLine = false
        while start < bytes.count {
            let lineEnd: Int
            let next: Int
            if let newline = bytes[start...].firstIndex(of: 0x0A) {
                lineEnd = newline
                next = newline + 1
            } else if endOfInputEndsHead {
                lineEnd = bytes.count
                next = bytes.count
            } else {
                return nil
            }
            var line = bytes[start..<lineEnd]
            if line.last == 0x0D { line = line.dropLast() }
            guard !line.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) else {
                throw fail("contains a control character in its head")
            }
            if !sawStatusLine {
                try parseStatusLine(line, into: &head)
                sawStatusLine = true
            } else if line.isEmpty {
                head.bodyStart = next
                return head
            } else {
                guard head.fields.count < maxHeaderLines else { throw fail("has more than \(maxHeaderLines) header lines") }
                guard !UPnPBytes.isSpaceOrTab(line[line.startIndex]) else { throw fail("has a folded header line") }
                guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { throw fail("has a header line without ':'") }
                let name = line[..<colon]
                let isToken: (UInt8) -> Bool = { UPnPBytes.isLetter($0) || UPnPBytes.isDigit($0) || "!#$%&'*+-.^_`|~".utf8.contains($0) }
                guard (1...64).contains(name.count), name.allSatisfy(isToken) else {
                    throw fail("has a malformed header name \"\(UPnPBytes.shown(name, limit: 40))\"")
                }
                var value = line[(colon + 1)...]
                while let first = value.first, UPnPBytes.isSpaceOrTab(first) { value = value.dropFirst() }
                while let last = value.last, UPnPBytes.isSpaceOrTab(last) { value = value.dropLast() }
                head.fields.append((String(decoding: name.map(UPnPBytes.lowercased), as: UTF8.self), value))
            }
            start = next
        }
        guard sawStatusLine else { return nil }
        // Only a datagram gets here: its end is the end of the head.
        return endOfInputEndsHead ? head : nil
    }

    /// `HTTP/1.x NNN[ reason]`; the reason is not kept (it is free text).
    private static func parseStatusLine(_ line: ArraySlice<UInt8>, into head: inout UPnPHTTPHead) throws(CowatchError) {
        let versions = ["HTTP/1.1", "HTTP/1.0"]
        guard line.count >= 12, let version = versions.first(where: { line.starts(with: $0.utf8) }),
            line[line.startIndex + 8] == 0x20,
            let status = UPnPBytes.decimal(line[(line.startIndex + 9)..<(line.startIndex + 12)], maxDigits: 3),
            (100...599).contains(status),
            line.count == 12 || line[line.startIndex + 12] == 0x20
        else {
            throw CowatchError(.protocolViolation, "does not start with an HTTP/1.x status line (\"\(UPnPBytes.shown(line, limit: 40))\")")
        }
        head.version = version
        head.status = status
    }
}
