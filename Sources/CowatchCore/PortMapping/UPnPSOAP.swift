/// What a gateway answered a SOAP action.
///
/// Threading: a value type; safe to share.
public enum SOAPResult: Sendable, Equatable {
    /// HTTP 200: the action's output arguments by name (`NewExternalIPAddress`, …), values
    /// trimmed; empty for actions without output.
    case ok([String: String])
    /// A UPnP error (normally with HTTP 500): its `errorCode` and its `errorDescription` cleaned
    /// to printable ASCII of at most `UPnPSOAP.maxFaultDescriptionLength` characters (the code's
    /// name from `UPnPSOAP.faultName(code:)` when the gateway gave none).
    case fault(code: Int, description: String)
}

/// The SOAP-over-HTTP/1.1 half of UPnP-IGD port mapping: complete request bytes for the three
/// actions we use, and a parser for the gateway's answer.
///
/// Requests are plain `POST`s with `Connection: close`, so an answer ends when the gateway
/// closes the connection, or earlier when `isComplete` says it has all arrived. The answer is
/// hostile input: at most `maxResponseBytes`, every header and argument checked (see
/// `parseResponse`).
///
/// Threading: stateless; safe from any thread.
public enum UPnPSOAP {
    public static let maxResponseBytes = 64 * 1024
    public static let maxHeaderLines = 64
    public static let maxArguments = 32
    public static let maxArgumentNameLength = 64
    /// In UTF-8 bytes, after trimming.
    public static let maxArgumentValueLength = 256
    public static let maxFaultDescriptionLength = 120
    /// Of the port mapping's description, in printable ASCII characters.
    public static let maxMappingDescriptionLength = 64
    /// A week: the longest lease IGD:2 allows (and a finite lease is what we want anyway).
    public static let maxLeaseSeconds = 604_800

    // MARK: - Requests

    /// `AddPortMapping` for TCP: `externalPort` on the gateway's external address to
    /// `internalClient`:`internalPort`, from any remote host, enabled, for `leaseSeconds`
    /// (0 means permanent, which IGD:2 gateways refuse).
    ///
    /// `description` keeps only its first `maxMappingDescriptionLength` printable ASCII
    /// characters (the rest dropped) and is XML-escaped. Throws `invalid-argument` for a port
    /// outside 1–65535, a lease outside 0–`maxLeaseSeconds`, an `internalClient` that is not an
    /// IPv4 address, or a `serviceType` that is not a plain `urn:…`.
    public static func addPortMapping(
        control: HTTPLocation, serviceType: String, externalPort: Int, internalPort: Int, internalClient: String,
        leaseSeconds: Int, description: String
    ) throws(CowatchError) -> [UInt8] {
        try checkPort(externalPort, "external port")
        try checkPort(internalPort, "internal port")
        guard let client = IPAddressBytes(text: internalClient), client.isIPv4 else {
            throw CowatchError(.invalidArgument, "the internal client \"\(UPnPBytes.shown(internalClient))\" must be an IPv4 address")
        }
        guard (0...maxLeaseSeconds).contains(leaseSeconds) else {
            throw CowatchError(.invalidArgument, "the lease must be 0 to \(maxLeaseSeconds) seconds, not \(leaseSeconds)")
        }
        let kept = description.utf8.filter(UPnPBytes.isPrintableASCII).prefix(maxMappingDescriptionLength)
        return try request(
            control: control, serviceType: serviceType, action: "AddPortMapping",
            arguments: [
                ("NewRemoteHost", ""),
                ("NewExternalPort", String(externalPort)),
                ("NewProtocol", "TCP"),
                ("NewInternalPort", String(internalPort)),
                ("NewInternalClient", client.description),
                ("NewEnabled", "1"),
                ("NewPortMappingDescription", xmlEscaped(String(decoding: kept, as: UTF8.self))),
                ("NewLeaseDuration", String(leaseSeconds)),
            ])
    }

    /// `DeletePortMapping` of the TCP mapping on `externalPort` (any remote host). Throws
    /// `invalid-argument` for a port outside 1–65535 or a bad `serviceType`.
    public static func deletePortMapping(control: HTTPLocation, serviceType: String, externalPort: Int) throws(CowatchError) -> [UInt8] {
        try checkPort(externalPort, "external port")
        return try request(
            control: control, serviceType: serviceType, action: "DeletePortMapping",
            arguments: [("NewRemoteHost", ""), ("NewExternalPort", String(externalPort)), ("NewProtocol", "TCP")])
    }

    /// `GetExternalIPAddress`; the answer's `NewExternalIPAddress` is the gateway's WAN address.
    /// Throws `invalid-argument` for a bad `serviceType`.
    public static func getExternalIPAddress(control: HTTPLocation, serviceType: String) throws(CowatchError) -> [UInt8] {
        try request(control: control, serviceType: serviceType, action: "GetExternalIPAddress", arguments: [])
    }

    /// A `GET` of `location` (the device description that SSDP pointed at), with
    /// `Connection: close`; read the answer with `isComplete` and `httpBody`.
    public static func getRequest(_ location: HTTPLocation) -> [UInt8] {
        Array("GET \(location.path) HTTP/1.1\r\nHost: \(location.authority)\r\nConnection: close\r\n\r\n".utf8)
    }

    /// The whole request. `arguments` are in the order the service defines (some gateways care),
    /// values already escaped.
    private static func request(
        control: HTTPLocation, serviceType: String, action: String, arguments: [(String, String)]
    ) throws(CowatchError) -> [UInt8] {
        // The service type goes into a header and an attribute: only URN characters.
        let type = Array(serviceType.utf8)
        guard type.count <= 128, type.starts(with: "urn:".utf8),
            type.allSatisfy({ UPnPBytes.isLetter($0) || UPnPBytes.isDigit($0) || ":.-_".utf8.contains($0) })
        else {
            throw CowatchError(.invalidArgument, "the service type \"\(UPnPBytes.shown(serviceType))\" is not a plain urn:…")
        }
        let argumentText = arguments.map { "<\($0.0)>\($0.1)</\($0.0)>" }.joined()
        let body =
            "<?xml version=\"1.0\"?>\r\n"
            + "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\" "
            + "s:encodingStyle=\"http://schemas.xmlsoap.org/soap/encoding/\">"
            + "<s:Body><u:\(action) xmlns:u=\"\(serviceType)\">\(argumentText)</u:\(action)></s:Body></s:Envelope>\r\n"
        let head =
            "POST \(control.path) HTTP/1.1\r\n"
            + "Host: \(control.authority)\r\n"
            + "Content-Type: text/xml; charset=\"utf-8\"\r\n"
            + "SOAPAction: \"\(serviceType)#\(action)\"\r\n"
            + "Content-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n"
            + "\r\n"
        return Array(head.utf8) + Array(body.utf8)
    }

    private static func checkPort(_ port: Int, _ what: String) throws(CowatchError) {
        guard (1...65535).contains(port) else {
            throw CowatchError(.invalidArgument, "the \(what) must be 1 to 65535, not \(port)")
        }
    }

    private static func xmlEscaped(_ text: String) -> String {
        var output = ""
        for character in text {
            switch character {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&apos;"
            default: output.append(character)
            }
        }
        return output
    }

    // MARK: - Responses

    /// Whether `bytes`, read so far from the connection, hold the whole response: true once the
    /// body its `Content-Length` announces, or the end of its chunked body, has arrived. Also true
    /// when more bytes cannot help (over `maxResponseBytes`, or a head that is already malformed),
    /// so the reader stops and lets `parseResponse` refuse them. False for a response without
    /// either framing: that one ends when the gateway closes the connection.
    public static func isComplete(_ bytes: [UInt8]) -> Bool {
        guard bytes.count <= maxResponseBytes else { return true }
        do {
            guard let head = try UPnPHTTPHead.parse(bytes, maxHeaderLines: maxHeaderLines, endOfInputEndsHead: false) else { return false }
            switch try framing(head) {
            case .length(let length): return bytes.count - head.bodyStart >= length
            case .chunked:
                if case .complete = try dechunk(bytes, from: head.bodyStart) { return true }
                return false
            case .untilClose: return false
            }
        } catch {
            return true
        }
    }

    /// Parses a complete response (what `isComplete` accepted, or everything up to the close).
    ///
    /// The head: `HTTP/1.1` or `HTTP/1.0`, at most `maxHeaderLines` fields, no control characters.
    /// The body: by `Content-Length` (bytes after it are ignored), chunked (the only transfer
    /// coding accepted, never together with `Content-Length`), or to the end. Status 200 must
    /// carry an `…Response` element in the SOAP `Body`, whose child elements are the output
    /// arguments: at most `maxArguments`, names of letters, digits and `_` up to
    /// `maxArgumentNameLength`, values text only, valid UTF-8 without control characters, at most
    /// `maxArgumentValueLength` bytes; a name twice is refused. A `Fault` (with status 500, or
    /// 200) gives `.fault` with the `UPnPError`'s `errorCode`.
    ///
    /// Throws `protocol-violation` saying what is wrong, including any other status (401, 404, …).
    public static func parseResponse(_ bytes: [UInt8]) throws(CowatchError) -> SOAPResult {
        func fail(_ reason: String) -> CowatchError {
            CowatchError(.protocolViolation, "the gateway's SOAP response \(reason)")
        }
        let (status, body) = try message(bytes, fail: fail)
        guard status == 200 || status == 500 else {
            throw fail("has the HTTP status \(status) (expected 200, or 500 with a UPnP error)")
        }

        let envelope: Envelope
        do { envelope = try parseEnvelope(body) } catch { throw fail(error.message) }
        switch envelope {
        case .fault(let code?, let description):
            return .fault(code: code, description: description.isEmpty ? faultName(code: code) ?? "" : description)
        case .fault(nil, _):
            throw fail("is a SOAP fault without a UPnP errorCode")
        case .response(let arguments):
            guard status == 200 else { throw fail("has the HTTP status 500 but no fault") }
            return .ok(arguments)
        }
    }

    /// The status and body of a complete HTTP response, by the same rules and bounds as
    /// `parseResponse` (head, framing, `maxResponseBytes`) but with any status and any body: for
    /// the device description that `getRequest` fetches. Throws `protocol-violation`.
    public static func httpBody(_ bytes: [UInt8]) throws(CowatchError) -> (status: Int, body: [UInt8]) {
        try message(bytes) { reason in CowatchError(.protocolViolation, "the gateway's HTTP response \(reason)") }
    }

    /// The head checked and the body unframed; `fail` words the error.
    private static func message(_ bytes: [UInt8], fail: (String) -> CowatchError) throws(CowatchError) -> (status: Int, body: [UInt8]) {
        guard bytes.count <= maxResponseBytes else { throw fail("is longer than \(maxResponseBytes) bytes") }
        let parsed: UPnPHTTPHead?
        let bodyFraming: Framing
        do {
            parsed = try UPnPHTTPHead.parse(bytes, maxHeaderLines: maxHeaderLines, endOfInputEndsHead: false)
            bodyFraming = try parsed.map(framing) ?? .untilClose
        } catch {
            throw fail(error.message)
        }
        guard let head = parsed else { throw fail("ends before its head does") }
        switch bodyFraming {
        case .length(let length):
            let available = bytes.count - head.bodyStart
            guard available >= length else { throw fail("ends after \(available) of its \(length) body bytes") }
            return (head.status, Array(bytes[head.bodyStart..<(head.bodyStart + length)]))
        case .chunked:
            let chunks: Chunks
            do { chunks = try dechunk(bytes, from: head.bodyStart) } catch { throw fail(error.message) }
            switch chunks {
            case .complete(let body), .trailersCut(let body): return (head.status, body)
            case .truncated: throw fail("ends inside its chunked body")
            }
        case .untilClose:
            return (head.status, Array(bytes[head.bodyStart...]))
        }
    }

    // MARK: - Faults

    private static let knownFaults: [Int: (name: String, explanation: String)] = [
        401: ("Invalid Action", "the router does not know this action"),
        402: ("Invalid Args", "the router did not accept the request's arguments"),
        501: ("Action Failed", "the router could not carry out the request"),
        606: ("Action not authorized", "the router does not let this machine change its port forwarding (see its UPnP settings)"),
        714: ("NoSuchEntryInArray", "the router has no such port mapping"),
        715: ("WildCardNotPermittedInSrcIP", "the router does not accept mappings for any remote host"),
        716: ("WildCardNotPermittedInExtPort", "the router needs a specific external port"),
        718: ("ConflictInMappingEntry", "the router already forwards that port to another machine"),
        724: ("SamePortValuesRequired", "the router only forwards a port to the same port number on this machine"),
        725: ("OnlyPermanentLeasesSupported", "the router only accepts port mappings that never expire"),
        726: ("RemoteHostOnlySupportsWildcard", "the router only accepts mappings for any remote host"),
        727: ("ExternalPortOnlySupportsWildcard", "the router does not accept a specific external port"),
        728: ("NoPortMapsAvailable", "the router's table of port mappings is full"),
        729: ("ConflictWithOtherMechanisms", "another mechanism on the router already uses that port"),
        732: ("WildCardNotPermittedInIntPort", "the router needs a specific internal port"),
    ]

    /// The UPnP name of a well-known error code (`718` → `ConflictInMappingEntry`), or nil.
    public static func faultName(code: Int) -> String? { knownFaults[code]?.name }

    /// What a well-known error code means, for people (`718` → "the router already forwards that
    /// port to another machine"), or nil.
    public static func faultExplanation(code: Int) -> String? { knownFaults[code]?.explanation }

    /// One line for a message: "718 ConflictInMappingEntry: the router already forwards that port
    /// to another machine", or the code and the gateway's (cleaned) description for other codes.
    public static func faultSummary(code: Int, description: String) -> String {
        if let known = knownFaults[code] { return "\(code) \(known.name): \(known.explanation)" }
        let cleaned = cleanedDescription(Array(description.utf8.prefix(4 * maxFaultDescriptionLength)))
        return cleaned.isEmpty ? "\(code) (an error the router did not describe)" : "\(code) \(cleaned)"
    }

    /// Printable ASCII only (controls become spaces, anything else `?`), trimmed, at most
    /// `maxFaultDescriptionLength` characters.
    private static func cleanedDescription(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
            if scalar.isASCII && UPnPBytes.isPrintableASCII(UInt8(scalar.value)) {
                output.append(UInt8(scalar.value))
            } else {
                output.append(ControlCharacters.isControl(scalar) ? 0x20 : UInt8(ascii: "?"))
            }
        }
        return String(decoding: UPnPBytes.trimmed(output[...]).prefix(maxFaultDescriptionLength), as: UTF8.self)
    }

    // MARK: - Pieces

    private enum Framing {
        case length(Int)
        case chunked
        case untilClose
    }

    private static func framing(_ head: UPnPHTTPHead) throws(CowatchError) -> Framing {
        let codings = head.values("transfer-encoding")
        let lengths = head.values("content-length")
        if !codings.isEmpty {
            // Both at once is how requests get smuggled; a gateway has no reason to send it.
            guard lengths.isEmpty else { throw CowatchError(.protocolViolation, "has both Transfer-Encoding and Content-Length") }
            guard codings.count == 1, codings[0].map(UPnPBytes.lowercased).elementsEqual("chunked".utf8) else {
                throw CowatchError(.protocolViolation, "has a Transfer-Encoding other than chunked")
            }
            return .chunked
        }
        guard let lengthText = lengths.first else { return .untilClose }
        guard lengths.count == 1, let length = UPnPBytes.decimal(lengthText, maxDigits: 7), length <= maxResponseBytes else {
            throw CowatchError(.protocolViolation, "has an unusable Content-Length")
        }
        return .length(length)
    }

    private enum Chunks {
        /// The last chunk and the blank line after any trailers arrived.
        case complete([UInt8])
        /// The last chunk arrived but the input ended in its trailers: the body is whole.
        case trailersCut([UInt8])
        case truncated
    }

    /// Decodes a chunked body starting at `start`: hex sizes (at most 8 digits, extensions after
    /// `;` ignored), each chunk followed by a line end, ended by a zero-size chunk and trailers
    /// (skipped, at most `maxHeaderLines`). The decoded body is bounded by `maxResponseBytes`.
    private static func dechunk(_ bytes: [UInt8], from start: Int) throws(CowatchError) -> Chunks {
        func fail(_ reason: String) -> CowatchError { CowatchError(.protocolViolation, reason) }
        // A line from `index` and where the next begins; nil when it has not ended yet.
        func line(from index: Int) -> (ArraySlice<UInt8>, next: Int)? {
            guard let newline = bytes[index...].firstIndex(of: 0x0A) else { return nil }
            let content = bytes[index..<newline]
            return (content.last == 0x0D ? content.dropLast() : content, newline + 1)
        }
        var body: [UInt8] = []
        var cursor = start
        while true {
            guard let (sizeLine, dataStart) = line(from: cursor) else { return .truncated }
            guard !sizeLine.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) else {
                throw fail("has a control character in a chunk size line")
            }
            var sizeText = sizeLine[..<(sizeLine.firstIndex(of: UInt8(ascii: ";")) ?? sizeLine.endIndex)]
            while let last = sizeText.last, UPnPBytes.isSpaceOrTab(last) { sizeText = sizeText.dropLast() }
            guard (1...8).contains(sizeText.count), sizeText.allSatisfy({ UPnPBytes.hexValue($0) != nil }) else {
                throw fail("has a malformed chunk size")
            }
            let size = sizeText.reduce(0) { $0 * 16 + (UPnPBytes.hexValue($1) ?? 0) }
            if size == 0 {
                var trailerCursor = dataStart
                var trailers = 0
                while true {
                    guard let (trailer, next) = line(from: trailerCursor) else { return .trailersCut(body) }
                    if trailer.isEmpty { return .complete(body) }
                    trailers += 1
                    guard trailers <= maxHeaderLines else { throw fail("has more than \(maxHeaderLines) trailer lines") }
                    trailerCursor = next
                }
            }
            guard size <= maxResponseBytes - body.count else { throw fail("has a chunked body longer than \(maxResponseBytes) bytes") }
            let dataEnd = dataStart + size
            guard dataEnd < bytes.count else { return .truncated }
            body += bytes[dataStart..<dataEnd]
            // The line end after the data: LF, or CR LF.
            if bytes[dataEnd] == 0x0A {
                cursor = dataEnd + 1
            } else if bytes[dataEnd] == 0x0D {
                guard dataEnd + 1 < bytes.count else { return .truncated }
                guard bytes[dataEnd + 1] == 0x0A else { throw fail("has a chunk that does not end where its size says") }
                cursor = dataEnd + 2
            } else {
                throw fail("has a chunk that does not end where its size says")
            }
        }
    }

    private enum Envelope {
        case response([String: String])
        case fault(code: Int?, description: String)
    }

    /// The SOAP envelope: `Envelope` → `Body` → one `…Response` or `Fault`.
    private static func parseEnvelope(_ body: [UInt8]) throws(CowatchError) -> Envelope {
        func fail(_ reason: String) -> CowatchError { CowatchError(.protocolViolation, reason) }
        enum Capture { case argument(String), errorCode, errorDescription }

        var scanner = UPnPXMLScanner(body)
        var path: [String] = []
        var answer: String?  // the Body's child: "Fault" or the "…Response" element
        var arguments: [String: String] = [:]
        var capture: Capture?
        var captureDepth = 0
        var captured: [UInt8] = []
        var errorCode: Int?
        var errorDescription: String?

        while let event = try scanner.next() {
            switch event {
            case .start(let name):
                path.append(name)
                guard capture == nil else {
                    if case .argument(let argument) = capture { throw fail("has elements inside the output argument \(argument)") }
                    break
                }
                let inBody = path.count >= 3 && path[1] == "Body"
                switch path.count {
                case 1:
                    guard name == "Envelope" else { throw fail("is not a SOAP envelope (its root is <\(name)>)") }
                case 3 where inBody:
                    guard answer == nil else { throw fail("has more than one element in its SOAP Body") }
                    guard name == "Fault" || (name.hasSuffix("Response") && name.utf8.count > 8) else {
                        throw fail("has <\(UPnPBytes.shown(name, limit: 40))> in its SOAP Body, neither an …Response nor a Fault")
                    }
                    answer = name
                case 4 where inBody && answer != "Fault":
                    guard name.utf8.count <= maxArgumentNameLength,
                        name.utf8.allSatisfy({ UPnPBytes.isLetter($0) || UPnPBytes.isDigit($0) || $0 == UInt8(ascii: "_") })
                    else { throw fail("has an output argument name that is not 1–\(maxArgumentNameLength) letters, digits or '_'") }
                    guard arguments[name] == nil else { throw fail("gives the output argument \(name) twice") }
                    guard arguments.count < maxArguments else { throw fail("has more than \(maxArguments) output arguments") }
                    capture = .argument(name)
                default:
                    // detail → UPnPError → errorCode, errorDescription, at whatever depth inside the Fault.
                    guard inBody, answer == "Fault", path.dropLast().contains("UPnPError") else { break }
                    if name == "errorCode" {
                        guard errorCode == nil else { throw fail("has two errorCode elements") }
                        capture = .errorCode
                    } else if name == "errorDescription" {
                        guard errorDescription == nil else { throw fail("has two errorDescription elements") }
                        capture = .errorDescription
                    }
                }
                captured = []
                captureDepth = path.count
            case .text(let text):
                // Only the text directly inside the captured element.
                guard capture != nil, path.count == captureDepth else { break }
                switch capture {
                case .argument(let argument):
                    // Room for the whitespace that trimming removes; the real limit is checked at the end.
                    guard captured.count + text.count <= 4 * maxArgumentValueLength else {
                        throw fail("has an output argument \(argument) longer than \(maxArgumentValueLength) bytes")
                    }
                    captured += text
                case .errorCode:
                    guard captured.count + text.count <= 64 else { throw fail("has an errorCode that is not a number") }
                    captured += text
                case .errorDescription:
                    // Cleaned and cut later; a long one is not an error, just more than we keep.
                    captured += text.prefix(max(0, 4 * maxFaultDescriptionLength - captured.count))
                case nil: break
                }
            case .end:
                if let current = capture, path.count == captureDepth {
                    capture = nil
                    let value = UPnPBytes.trimmed(captured[...])
                    switch current {
                    case .argument(let argument):
                        guard value.count <= maxArgumentValueLength else {
                            throw fail("has an output argument \(argument) longer than \(maxArgumentValueLength) bytes")
                        }
                        guard let text = String(validating: value, as: UTF8.self) else {
                            throw fail("has an output argument \(argument) that is not UTF-8")
                        }
                        guard !text.unicodeScalars.contains(where: ControlCharacters.isControl) else {
                            throw fail("has a control character in the output argument \(argument)")
                        }
                        arguments[argument] = text
                    case .errorCode:
                        guard let code = UPnPBytes.decimal(value, maxDigits: 4) else { throw fail("has an errorCode that is not a number") }
                        errorCode = code
                    case .errorDescription:
                        errorDescription = cleanedDescription(Array(value))
                    }
                }
                _ = path.popLast()
            }
        }
        switch answer {
        case "Fault": return .fault(code: errorCode, description: errorDescription ?? "")
        case .some: return .response(arguments)
        case nil: throw fail("has neither an …Response nor a Fault in its SOAP Body")
        }
    }
}
