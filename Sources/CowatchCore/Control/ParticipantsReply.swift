/// `get_participants`'s reply: everyone in the room as this daemon last heard of them, as a
/// JSON array of objects (`name`, `state`, `drift`, `rtt`, `ready`, `wait_for_me`, `stall`,
/// `role`, `you: true` on this daemon's own entry, and `stream` — `from`, `ahead_bytes`,
/// `ahead_seconds`, `rate` — for one that plays a film streamed from a member).
///
/// `json` and `init(json:)` are its one codec. Labels whose set may grow in a newer daemon
/// (`state`, `stall`, `role`) are kept as the strings sent.
///
/// Threading: a value type, safe to share.
/// Errors: the decoder throws `malformed-control-message` (see `ControlFields`).
public struct ParticipantsReply: ControlReplyData {
    /// A film stream a participant plays, as it last told the room.
    public struct Stream: Sendable, Hashable {
        /// The sharer.
        public var from: String
        /// Bytes received ahead of its player, without a gap.
        public var aheadBytes: Int
        /// The same in seconds of the film (with its player's own cache), when known.
        public var aheadSeconds: Double?
        /// Bytes a second arriving lately.
        public var rate: Double

        public init(from: String, aheadBytes: Int, aheadSeconds: Double?, rate: Double) {
            self.from = from
            self.aheadBytes = aheadBytes
            self.aheadSeconds = aheadSeconds
            self.rate = rate
        }

        public var json: JSONValue {
            [
                "from": .string(from), "ahead_bytes": .number(Double(aheadBytes)), "ahead_seconds": .finite(aheadSeconds),
                "rate": .finite(rate),
            ]
        }

        public init(_ fields: ControlFields) throws(CowatchError) {
            from = try fields.string("from")
            aheadBytes = Int(try fields.optionalNumber("ahead_bytes") ?? 0)
            aheadSeconds = try fields.optionalNumber("ahead_seconds")
            rate = try fields.optionalNumber("rate") ?? 0
        }
    }

    /// One participant.
    public struct Entry: Sendable, Hashable {
        public var name: String
        /// `joined`, `landed`, `silent`, …
        public var state: String
        /// Its last reported error against the timeline, seconds (positive = ahead); nil before
        /// anything was measured.
        public var drift: Double?
        /// Its last round trip to the server, seconds; nil when unknown.
        public var rtt: Double?
        public var ready: Bool
        public var waitForMe: Bool
        /// Why it holds the group (`buffering`, …), or nil.
        public var stall: String?
        /// `owner`, `operator` or `member`.
        public var role: String
        /// True on this daemon's own entry.
        public var you: Bool
        /// The film stream it plays, when it plays one.
        public var stream: Stream?

        public init(
            name: String, state: String, drift: Double? = nil, rtt: Double? = nil, ready: Bool = false,
            waitForMe: Bool = true, stall: String? = nil, role: String = "member", you: Bool = false, stream: Stream? = nil
        ) {
            self.name = name
            self.state = state
            self.drift = drift
            self.rtt = rtt
            self.ready = ready
            self.waitForMe = waitForMe
            self.stall = stall
            self.role = role
            self.you = you
            self.stream = stream
        }

        public var json: JSONValue {
            var object: [String: JSONValue] = [
                "name": .string(name), "state": .string(state), "drift": .finite(drift), "rtt": .finite(rtt),
                "ready": .bool(ready), "wait_for_me": .bool(waitForMe), "stall": stall.map(JSONValue.string) ?? .null,
                "role": .string(role),
            ]
            if you { object["you"] = true }
            if let stream { object["stream"] = stream.json }
            return .object(object)
        }

        public init(_ fields: ControlFields) throws(CowatchError) {
            name = try fields.string("name")
            state = try fields.string("state")
            drift = try fields.optionalNumber("drift")
            rtt = try fields.optionalNumber("rtt")
            ready = try fields.optionalBool("ready") ?? false
            waitForMe = try fields.optionalBool("wait_for_me") ?? true
            stall = try fields.optionalString("stall")
            role = try fields.optionalString("role") ?? "member"
            you = try fields.optionalBool("you") ?? false
            stream = try fields.optionalObject("stream", what: "a participant's stream").map(Stream.init)
        }
    }

    /// In the daemon's order.
    public var participants: [Entry]

    public init(participants: [Entry]) {
        self.participants = participants
    }

    public var json: JSONValue { .array(participants.map(\.json)) }

    public init(json: JSONValue) throws(CowatchError) {
        var participants: [Entry] = []
        for fields in try ControlFields.list(json, what: "the get_participants reply") {
            participants.append(try Entry(fields))
        }
        self.participants = participants
    }
}
