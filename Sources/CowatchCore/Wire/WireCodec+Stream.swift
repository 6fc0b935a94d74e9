/// The codec of the film streams' messages (`StreamMessages.swift`). Decoding checks every
/// field a peer sends: names and rooms as everywhere, identities as `MediaIdentity.validate()`,
/// fingerprints as 64 lowercase hex digits, stream numbers 1 … 2^31 − 1, at most
/// `SharedMedia.maxPerRoom` offers; anything else is a `protocol-violation`.
///
/// Threading: pure functions.

extension SharedMedia {
    var json: JSONValue {
        var object: [String: JSONValue] = ["by": .string(by), "file": file.playlistJSON]
        if let activity { object["activity"] = .number(Double(activity)) }
        return .object(object)
    }

    init(wire reader: WireReader) throws(CowatchError) {
        guard let file = try reader.optionalObject("file") else { throw WireReader.violation("a shared file needs a \"file\"") }
        self.init(
            by: try reader.name("by", maxLength: ParticipantName.maxLength), file: try MediaIdentity(playlistWire: file),
            activity: try reader.optionalInteger("activity"))
    }
}

extension StreamReport {
    /// Bytes ahead and a rate: up to a terabyte (a film's size at most), seconds up to a day.
    var json: JSONValue {
        var object: [String: JSONValue] = [
            "from": .string(from), "ahead": .number(Double(aheadBytes)), "rate": .number(rate.isFinite ? rate : 0),
        ]
        if let aheadSeconds, aheadSeconds.isFinite { object["ahead_seconds"] = .number(aheadSeconds) }
        return .object(object)
    }

    init(wire reader: WireReader) throws(CowatchError) {
        let ahead = try reader.integer("ahead")
        guard (0...MediaIdentity.maxSize).contains(ahead) else { throw WireReader.violation("\"ahead\" is past any file") }
        self.init(
            from: try reader.name("from", maxLength: ParticipantName.maxLength), aheadBytes: ahead,
            aheadSeconds: try reader.optionalNumber("ahead_seconds", range: 0...86_400),
            rate: try reader.optionalNumber("rate", range: 0...1e12) ?? 0)
    }
}

extension ClientMessage {
    /// The stream's client messages as JSON (nil for the others).
    var streamJSON: JSONValue? {
        switch self {
        case .share(let file, let activity):
            var object: [String: JSONValue] = ["type": "share", "file": file.playlistJSON]
            if let activity { object["activity"] = .number(Double(activity)) }
            return .object(object)
        case .unshare(let fingerprint):
            var object: [String: JSONValue] = ["type": "unshare"]
            if let fingerprint { object["fingerprint"] = .string(fingerprint) }
            return .object(object)
        case .stream(let request):
            return [
                "type": "stream", "room": .string(request.room), "name": .string(request.name), "token": .string(request.token),
                "from": .string(request.from), "fingerprint": .string(request.fingerprint),
            ]
        case .streamServe(let serve):
            return [
                "type": "stream_serve", "room": .string(serve.room), "name": .string(serve.name), "token": .string(serve.token),
                "stream": .number(Double(serve.stream)),
            ]
        case .streamStatus(let report):
            var object: [String: JSONValue] = ["type": "stream_status"]
            if let report { object["stream"] = report.json }
            return .object(object)
        default:
            return nil
        }
    }

    /// Decodes a stream client message of type `type` (nil when `type` is not one).
    static func stream(type: String, _ reader: WireReader) throws(CowatchError) -> ClientMessage? {
        switch type {
        case "share":
            guard let file = try reader.optionalObject("file") else { throw WireReader.violation("share needs a \"file\"") }
            return .share(try MediaIdentity(playlistWire: file), activity: try reader.optionalInteger("activity"))
        case "unshare":
            return .unshare(fingerprint: try reader.optionalHex("fingerprint", bytes: 32))
        case "stream":
            return .stream(StreamRequest(
                room: try reader.name("room", maxLength: 64), name: try reader.name("name", maxLength: ParticipantName.maxLength),
                token: try reader.token("token"), from: try reader.name("from", maxLength: ParticipantName.maxLength),
                fingerprint: try reader.hex("fingerprint", bytes: 32)))
        case "stream_serve":
            return .streamServe(StreamServe(
                room: try reader.name("room", maxLength: 64), name: try reader.name("name", maxLength: ParticipantName.maxLength),
                token: try reader.token("token"), stream: try reader.streamNumber("stream")))
        case "stream_status":
            return .streamStatus(try reader.optionalObject("stream").map { reader throws(CowatchError) in try StreamReport(wire: reader) })
        default:
            return nil
        }
    }
}

extension ServerMessage {
    /// The stream's server messages as JSON (nil for the others).
    var streamJSON: JSONValue? {
        switch self {
        case .shares(let shares):
            return ["type": "shares", "shares": .array(shares.map(\.json))]
        case .streamWanted(let stream, let fingerprint, let receiver):
            return [
                "type": "stream_wanted", "stream": .number(Double(stream)), "fingerprint": .string(fingerprint),
                "for": .string(receiver),
            ]
        case .streamReady(let size):
            return ["type": "stream_ready", "size": .number(Double(size))]
        default:
            return nil
        }
    }

    /// Decodes a stream server message of type `type` (nil when `type` is not one).
    static func stream(type: String, _ reader: WireReader) throws(CowatchError) -> ServerMessage? {
        switch type {
        case "shares":
            guard let list = reader.raw("shares")?.arrayValue, list.count <= SharedMedia.maxPerRoom else {
                throw WireReader.violation("shares needs a list of at most \(SharedMedia.maxPerRoom)")
            }
            var shares: [SharedMedia] = []
            for item in list { shares.append(try SharedMedia(wire: try WireReader(object: item))) }
            return .shares(shares)
        case "stream_wanted":
            return .streamWanted(
                stream: try reader.streamNumber("stream"), fingerprint: try reader.hex("fingerprint", bytes: 32),
                for: try reader.name("for", maxLength: ParticipantName.maxLength))
        case "stream_ready":
            let size = try reader.integer("size")
            guard (0...MediaIdentity.maxSize).contains(size) else { throw WireReader.violation("\"size\" is past any file") }
            return .streamReady(size: size)
        default:
            return nil
        }
    }
}

extension WireReader {
    /// A stream's number: 1 … `wireMaxRequestID`.
    func streamNumber(_ key: String) throws(CowatchError) -> Int {
        let number = try integer(key)
        guard (1...wireMaxRequestID).contains(number) else { throw Self.violation("\"\(key)\" must be 1–\(wireMaxRequestID)") }
        return number
    }
}
