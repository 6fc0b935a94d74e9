/// Every message of the room protocol, in one place.
///
/// Framing: one JSON object per line (UTF-8, `\n`-terminated), at most `wireMaxLineBytes` bytes.
/// Every object has a `"type"`. Numbers must be finite, names and strings bounded; anything else
/// is a `protocol-violation`. Decoding never traps on peer input.
///
/// The hello carries `protocol` (this file's `wireProtocolVersion`) and an `auth` object that is
/// reserved for room secrets (`{"scheme": "none"}` today), so secrets and TLS can arrive later
/// without a protocol break: a server that requires a scheme answers `auth-failed`.
public let wireProtocolVersion = 1

/// The longest line either side accepts.
public let wireMaxLineBytes = 65_536

/// What a participant can ask the group to do.
public enum ActionKind: String, Sendable, Hashable, CaseIterable {
    case play, pause, seek, speed
}

/// What a notice reports.
public enum NoticeAction: String, Sendable, Hashable, CaseIterable {
    case play, pause, seek, speed, join, leave
}

/// "Who did what", delivered with the timeline it produced (or alone for join and leave).
public struct Notice: Sendable, Hashable {
    public var actor: String
    public var action: NoticeAction
    /// pause/play: where; seek: the target (same as `to`).
    public var position: Double?
    /// seek: where the actor was.
    public var from: Double?
    public var to: Double?
    /// speed: the new rate.
    public var rate: Double?

    public init(actor: String, action: NoticeAction, position: Double? = nil, from: Double? = nil, to: Double? = nil, rate: Double? = nil) {
        self.actor = actor
        self.action = action
        self.position = position
        self.from = from
        self.to = to
        self.rate = rate
    }

    /// The sentence shown to people: "bob paused at 0:42:10".
    public var text: String {
        func at(_ value: Double?) -> String { value.map { MediaTime.format($0) } ?? "?" }
        switch action {
        case .play: return "\(actor) played from \(at(position))"
        case .pause: return "\(actor) paused at \(at(position))"
        case .seek: return "\(actor) jumped from \(at(from)) to \(at(to))"
        case .speed: return "\(actor) set the speed to \(rate.map { Self.rateText($0) } ?? "?")×"
        case .join: return "\(actor) joined"
        case .leave: return "\(actor) left"
        }
    }

    static func rateText(_ rate: Double) -> String {
        let hundredths = Int((rate * 100).rounded())
        let cents = hundredths % 100
        return "\(hundredths / 100)." + (cents < 10 ? "0\(cents)" : "\(cents)")
    }
}

/// What the server knows of one participant.
public struct ParticipantInfo: Sendable, Hashable {
    public var name: String
    /// `joined`, or `ready` when it has landed after the latest seek.
    public var state: String
    /// Its last reported error against the timeline, seconds (positive = ahead).
    public var drift: Double?
    /// Its last reported round trip to the server, seconds.
    public var rtt: Double?

    public init(name: String, state: String, drift: Double? = nil, rtt: Double? = nil) {
        self.name = name
        self.state = state
        self.drift = drift
        self.rtt = rtt
    }
}

/// Sent by a daemon.
public enum ClientMessage: Sendable, Hashable {
    case hello(Hello)
    case timeRequest(id: Int, t1: Double)
    case action(ActionRequest)
    /// Landed on the held position of timeline `seq` and ready to resume.
    case ready(seq: Int)
    case report(drift: Double?, rtt: Double?)
    case bye

    public struct Hello: Sendable, Hashable {
        public var protocolVersion: Int
        public var room: String
        public var name: String
        public var client: String
        /// Reserved for room secrets; `{"scheme": "none"}` today.
        public var auth: JSONValue
        public var mediaTitle: String?
        public var mediaDuration: Double?
        /// Where this participant's group was when its connection dropped: a server that has no
        /// such room (it restarted) starts the room from here instead of from the beginning.
        public var resume: Resume?

        public struct Resume: Sendable, Hashable {
            public var position: Double
            public var playing: Bool
            public var rate: Double
            public init(position: Double, playing: Bool, rate: Double) {
                self.position = position
                self.playing = playing
                self.rate = rate
            }
        }

        public init(
            protocolVersion: Int = wireProtocolVersion, room: String, name: String, client: String = "cowatchd",
            auth: JSONValue = ["scheme": "none"], mediaTitle: String? = nil, mediaDuration: Double? = nil,
            resume: Resume? = nil
        ) {
            self.resume = resume
            self.protocolVersion = protocolVersion
            self.room = room
            self.name = name
            self.client = client
            self.auth = auth
            self.mediaTitle = mediaTitle
            self.mediaDuration = mediaDuration
        }
    }

    public struct ActionRequest: Sendable, Hashable {
        /// Chosen by the client, echoed in the resulting `applied`.
        public var id: Int
        public var kind: ActionKind
        /// pause: the pauser's frame; seek: the target; play: where the actor is (informative).
        public var position: Double?
        /// seek: where the actor was.
        public var from: Double?
        /// speed: the new rate.
        public var rate: Double?

        public init(id: Int, kind: ActionKind, position: Double? = nil, from: Double? = nil, rate: Double? = nil) {
            self.id = id
            self.kind = kind
            self.position = position
            self.from = from
            self.rate = rate
        }
    }
}

/// Sent by the room server.
public enum ServerMessage: Sendable, Hashable {
    case welcome(Welcome)
    case timeReply(id: Int, t1: Double, t2: Double, t3: Double)
    /// A new timeline. `notice` says who did what (nil for the silent resume after a seek);
    /// `actionID` echoes the originator's id so it can tell its own action.
    case applied(timeline: GroupTimeline, notice: Notice?, actionID: Int?)
    /// Join and leave.
    case notice(Notice)
    case participants([ParticipantInfo])
    case error(code: String, message: String)

    public struct Welcome: Sendable, Hashable {
        public var protocolVersion: Int
        public var name: String
        public var room: String
        public var timeline: GroupTimeline
        public var participants: [ParticipantInfo]

        public init(protocolVersion: Int = wireProtocolVersion, name: String, room: String, timeline: GroupTimeline, participants: [ParticipantInfo]) {
            self.protocolVersion = protocolVersion
            self.name = name
            self.room = room
            self.timeline = timeline
            self.participants = participants
        }
    }
}

// MARK: - Encoding

extension ClientMessage {
    public var json: JSONValue {
        switch self {
        case .hello(let hello):
            var object: [String: JSONValue] = [
                "type": "hello", "protocol": .number(Double(hello.protocolVersion)), "room": .string(hello.room),
                "name": .string(hello.name), "client": .string(hello.client), "auth": hello.auth,
            ]
            if let title = hello.mediaTitle { object["media_title"] = .string(title) }
            if let duration = hello.mediaDuration { object["media_duration"] = .finite(duration) }
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
            return .object(object)
        case .ready(let seq):
            return ["type": "ready", "seq": .number(Double(seq))]
        case .report(let drift, let rtt):
            var object: [String: JSONValue] = ["type": "report"]
            if let drift { object["drift"] = .number(drift) }
            if let rtt { object["rtt"] = .number(rtt) }
            return .object(object)
        case .bye:
            return ["type": "bye"]
        }
    }

    public func encoded() -> [UInt8] { json.encoded() + [UInt8(ascii: "\n")] }

    /// Decodes and validates one line. Throws `protocol-violation` (or `invalid-json`).
    public static func decode<Bytes: Collection<UInt8>>(line: Bytes) throws(CowatchError) -> ClientMessage {
        let reader = try WireReader(line: line)
        switch try reader.type() {
        case "hello":
            let version = try reader.integer("protocol")
            let room = try reader.name("room", maxLength: 64)
            let name = try reader.name("name", maxLength: ParticipantName.maxLength)
            let client = try reader.optionalString("client", maxLength: 64) ?? "unknown"
            let auth = reader.raw("auth") ?? ["scheme": "none"]
            guard auth.objectValue != nil, auth.jsonString.utf8.count <= 4096 else {
                throw WireReader.violation("auth must be a small object")
            }
            var resume: Hello.Resume?
            if let raw = reader.raw("resume") {
                let fields = try WireReader(object: raw)
                resume = Hello.Resume(
                    position: try fields.number("position", range: 0...1e7), playing: try fields.bool("playing"),
                    rate: try fields.number("rate", range: ControlCommand.speedRange))
            }
            return .hello(Hello(
                protocolVersion: version, room: room, name: name, client: client, auth: auth,
                mediaTitle: try reader.optionalString("media_title", maxLength: 512),
                mediaDuration: try reader.optionalNumber("media_duration", range: 0...1e7), resume: resume))
        case "time_request":
            return .timeRequest(id: try reader.integer("id"), t1: try reader.number("t1", range: -1e12...1e12))
        case "action":
            let kind = try reader.enumeration("kind", ActionKind.self)
            let action = ActionRequest(
                id: try reader.integer("id"), kind: kind,
                position: try reader.optionalNumber("position", range: 0...1e7),
                from: try reader.optionalNumber("from", range: 0...1e7),
                rate: try reader.optionalNumber("rate", range: ControlCommand.speedRange))
            switch kind {
            case .pause, .seek:
                guard action.position != nil else { throw WireReader.violation("\(kind.rawValue) needs a position") }
            case .speed:
                guard action.rate != nil else { throw WireReader.violation("speed needs a rate") }
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
        case "bye":
            return .bye
        case let other:
            throw WireReader.violation("unknown client message type \"\(other.prefix(32))\"")
        }
    }
}

extension GroupTimeline {
    var json: JSONValue {
        [
            "seq": .number(Double(seq)), "position": .number(position), "reference": .number(reference),
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

extension Notice {
    var json: JSONValue {
        var object: [String: JSONValue] = ["actor": .string(actor), "action": .string(action.rawValue)]
        if let position { object["position"] = .number(position) }
        if let from { object["from"] = .number(from) }
        if let to { object["to"] = .number(to) }
        if let rate { object["rate"] = .number(rate) }
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
            rate: try reader.optionalNumber("rate", range: ControlCommand.speedRange))
    }
}

extension ParticipantInfo {
    var json: JSONValue {
        var object: [String: JSONValue] = ["name": .string(name), "state": .string(state)]
        if let drift { object["drift"] = .number(drift) }
        if let rtt { object["rtt"] = .number(rtt) }
        return .object(object)
    }

    init(wire value: JSONValue) throws(CowatchError) {
        let reader = try WireReader(object: value)
        self.init(
            name: try reader.name("name", maxLength: ParticipantName.maxLength),
            state: try reader.optionalString("state", maxLength: 32) ?? "joined",
            drift: try reader.optionalNumber("drift", range: -1e7...1e7),
            rtt: try reader.optionalNumber("rtt", range: 0...3600))
    }
}

extension ServerMessage {
    public var json: JSONValue {
        switch self {
        case .welcome(let welcome):
            return [
                "type": "welcome", "protocol": .number(Double(welcome.protocolVersion)), "name": .string(welcome.name),
                "room": .string(welcome.room), "timeline": welcome.timeline.json,
                "participants": .array(welcome.participants.map(\.json)),
            ]
        case .timeReply(let id, let t1, let t2, let t3):
            return ["type": "time_reply", "id": .number(Double(id)), "t1": .number(t1), "t2": .number(t2), "t3": .number(t3)]
        case .applied(let timeline, let notice, let actionID):
            var object: [String: JSONValue] = ["type": "applied", "timeline": timeline.json]
            if let notice { object["notice"] = notice.json }
            if let actionID { object["action_id"] = .number(Double(actionID)) }
            return .object(object)
        case .notice(let notice):
            return ["type": "notice", "notice": notice.json]
        case .participants(let list):
            return ["type": "participants", "participants": .array(list.map(\.json))]
        case .error(let code, let message):
            return ["type": "error", "code": .string(code), "message": .string(message)]
        }
    }

    public func encoded() -> [UInt8] { json.encoded() + [UInt8(ascii: "\n")] }

    public static func decode<Bytes: Collection<UInt8>>(line: Bytes) throws(CowatchError) -> ServerMessage {
        let reader = try WireReader(line: line)
        switch try reader.type() {
        case "welcome":
            guard let list = reader.raw("participants")?.arrayValue, list.count <= 1024 else {
                throw WireReader.violation("welcome needs a participants array")
            }
            var participants: [ParticipantInfo] = []
            for entry in list { participants.append(try ParticipantInfo(wire: entry)) }
            return .welcome(Welcome(
                protocolVersion: try reader.integer("protocol"),
                name: try reader.name("name", maxLength: ParticipantName.maxLength),
                room: try reader.name("room", maxLength: 64), timeline: try GroupTimeline(wire: reader.raw("timeline")),
                participants: participants))
        case "time_reply":
            let range = -1e12...1e12
            return .timeReply(
                id: try reader.integer("id"), t1: try reader.number("t1", range: range),
                t2: try reader.number("t2", range: range), t3: try reader.number("t3", range: range))
        case "applied":
            let notice: Notice? = reader.raw("notice") == nil ? nil : try Notice(wire: reader.raw("notice"))
            return .applied(
                timeline: try GroupTimeline(wire: reader.raw("timeline")), notice: notice,
                actionID: try reader.optionalInteger("action_id"))
        case "notice":
            return .notice(try Notice(wire: reader.raw("notice")))
        case "participants":
            guard let list = reader.raw("participants")?.arrayValue, list.count <= 1024 else {
                throw WireReader.violation("participants needs an array")
            }
            var participants: [ParticipantInfo] = []
            for entry in list { participants.append(try ParticipantInfo(wire: entry)) }
            return .participants(participants)
        case "error":
            return .error(
                code: try reader.optionalString("code", maxLength: 64) ?? "unknown",
                message: try reader.optionalString("message", maxLength: 1024) ?? "")
        case let other:
            throw WireReader.violation("unknown server message type \"\(other.prefix(32))\"")
        }
    }
}

// MARK: - Validation

/// Reads fields of one wire object with validation; every failure is a `protocol-violation`.
struct WireReader {
    private let object: [String: JSONValue]

    init<Bytes: Collection<UInt8>>(line: Bytes) throws(CowatchError) {
        guard line.count <= wireMaxLineBytes else { throw Self.violation("line longer than \(wireMaxLineBytes) bytes") }
        let value: JSONValue
        do {
            value = try JSONValue.parse(line)
        } catch {
            throw Self.violation("not JSON")
        }
        try self.init(object: value)
    }

    init(object value: JSONValue) throws(CowatchError) {
        guard let object = value.objectValue else { throw Self.violation("expected a JSON object") }
        self.object = object
    }

    static func violation(_ message: String) -> CowatchError {
        CowatchError(.protocolViolation, message)
    }

    func raw(_ key: String) -> JSONValue? {
        let value = object[key]
        return value == .null ? nil : value
    }

    func type() throws(CowatchError) -> String {
        guard let type = object["type"]?.stringValue, type.utf8.count <= 32 else { throw Self.violation("missing \"type\"") }
        return type
    }

    func number(_ key: String, range: ClosedRange<Double>) throws(CowatchError) -> Double {
        guard let value = try optionalNumber(key, range: range) else { throw Self.violation("missing number \"\(key)\"") }
        return value
    }

    func optionalNumber(_ key: String, range: ClosedRange<Double>) throws(CowatchError) -> Double? {
        guard let raw = raw(key) else { return nil }
        guard let value = raw.numberValue, value.isFinite, range.contains(value) else {
            throw Self.violation("\"\(key)\" must be a finite number in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    func integer(_ key: String) throws(CowatchError) -> Int {
        guard let value = try optionalInteger(key) else { throw Self.violation("missing integer \"\(key)\"") }
        return value
    }

    func optionalInteger(_ key: String) throws(CowatchError) -> Int? {
        guard let value = try optionalNumber(key, range: 0...9.0e15) else { return nil }
        guard value.rounded() == value else { throw Self.violation("\"\(key)\" must be a whole number") }
        return Int(value)
    }

    func bool(_ key: String) throws(CowatchError) -> Bool {
        guard let value = object[key]?.boolValue else { throw Self.violation("\"\(key)\" must be true or false") }
        return value
    }

    func optionalString(_ key: String, maxLength: Int) throws(CowatchError) -> String? {
        guard let raw = raw(key) else { return nil }
        guard let value = raw.stringValue, value.utf8.count <= maxLength else {
            throw Self.violation("\"\(key)\" must be a string of at most \(maxLength) bytes")
        }
        return value
    }

    func name(_ key: String, maxLength: Int) throws(CowatchError) -> String {
        guard let value = try optionalString(key, maxLength: maxLength), (try? ParticipantName.validate(value)) != nil
            || (maxLength > ParticipantName.maxLength && RoomName.isValid(value))
        else {
            throw Self.violation("\"\(key)\" must be 1–\(maxLength) letters, digits, '.', '_' or '-'")
        }
        return value
    }

    func enumeration<E: RawRepresentable<String>>(_ key: String, _ type: E.Type) throws(CowatchError) -> E {
        guard let text = object[key]?.stringValue, let value = E(rawValue: text) else {
            throw Self.violation("\"\(key)\" has an unknown value")
        }
        return value
    }
}
