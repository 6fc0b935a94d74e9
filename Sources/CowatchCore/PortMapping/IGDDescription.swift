/// A service of a UPnP device, as its description lists it.
///
/// Threading: a value type; safe to share.
public struct IGDService: Sendable, Equatable {
    /// One of `IGDDescription.connectionServiceTypes`.
    public var serviceType: String
    /// As the description wrote it (trimmed, entities decoded, printable ASCII); turn it into a
    /// URL with `HTTPLocation.resolving(_:)` on the description's location.
    public var controlURL: String

    public init(serviceType: String, controlURL: String) {
        self.serviceType = serviceType
        self.controlURL = controlURL
    }
}

/// Reads an Internet Gateway Device's description (`rootDesc.xml`, the document its SSDP
/// `LOCATION` names) for the service that maps ports.
///
/// Not a general XML parser: a bounded scanner (`UPnPXMLScanner`) that knows elements, text, the
/// five predefined entities, comments, CDATA and the XML declaration, and refuses DTDs, other
/// entities, control characters, mismatched tags, more than `UPnPXMLScanner.maxDepth` levels and
/// documents over `maxBytes`. Namespace prefixes are ignored (`<u:service>` is `service`).
///
/// Threading: stateless; safe from any thread.
public enum IGDDescription {
    /// Descriptions are a few KiB; miniupnpd's is under 5.
    public static let maxBytes = 64 * 1024
    public static let maxServiceTypeLength = 256
    public static let maxControlURLLength = 512

    /// The services that have `AddPortMapping`, most preferred first.
    public static let connectionServiceTypes = [
        "urn:schemas-upnp-org:service:WANIPConnection:2",
        "urn:schemas-upnp-org:service:WANIPConnection:1",
        "urn:schemas-upnp-org:service:WANPPPConnection:1",
    ]

    /// The most preferred of `connectionServiceTypes` that the description lists, at any depth
    /// of nested devices (the first of that type when there are several).
    ///
    /// Throws `unsupported` ("the gateway offers no port-mapping service") when it lists none,
    /// and `protocol-violation` when the document is malformed or oversized, a `serviceType` or
    /// `controlURL` is longer than its limit, or the chosen service's `controlURL` is empty or
    /// not printable ASCII.
    public static func connectionService(in xml: [UInt8]) throws(CowatchError) -> IGDService {
        func fail(_ reason: String) -> CowatchError {
            CowatchError(.protocolViolation, "the gateway's description \(reason)")
        }
        guard xml.count <= maxBytes else { throw fail("is longer than \(maxBytes) bytes") }

        var scanner = UPnPXMLScanner(xml)
        var path: [String] = []
        // The <service> being read: the depth of its element and its two fields so far.
        var serviceDepth: Int?
        var serviceType: [UInt8]?
        var controlURL: [UInt8]?
        var found: [IGDService] = []
        while true {
            let next: UPnPXMLScanner.Event?
            do { next = try scanner.next() } catch { throw fail(error.message) }
            guard let event = next else { break }
            switch event {
            case .start(let name):
                path.append(name)
                if name == "service" {
                    guard serviceDepth == nil else { throw fail("has a <service> inside a <service>") }
                    serviceDepth = path.count
                    serviceType = nil
                    controlURL = nil
                } else if let depth = serviceDepth, path.count == depth + 1, name == "serviceType" || name == "controlURL" {
                    guard (name == "serviceType" ? serviceType : controlURL) == nil else {
                        throw fail("has a <service> with two \(name) elements")
                    }
                    if name == "serviceType" { serviceType = [] } else { controlURL = [] }
                }
            case .text(let text):
                guard let depth = serviceDepth, path.count == depth + 1 else { break }
                // Bounded while reading, with room for the whitespace that trimming removes.
                if path.last == "serviceType" {
                    serviceType?.append(contentsOf: text)
                    guard serviceType?.count ?? 0 <= 4 * maxServiceTypeLength else {
                        throw fail("has a serviceType longer than \(maxServiceTypeLength) bytes")
                    }
                } else if path.last == "controlURL" {
                    controlURL?.append(contentsOf: text)
                    guard controlURL?.count ?? 0 <= 4 * maxControlURLLength else {
                        throw fail("has a controlURL longer than \(maxControlURLLength) bytes")
                    }
                }
            case .end:
                if path.count == serviceDepth {
                    serviceDepth = nil
                    if let type = serviceType, let url = controlURL, let service = try checkedService(type: type, controlURL: url) {
                        found.append(service)
                    }
                }
                _ = path.popLast()
            }
        }
        for type in connectionServiceTypes {
            if let service = found.first(where: { $0.serviceType == type }) { return service }
        }
        throw CowatchError(.unsupported, "the gateway offers no port-mapping service")
    }

    /// The service, nil when it is of a type we do not use; throws for an unusable value.
    private static func checkedService(type: [UInt8], controlURL: [UInt8]) throws(CowatchError) -> IGDService? {
        let type = UPnPBytes.trimmed(type[...])
        let url = UPnPBytes.trimmed(controlURL[...])
        guard type.count <= maxServiceTypeLength else {
            throw CowatchError(.protocolViolation, "the gateway's description has a serviceType longer than \(maxServiceTypeLength) bytes")
        }
        guard url.count <= maxControlURLLength else {
            throw CowatchError(.protocolViolation, "the gateway's description has a controlURL longer than \(maxControlURLLength) bytes")
        }
        let typeText = String(decoding: type, as: UTF8.self)
        guard connectionServiceTypes.contains(typeText) else { return nil }
        guard !url.isEmpty, url.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw CowatchError(
                .protocolViolation,
                "the gateway's description has a \(typeText) controlURL that is empty or not printable ASCII (\"\(UPnPBytes.shown(url))\")")
        }
        return IGDService(serviceType: typeText, controlURL: String(decoding: url, as: UTF8.self))
    }
}

/// A bounded, pull-style scanner for the XML of UPnP descriptions and SOAP envelopes.
///
/// Yields element starts and ends by local name (prefix dropped; attributes skipped, their
/// quoting respected) and text with the five predefined entities decoded; CDATA is text; comments
/// and processing instructions are skipped. Checks that tags nest and match, that there is one
/// root, and that nothing follows it but whitespace, comments and processing instructions.
/// Refuses `<!DOCTYPE` (and so every DTD trick), any other `&…;`, the control characters XML
/// forbids, names over `maxNameLength` and nesting over `maxDepth`. Text is not checked for UTF-8;
/// callers decode what they keep. Never traps; linear in the input.
///
/// Errors are `protocol-violation` with a reason that reads after "the document …".
///
/// Threading: a value type; one per document.
struct UPnPXMLScanner {
    enum Event: Equatable {
        case start(String)
        case end(String)
        case text([UInt8])
    }

    static let maxDepth = 32
    static let maxNameLength = 128

    private let bytes: [UInt8]
    private var index = 0
    private var open: [ArraySlice<UInt8>] = []
    private var pendingEnd: String?
    private var sawRoot = false
    private var checkedControls = false

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The next event, or nil at the well-formed end of the document.
    mutating func next() throws(CowatchError) -> Event? {
        if !checkedControls {
            // XML 1.0 allows no C0 control but tab, LF and CR, even as a character reference.
            guard !bytes.contains(where: { $0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }) else {
                throw Self.fail("contains a control character")
            }
            checkedControls = true
        }
        if let end = pendingEnd {
            pendingEnd = nil
            return .end(end)
        }
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "<") else {
                let end = bytes[index...].firstIndex(of: UInt8(ascii: "<")) ?? bytes.count
                let raw = bytes[index..<end]
                index = end
                if open.isEmpty {
                    guard raw.allSatisfy(UPnPBytes.isWhitespace) else { throw Self.fail("has text outside its root element") }
                    continue
                }
                return .text(try Self.decodeEntities(raw))
            }
            let rest = bytes[index...]
            if rest.starts(with: Array("<?".utf8)) {
                index = try skip(past: "?>", what: "a processing instruction")
            } else if rest.starts(with: Array("<!--".utf8)) {
                index = try skip(past: "-->", what: "a comment")
            } else if rest.starts(with: Array("<![CDATA[".utf8)) {
                guard !open.isEmpty else { throw Self.fail("has CDATA outside its root element") }
                let start = index + 9
                guard let end = UPnPBytes.find(Array("]]>".utf8), in: bytes, from: start) else { throw Self.fail("ends inside CDATA") }
                index = end + 3
                return .text(Array(bytes[start..<end]))
            } else if rest.starts(with: Array("<!".utf8)) {
                throw Self.fail("has a DOCTYPE or other declaration, which is not allowed")
            } else if rest.starts(with: Array("</".utf8)) {
                return try endTag()
            } else {
                return try startTag()
            }
        }
        guard open.isEmpty else { throw Self.fail("ends before </\(UPnPBytes.shown(open[open.count - 1], limit: 40))>") }
        guard sawRoot else { throw Self.fail("has no element") }
        return nil
    }

    private mutating func startTag() throws(CowatchError) -> Event {
        guard !sawRoot || !open.isEmpty else { throw Self.fail("has a second root element") }
        let nameStart = index + 1
        var cursor = nameStart
        while cursor < bytes.count, !UPnPBytes.isWhitespace(bytes[cursor]), bytes[cursor] != UInt8(ascii: "/"), bytes[cursor] != UInt8(ascii: ">") {
            cursor += 1
        }
        let name = try Self.checkedName(bytes[nameStart..<cursor])
        // Attributes: skipped, but a '>' or '/' inside quotes is not the tag's end.
        var quote: UInt8?
        var lastOutsideQuotes: UInt8 = 0
        while cursor < bytes.count {
            let byte = bytes[cursor]
            if let open = quote {
                if byte == open { quote = nil }
                else if byte == UInt8(ascii: "<") { throw Self.fail("has '<' inside an attribute") }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: ">") {
                break
            } else if byte == UInt8(ascii: "<") {
                throw Self.fail("has '<' inside a tag")
            }
            if quote == nil && !UPnPBytes.isWhitespace(byte) { lastOutsideQuotes = byte }
            cursor += 1
        }
        guard cursor < bytes.count else { throw Self.fail("ends inside a tag") }
        index = cursor + 1
        sawRoot = true
        let local = Self.localName(name)
        if lastOutsideQuotes == UInt8(ascii: "/") {
            pendingEnd = local
        } else {
            guard open.count < Self.maxDepth else { throw Self.fail("nests elements more than \(Self.maxDepth) deep") }
            open.append(name)
        }
        return .start(local)
    }

    private mutating func endTag() throws(CowatchError) -> Event {
        let nameStart = index + 2
        guard let close = bytes[nameStart...].firstIndex(of: UInt8(ascii: ">")) else { throw Self.fail("ends inside a tag") }
        var nameEnd = close
        while nameEnd > nameStart, UPnPBytes.isWhitespace(bytes[nameEnd - 1]) { nameEnd -= 1 }
        let name = try Self.checkedName(bytes[nameStart..<nameEnd])
        guard let expected = open.last, expected.elementsEqual(name) else {
            throw Self.fail("has </\(UPnPBytes.shown(name, limit: 40))> where it does not close an element")
        }
        open.removeLast()
        index = close + 1
        return .end(Self.localName(name))
    }

    private mutating func skip(past terminator: String, what: String) throws(CowatchError) -> Int {
        let needle = Array(terminator.utf8)
        guard let end = UPnPBytes.find(needle, in: bytes, from: index + 2) else { throw Self.fail("ends inside \(what)") }
        return end + needle.count
    }

    /// Letters, digits and `_ - . :`, not starting with a digit, `-`, `.` or `:`; at most
    /// `maxNameLength`. (Stricter than XML, which also allows non-ASCII: UPnP uses none.)
    private static func checkedName(_ name: ArraySlice<UInt8>) throws(CowatchError) -> ArraySlice<UInt8> {
        guard let first = name.first, UPnPBytes.isLetter(first) || first == UInt8(ascii: "_"), name.count <= maxNameLength,
            name.allSatisfy({ UPnPBytes.isLetter($0) || UPnPBytes.isDigit($0) || "_-.:".utf8.contains($0) })
        else { throw fail("has a malformed element name \"\(UPnPBytes.shown(name, limit: 40))\"") }
        return name
    }

    private static func localName(_ name: ArraySlice<UInt8>) -> String {
        let local = name.lastIndex(of: UInt8(ascii: ":")).map { name[($0 + 1)...] } ?? name
        return String(decoding: local, as: UTF8.self)
    }

    /// `&amp; &lt; &gt; &quot; &apos;`, nothing else; a bare `&` is refused too.
    private static func decodeEntities(_ raw: ArraySlice<UInt8>) throws(CowatchError) -> [UInt8] {
        guard raw.contains(UInt8(ascii: "&")) else { return Array(raw) }
        let entities: [(String, UInt8)] = [("amp;", 0x26), ("lt;", 0x3C), ("gt;", 0x3E), ("quot;", 0x22), ("apos;", 0x27)]
        var output: [UInt8] = []
        output.reserveCapacity(raw.count)
        var cursor = raw.startIndex
        while cursor < raw.endIndex {
            let byte = raw[cursor]
            guard byte == UInt8(ascii: "&") else {
                output.append(byte)
                cursor += 1
                continue
            }
            let after = raw[(cursor + 1)...]
            guard let (name, value) = entities.first(where: { after.starts(with: $0.0.utf8) }) else {
                throw fail("has an entity other than &amp; &lt; &gt; &quot; &apos; (\"\(UPnPBytes.shown(after, limit: 12))\")")
            }
            output.append(value)
            cursor += 1 + name.utf8.count
        }
        return output
    }

    private static func fail(_ reason: String) -> CowatchError {
        CowatchError(.protocolViolation, reason)
    }
}
