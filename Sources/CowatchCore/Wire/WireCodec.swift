/// The room protocol's codec: every message of `WireMessages.swift` to a line and back.
///
/// Called by the shells (server and client connections), never by the state machines, which
/// see only decoded, validated messages. Decoding never traps on peer input: anything out of
/// bounds is a `protocol-violation`; an unknown message type is `.unknown(type:)`.
///
/// Threading: pure functions.

extension ClientMessage {
    public var json: JSONValue {
        switch self {
        case .hello(let hello):
            var object: [String: JSONValue] = [
                "type": "hello", "protocol": .number(Double(hello.versions.upperBound)),
                "versions": [.number(Double(hello.versions.lowerBound)), .number(Double(hello.versions.upperBound))],
                "features": .array(hello.features.map(JSONValue.string)), "room": .string(hello.room),
                "name": .string(hello.name), "client": .string(hello.client), "nonce": .string(hello.nonce),
                "status": hello.status.json,
            ]
            if let token = hello.token { object["token"] = .string(token) }
            if let activity = hello.activity { object["activity"] = activity.json }
            if let resume = hello.resume {
                object["resume"] = [
                    "position": .number(resume.position), "playing": .bool(resume.playing), "rate": .number(resume.rate),
                ]
            }
            return .object(object)
        case .timeRequest(let id, let t1):
            return ["type": "time_request", "id": .number(Double(id)), "t1": .number(t1)]
        case .action(let action):
            var object: [String: JSONValue] = [
                "type": "action", "id": .number(Double(action.id)), "kind": .string(action.kind.rawValue),
            ]
            if let position = action.position { object["position"] = .number(position) }
            if let from = action.from { object["from"] = .number(from) }
            if let rate = action.rate { object["rate"] = .number(rate) }
            if let activity = action.activity { object["activity"] = activity.json }
            if let deadline = action.deadline { object["deadline"] = .number(deadline) }
            return .object(object)
        case .ready(let seq):
            return ["type": "ready", "seq": .number(Double(seq))]
        case .report(let drift, let rtt):
            var object: [String: JSONValue] = ["type": "report"]
            if let drift { object["drift"] = .number(drift) }
            if let rtt { object["rtt"] = .number(rtt) }
            return .object(object)
        case .status(let status):
            return ["type": "status", "status": status.json]
        case .media(let activity, let info):
            return ["type": "media", "activity": .number(Double(activity)), "media": info.json]
        case .end(let id):
            var object: [String: JSONValue] = ["type": "end"]
            if let id { object["id"] = .number(Double(id)) }
            return .object(object)
        case .bye:
            return ["type": "bye"]
        case .auth(let auth):
            var object: [String: JSONValue] = ["type": "auth"]
            if let proof = auth.proof { object["proof"] = .string(proof) }
            if let create = auth.create { object["create"] = ["salt": .string(create.salt), "key": .string(create.key)] }
            return .object(object)
        case .role(let name, let role, let id):
            var object: [String: JSONValue] = ["type": "role", "name": .string(name), "role": .string(role.rawValue)]
            if let id { object["id"] = .number(Double(id)) }
            return .object(object)
        case .kick(let name, let id):
            var object: [String: JSONValue] = ["type": "kick", "name": .string(name)]
            if let id { object["id"] = .number(Double(id)) }
            return .object(object)
        case .chat(let id, let text):
            return ["type": "chat", "id": .number(Double(id)), "text": .string(text)]
        case .message(let message):
            return message.json
        case .detach(let id, let attachment):
            return ["type": "detach", "id": .number(Double(id)), "attachment": .string(attachment)]
        case .transfer(let request):
            return request.json
        case .playlistEdit, .playlistHave, .playlistEnded:
            return playlistJSON ?? [:]
        case .share, .unshare, .stream, .streamServe, .streamStatus:
            return streamJSON ?? [:]
        case .unsupported(let type):
            return ["type": "unsupported", "of": .string(type)]
        case .unknown(let type):
            return ["type": .string(type)]
        }
    }

    public func encoded() -> [UInt8] { json.encoded() + [UInt8(ascii: "\n")] }

    /// Decodes and validates one line. Throws `protocol-violation` (or `invalid-json`).
    public static func decode<Bytes: Collection<UInt8>>(line: Bytes) throws(CowatchError) -> ClientMessage {
        let reader = try WireReader(line: line)
        switch try reader.type() {
        case "hello":
            let newest = try reader.integer("protocol")
            // Protocol 2 said only `protocol`; from 3 on, `versions` is the range spoken.
            var versions = newest...newest
            if let range = reader.raw("versions") {
                guard let bounds = range.arrayValue, bounds.count == 2, let low = bounds[0].numberValue,
                    let high = bounds[1].numberValue, low.rounded() == low, high.rounded() == high, 0 <= low, low <= high,
                    high <= 1000
                else { throw WireReader.violation("\"versions\" must be [lowest, highest]") }
                versions = Int(low)...Int(high)
            }
            let room = try reader.name("room", maxLength: 64)
            let name = try reader.name("name", maxLength: ParticipantName.maxLength)
            let client = try reader.optionalText("client", maxLength: 64) ?? "unknown"
            var resume: Hello.Resume?
            if let fields = try reader.optionalObject("resume") {
                resume = Hello.Resume(
                    position: try fields.number("position", range: 0...1e7), playing: try fields.bool("playing"),
                    rate: try fields.number("rate", range: ControlCommand.speedRange))
            }
            return .hello(Hello(
                versions: versions, features: try reader.optionalWords("features") ?? [], room: room, name: name,
                client: client, nonce: try reader.optionalHex("nonce", bytes: 32) ?? "", token: try reader.optionalToken("token"),
                activity: try reader.optionalObject("activity").map { reader throws(CowatchError) in try Activity(wire: reader) },
                status: try reader.optionalObject("status").map { reader throws(CowatchError) in try ParticipantStatus(wire: reader) } ?? .init(),
                resume: resume))
        case "time_request":
            return .timeRequest(id: try reader.integer("id"), t1: try reader.number("t1", range: -1e12...1e12))
        case "action":
            let kind = try reader.enumeration("kind", ActionKind.self)
            let action = ActionRequest(
                id: try reader.integer("id"), kind: kind,
                position: try reader.optionalNumber("position", range: 0...1e7),
                from: try reader.optionalNumber("from", range: 0...1e7),
                rate: try reader.optionalNumber("rate", range: ControlCommand.speedRange),
                activity: try reader.optionalObject("activity").map { reader throws(CowatchError) in try Activity(wire: reader) },
                deadline: try reader.optionalNumber("deadline", range: -1e12...1e12))
            switch kind {
            case .pause, .seek:
                guard action.position != nil else { throw WireReader.violation("\(kind.rawValue) needs a position") }
            case .speed:
                guard action.rate != nil else { throw WireReader.violation("speed needs a rate") }
            case .open:
                guard action.activity != nil else { throw WireReader.violation("open needs an activity") }
            case .play:
                break
            }
            return .action(action)
        case "ready":
            return .ready(seq: try reader.integer("seq"))
        case "report":
            return .report(
                drift: try reader.optionalNumber("drift", range: -1e7...1e7),
                rtt: try reader.optionalNumber("rtt", range: 0...3600))
        case "status":
            guard let fields = try reader.optionalObject("status") else { throw WireReader.violation("status needs a status") }
            return .status(try ParticipantStatus(wire: fields))
        case "media":
            guard let fields = try reader.optionalObject("media") else { throw WireReader.violation("media needs a media object") }
            return .media(activity: try reader.integer("activity"), try MediaInfo(wire: fields))
        case "end":
            return .end(id: try reader.optionalRequestID("id"))
        case "bye":
            return .bye
        case "auth":
            var create: RoomVerifier?
            if let fields = try reader.optionalObject("create") {
                create = RoomVerifier(
                    salt: try fields.hex("salt", bytes: RoomSecret.saltBytes), key: try fields.hex("key", bytes: RoomSecret.keyBytes))
            }
            return .auth(Auth(proof: try reader.optionalHex("proof", bytes: RoomSecret.proofBytes), create: create))
        case "role":
            return .role(
                name: try reader.name("name", maxLength: ParticipantName.maxLength), role: try reader.enumeration("role", Role.self),
                id: try reader.optionalRequestID("id"))
        case "kick":
            return .kick(
                name: try reader.name("name", maxLength: ParticipantName.maxLength), id: try reader.optionalRequestID("id"))
        case "chat":
            return .chat(id: try reader.integer("id"), text: try reader.chatText("text"))
        case "message":
            return .message(try RoomMessage(wire: reader, withSender: false))
        case "detach":
            return .detach(id: try reader.integer("id"), attachment: try reader.hex("attachment", bytes: 32))
        case "transfer":
            return .transfer(try TransferRequest(wire: reader))
        case "unsupported":
            return .unsupported(type: try reader.word("of"))
        case let other:
            if let message = try playlist(type: other, reader) { return message }
            return try stream(type: other, reader) ?? .unknown(type: other)
        }
    }
}

extension GroupTimeline {
    var json: JSONValue {
        [
            // Clamped to what the wire accepts (115 days), so a runaway room cannot make every
            // participant refuse its timeline.
            "seq": .number(Double(seq)), "position": .number(min(max(0, position), 1e7)), "reference": .number(reference),
            "rate": .number(rate), "playing": .bool(playing), "holding": .bool(holding),
        ]
    }

    init(wire value: JSONValue?) throws(CowatchError) {
        guard let value else { throw WireReader.violation("missing timeline") }
        let reader = try WireReader(object: value)
        self.init(
            seq: try reader.integer("seq"), position: try reader.number("position", range: 0...1e7),
            reference: try reader.number("reference", range: -1e12...1e12),
            rate: try reader.number("rate", range: ControlCommand.speedRange), playing: try reader.bool("playing"),
            holding: try reader.bool("holding"))
    }
}

extension Activity {
    var json: JSONValue {
        var object: [String: JSONValue] = ["id": .number(Double(id)), "url": .string(url), "type": .string(type.rawValue)]
        if let title { object["title"] = .string(title) }
        if let fallbackURL { object["fallback_url"] = .string(fallbackURL) }
        if let openedBy { object["opened_by"] = .string(openedBy) }
        return .object(object)
    }

    init(wire reader: WireReader) throws(CowatchError) {
        self.init(
            id: try reader.optionalInteger("id") ?? 0, url: try reader.url("url"),
            title: try reader.optionalText("title", maxLength: Activity.maxTitleBytes),
            type: try reader.raw("type") == nil ? .watch : reader.enumeration("type", ActivityType.self),
            fallbackURL: try reader.optionalURL("fallback_url"),
            openedBy: try reader.raw("opened_by") == nil ? nil : reader.name("opened_by", maxLength: ParticipantName.maxLength))
    }
}

extension MediaInfo {
    var json: JSONValue {
        var object: [String: JSONValue] = [:]
        if let duration { object["duration"] = .number(duration) }
        if let size { object["size"] = .number(Double(size)) }
        if let hash { object["hash"] = .string(hash) }
        return .object(object)
    }

    init(wire reader: WireReader) throws(CowatchError) {
        let hash = try reader.optionalString("hash", maxLength: 128)
        if let hash, !hash.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) {
            throw WireReader.violation("\"hash\" must be lowercase hex")
        }
        self.init(
            duration: try reader.optionalNumber("duration", range: 0...1e7), size: try reader.optionalInteger("size"),
            hash: hash)
    }
}

extension ParticipantStatus {
    var json: JSONValue {
        var object: [String: JSONValue] = ["ready": .bool(ready), "wait_for_me": .bool(waitForMe)]
        if let stall { object["stall"] = .string(stall.rawValue) }
        return .object(object)
    }

    init(wire reader: WireReader) throws(CowatchError) {
        self.init(
            stall: try reader.raw("stall") == nil ? nil : reader.enumeration("stall", StallReason.self),
            ready: try reader.optionalBool("ready") ?? false, waitForMe: try reader.optionalBool("wait_for_me") ?? true)
    }
}

extension RoomPolicy {
    var json: JSONValue {
        ["play_when_ready": .bool(playWhenReady), "wait_timeout": .number(waitTimeout), "managed": .bool(managed)]
    }

    init(wire reader: WireReader) throws(CowatchError) {
        self.init(
            playWhenReady: try reader.optionalBool("play_when_ready") ?? false,
            waitTimeout: try reader.optionalNumber("wait_timeout", range: 0...3600) ?? 5,
            managed: try reader.optionalBool("managed") ?? false)
    }
}

extension Notice {
    var json: JSONValue {
        var object: [String: JSONValue] = ["actor": .string(actor), "action": .string(action.rawValue)]
        if let position { object["position"] = .number(position) }
        if let from { object["from"] = .number(from) }
        if let to { object["to"] = .number(to) }
        if let rate { object["rate"] = .number(rate) }
        if let others { object["others"] = .array(others.map(JSONValue.string)) }
        if let detail { object["detail"] = .string(detail) }
        if let title { object["title"] = .string(title) }
        return .object(object)
    }

    init(wire value: JSONValue?) throws(CowatchError) {
        guard let value else { throw WireReader.violation("missing notice") }
        let reader = try WireReader(object: value)
        self.init(
            actor: try reader.name("actor", maxLength: ParticipantName.maxLength),
            action: try reader.enumeration("action", NoticeAction.self),
            position: try reader.optionalNumber("position", range: 0...1e7),
            from: try reader.optionalNumber("from", range: 0...1e7), to: try reader.optionalNumber("to", range: 0...1e7),
            rate: try reader.optionalNumber("rate", range: ControlCommand.speedRange),
            others: try reader.optionalNames("others"), detail: try reader.optionalText("detail", maxLength: 512),
            title: try reader.optionalText("title", maxLength: 4096))
    }
}

extension ParticipantInfo {
    var json: JSONValue {
        var object: [String: JSONValue] = [
            "name": .string(name), "state": .string(state), "status": status.json, "role": .string(role.rawValue),
        ]
        if let drift { object["drift"] = .number(drift) }
        if let rtt { object["rtt"] = .number(rtt) }
        if let stream { object["stream"] = stream.json }
        return .object(object)
    }

    init(wire value: JSONValue) throws(CowatchError) {
        let reader = try WireReader(object: value)
        self.init(
            name: try reader.name("name", maxLength: ParticipantName.maxLength),
            state: try reader.optionalText("state", maxLength: 32) ?? "joined",
            drift: try reader.optionalNumber("drift", range: -1e7...1e7),
            rtt: try reader.optionalNumber("rtt", range: 0...3600),
            status: try reader.optionalObject("status").map { reader throws(CowatchError) in try ParticipantStatus(wire: reader) } ?? .init(),
            role: try reader.raw("role") == nil ? .member : reader.enumeration("role", Role.self),
            stream: try reader.optionalObject("stream").map { reader throws(CowatchError) in try StreamReport(wire: reader) })
    }
}

extension ServerMessage {
    public var json: JSONValue {
        switch self {
        case .welcome(let welcome):
            var object: [String: JSONValue] = [
                "type": "welcome", "protocol": .number(Double(welcome.protocolVersion)), "name": .string(welcome.name),
                "room": .string(welcome.room), "timeline": welcome.timeline.json,
                "participants": .array(welcome.participants.map(\.json)), "activity": welcome.activity.json,
                "policy": welcome.policy.json, "token": .string(welcome.token), "role": .string(welcome.role.rawValue),
            ]
            if let proof = welcome.proof { object["proof"] = .string(proof) }
            return .object(object)
        case .timeReply(let id, let t1, let t2, let t3):
            return ["type": "time_reply", "id": .number(Double(id)), "t1": .number(t1), "t2": .number(t2), "t3": .number(t3)]
        case .applied(let timeline, let notice, let actionID, let activity):
            var object: [String: JSONValue] = ["type": "applied", "timeline": timeline.json]
            if let notice { object["notice"] = notice.json }
            if let actionID { object["action_id"] = .number(Double(actionID)) }
            if let activity { object["activity"] = activity.json }
            return .object(object)
        case .notice(let notice):
            return ["type": "notice", "notice": notice.json]
        case .participants(let list):
            return ["type": "participants", "participants": .array(list.map(\.json))]
        case .ended(let by):
            return ["type": "ended", "by": .string(by)]
        case .error(let code, let message):
            return ["type": "error", "code": .string(code), "message": .string(message)]
        case .challenge(let challenge):
            var access: [String: JSONValue]
            switch challenge.access {
            case .open: access = ["kind": "open"]
            case .secret(let salt): access = ["kind": "secret", "salt": .string(salt)]
            case .new: access = ["kind": "new"]
            }
            return [
                "type": "challenge", "protocol": .number(Double(challenge.protocolVersion)),
                "features": .array(challenge.features.map(JSONValue.string)), "nonce": .string(challenge.nonce),
                "access": .object(access),
            ]
        case .refused(let actionID, let code, let message):
            var object: [String: JSONValue] = ["type": "refused", "code": .string(code), "message": .string(message)]
            if let actionID { object["action_id"] = .number(Double(actionID)) }
            return .object(object)
        case .done(let id):
            return ["type": "done", "id": .number(Double(id))]
        case .chat(let line):
            var object: [String: JSONValue] = ["type": "chat", "from": .string(line.from), "text": .string(line.text)]
            if let id = line.id { object["id"] = .number(Double(id)) }
            if line.history { object["history"] = true }
            return .object(object)
        case .message(let message):
            return message.json
        case .messageAck(let id, let delivered):
            return ["type": "message_ack", "id": .number(Double(id)), "delivered": .array(delivered.map(JSONValue.string))]
        case .attachmentAdded(let attachment, let history):
            var object = attachment.fields
            object["type"] = "attachment_added"
            if history { object["history"] = true }
            return .object(object)
        case .attachmentRemoved(let id, let by, let requestID):
            var object: [String: JSONValue] = ["type": "attachment_removed", "id": .string(id), "by": .string(by)]
            if let requestID { object["request_id"] = .number(Double(requestID)) }
            return .object(object)
        case .transferReady(let offset, let size):
            return ["type": "transfer_ready", "offset": .number(Double(offset)), "size": .number(Double(size))]
        case .transferDone(let attachment):
            var object = attachment.fields
            object["type"] = "transfer_done"
            return .object(object)
        case .redirect(let room, let target):
            return ["type": "redirect", "room": .string(room), "host": .string(target.host), "port": .number(Double(target.port))]
        case .playlist, .playlistAvailability:
            return playlistJSON ?? [:]
        case .shares, .streamWanted, .streamReady:
            return streamJSON ?? [:]
        case .unsupported(let type):
            return ["type": "unsupported", "of": .string(type)]
        case .unknown(let type):
            return ["type": .string(type)]
        }
    }

    /// One line, newline included: the frequent messages through the hand-written
    /// `WireLineWriter`, the rest through `json` (both give the same bytes).
    public func encoded() -> [UInt8] { fastEncoded() ?? genericEncoded() }

    /// Through `json` and Foundation's encoder, always (the reference the fast path must match).
    public func genericEncoded() -> [UInt8] { json.encoded() + [UInt8(ascii: "\n")] }

    public static func decode<Bytes: Collection<UInt8>>(line: Bytes) throws(CowatchError) -> ServerMessage {
        let reader = try WireReader(line: line)
        switch try reader.type() {
        case "welcome":
            guard let activity = try reader.optionalObject("activity") else { throw WireReader.violation("welcome needs an activity") }
            return .welcome(Welcome(
                protocolVersion: try reader.integer("protocol"),
                name: try reader.name("name", maxLength: ParticipantName.maxLength),
                room: try reader.name("room", maxLength: 64), timeline: try GroupTimeline(wire: reader.raw("timeline")),
                participants: try participants(reader), activity: try Activity(wire: activity),
                policy: try reader.optionalObject("policy").map { reader throws(CowatchError) in try RoomPolicy(wire: reader) } ?? .init(),
                token: try reader.token("token"), role: try reader.enumeration("role", Role.self),
                proof: try reader.optionalHex("proof", bytes: RoomSecret.proofBytes)))
        case "time_reply":
            let range = -1e12...1e12
            return .timeReply(
                id: try reader.integer("id"), t1: try reader.number("t1", range: range),
                t2: try reader.number("t2", range: range), t3: try reader.number("t3", range: range))
        case "applied":
            let notice: Notice? = reader.raw("notice") == nil ? nil : try Notice(wire: reader.raw("notice"))
            return .applied(
                timeline: try GroupTimeline(wire: reader.raw("timeline")), notice: notice,
                actionID: try reader.optionalInteger("action_id"),
                activity: try reader.optionalObject("activity").map { reader throws(CowatchError) in try Activity(wire: reader) })
        case "notice":
            return .notice(try Notice(wire: reader.raw("notice")))
        case "participants":
            return .participants(try participants(reader))
        case "ended":
            return .ended(by: try reader.name("by", maxLength: ParticipantName.maxLength))
        case "error":
            return .error(
                code: try reader.optionalWord("code") ?? "unknown",
                message: try reader.optionalText("message", maxLength: 1024) ?? "")
        case "challenge":
            guard let access = try reader.optionalObject("access") else { throw WireReader.violation("challenge needs access") }
            let guarded: ServerMessage.RoomAccess
            switch try access.word("kind") {
            case "open": guarded = .open
            case "new": guarded = .new
            case "secret": guarded = .secret(salt: try access.hex("salt", bytes: RoomSecret.saltBytes))
            default: throw WireReader.violation("unknown room access")
            }
            return .challenge(Challenge(
                protocolVersion: try reader.integer("protocol"), features: try reader.optionalWords("features") ?? [],
                nonce: try reader.hex("nonce", bytes: 32), access: guarded))
        case "refused":
            return .refused(
                actionID: try reader.optionalInteger("action_id"), code: try reader.optionalWord("code") ?? "unknown",
                message: try reader.optionalText("message", maxLength: 1024) ?? "")
        case "done":
            guard let id = try reader.optionalRequestID("id") else { throw WireReader.violation("done needs an id") }
            return .done(id: id)
        case "chat":
            return .chat(ChatLine(
                from: try reader.name("from", maxLength: ParticipantName.maxLength), text: try reader.chatText("text"),
                id: try reader.optionalInteger("id"), history: try reader.optionalBool("history") ?? false))
        case "message":
            return .message(try RoomMessage(wire: reader, withSender: true))
        case "message_ack":
            return .messageAck(id: try reader.integer("id"), delivered: try reader.optionalNames("delivered") ?? [])
        case "attachment_added":
            return .attachmentAdded(try Attachment(wire: reader), history: try reader.optionalBool("history") ?? false)
        case "attachment_removed":
            return .attachmentRemoved(
                id: try reader.hex("id", bytes: 32), by: try reader.name("by", maxLength: ParticipantName.maxLength),
                requestID: try reader.optionalInteger("request_id"))
        case "transfer_ready":
            let size = try reader.integer("size")
            let offset = try reader.integer("offset")
            guard (0...Attachment.maxBytes).contains(size), (0...size).contains(offset) else {
                throw WireReader.violation("transfer_ready needs 0 <= offset <= size <= \(Attachment.maxBytes)")
            }
            return .transferReady(offset: offset, size: size)
        case "transfer_done":
            return .transferDone(try Attachment(wire: reader))
        case "redirect":
            let room = try reader.name("room", maxLength: 64)
            guard let host = try reader.optionalString("host", maxLength: 253), RoomPlacement.isValid(host: host) else {
                throw WireReader.violation("\"host\" must be a host name or an IP address")
            }
            let port = try reader.integer("port")
            guard (1...65535).contains(port) else { throw WireReader.violation("\"port\" must be 1–65535") }
            return .redirect(room: room, to: Endpoint(host: host, port: port))
        case "unsupported":
            return .unsupported(type: try reader.word("of"))
        case let other:
            if let message = try playlist(type: other, reader) { return message }
            return try stream(type: other, reader) ?? .unknown(type: other)
        }
    }

    private static func participants(_ reader: WireReader) throws(CowatchError) -> [ParticipantInfo] {
        guard let list = reader.raw("participants")?.arrayValue, list.count <= 1024 else {
            throw WireReader.violation("participants needs an array")
        }
        var participants: [ParticipantInfo] = []
        for entry in list { participants.append(try ParticipantInfo(wire: entry)) }
        return participants
    }
}

extension RoomMessage {
    var json: JSONValue {
        var object: [String: JSONValue] = [
            "type": "message", "id": .number(Double(id)), "topic": .string(topic), "payload": .string(payload),
            "reliable": .bool(reliable),
        ]
        if let to { object["to"] = .array(to.map(JSONValue.string)) }
        if let from { object["from"] = .string(from) }
        if let sender { object["sender"] = .string(sender) }
        return .object(object)
    }

    /// From a daemon (`withSender` false: no `from`) or from the server (`from` required).
    init(wire reader: WireReader, withSender: Bool) throws(CowatchError) {
        let topic = try reader.word("topic")
        guard topic.utf8.count <= Self.maxTopicBytes else { throw WireReader.violation("\"topic\" is too long") }
        guard let payload = try reader.optionalString("payload", maxLength: Self.maxPayloadBytes) else {
            throw WireReader.violation("message needs a payload of at most \(Self.maxPayloadBytes) bytes")
        }
        let to = try reader.optionalNames("to")
        guard (to?.count ?? 0) <= 64 else { throw WireReader.violation("a message goes to at most 64 names") }
        self.init(
            id: try reader.integer("id"), topic: topic, payload: payload, reliable: try reader.bool("reliable"), to: to,
            from: withSender ? try reader.name("from", maxLength: ParticipantName.maxLength) : nil,
            sender: withSender ? try reader.optionalHex("sender", bytes: SessionTokens.senderBytes) : nil)
    }
}

extension WireReader {
    /// A chat line: 1–`ChatLine.maxBytes` bytes, without control characters.
    func chatText(_ key: String) throws(CowatchError) -> String {
        guard let text = try optionalText(key, maxLength: ChatLine.maxBytes), !text.isEmpty else {
            throw Self.violation("\"\(key)\" must be 1–\(ChatLine.maxBytes) bytes without control characters")
        }
        return text
    }
}

extension Attachment {
    /// Its fields, without a type (shared by `attachment_added` and `transfer_done`).
    var fields: [String: JSONValue] {
        var object: [String: JSONValue] = [
            "id": .string(id), "name": .string(name), "size": .number(Double(size)), "from": .string(from),
        ]
        if let meta { object["meta"] = meta }
        return object
    }

    init(wire reader: WireReader) throws(CowatchError) {
        let size = try reader.integer("size")
        guard (0...Attachment.maxBytes).contains(size) else { throw WireReader.violation("\"size\" out of range") }
        self.init(
            id: try reader.hex("id", bytes: 32), name: try reader.attachmentName("name"), size: size,
            from: try reader.name("from", maxLength: ParticipantName.maxLength), meta: try reader.attachmentMeta("meta"))
    }
}

extension TransferRequest {
    var json: JSONValue {
        var object: [String: JSONValue] = [
            "type": "transfer", "room": .string(room), "name": .string(name), "token": .string(token),
            "kind": .string(kind.rawValue), "id": .string(id),
        ]
        if let size { object["size"] = .number(Double(size)) }
        if let fileName { object["file"] = .string(fileName) }
        if let meta { object["meta"] = meta }
        if offset != 0 { object["offset"] = .number(Double(offset)) }
        return .object(object)
    }

    init(wire reader: WireReader) throws(CowatchError) {
        let kind = try reader.enumeration("kind", Kind.self)
        let size = try reader.optionalInteger("size")
        let offset = try reader.optionalInteger("offset") ?? 0
        guard (0...Attachment.maxBytes).contains(offset), size.map({ (0...Attachment.maxBytes).contains($0) }) ?? true else {
            throw WireReader.violation("size and offset must be 0–\(Attachment.maxBytes)")
        }
        let fileName = try reader.raw("file") == nil ? nil : reader.attachmentName("file")
        if kind == .upload, size == nil || fileName == nil {
            throw WireReader.violation("an upload needs a size and a file name")
        }
        self.init(
            room: try reader.name("room", maxLength: 64), name: try reader.name("name", maxLength: ParticipantName.maxLength),
            token: try reader.token("token"), kind: kind, id: try reader.hex("id", bytes: 32), size: size,
            fileName: fileName, meta: try reader.attachmentMeta("meta"), offset: offset)
    }
}

extension WireReader {
    /// An attachment's file name; see `AttachmentName.isSafe`.
    func attachmentName(_ key: String) throws(CowatchError) -> String {
        guard let name = try optionalString(key, maxLength: AttachmentName.maxBytes), AttachmentName.isSafe(name) else {
            throw Self.violation("\"\(key)\" must be a file name (no directories or control characters, not starting with '.')")
        }
        return name
    }

    /// An attachment's metadata: a JSON object of at most `Attachment.maxMetaBytes` encoded.
    func attachmentMeta(_ key: String) throws(CowatchError) -> JSONValue? {
        guard let meta = raw(key) else { return nil }
        guard meta.objectValue != nil, meta.encoded().count <= Attachment.maxMetaBytes else {
            throw Self.violation("\"\(key)\" must be a JSON object of at most \(Attachment.maxMetaBytes) bytes")
        }
        return meta
    }
}
