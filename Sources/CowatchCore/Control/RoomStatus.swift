/// The `room` section of `get_status`: this daemon's room, session, activity and standing.
///
/// `json` and `init(_:)` are its one codec (the keys are documented in `man/cowatch-protocol.7`).
/// Labels whose set may grow in a newer daemon (`session`, `reason`, `role`, `stall`) are kept
/// as the strings sent.
///
/// Threading: a value type, safe to share.
/// Errors: the decoder throws `malformed-control-message` (see `ControlFields`).
public struct RoomStatus: Sendable, Hashable {
    /// The room's name.
    public var room: String
    /// The server, `host:port`.
    public var server: String
    /// `waiting`, `joined` or `invalidated` (`SessionState.name`).
    public var session: String
    /// Why the session is invalidated (`SessionEndReason.code`), or nil.
    public var reason: String?
    /// Who ended the activity, when `reason` is `ended-by`.
    public var endedBy: String?
    public var participants: Int
    /// The sequence number of the room's current timeline.
    public var seq: Int
    public var activity: Activity
    public var policy: Policy
    /// What the room is told (as in `get_participants`).
    public var ready: Bool
    public var waitForMe: Bool
    /// The person's own choice, kept while this player cannot play.
    public var waitForMeSetting: Bool
    public var canPlay: Bool
    /// Why the server cannot be reached, while that is so.
    public var lastError: CowatchError?
    /// `owner`, `operator` or `member`.
    public var role: String
    public var managed: Bool
    public var openOffer: OpenOffer?
    /// Why this player holds the group (`buffering`, …), or nil.
    public var stall: String?
    /// Who is stalled and asks to be waited for.
    public var waitingFor: [String]
    /// Whether friends can reach this host (only when hosting).
    public var reachability: ReachabilityStatus?

    /// The room's current activity.
    public struct Activity: Sendable, Hashable {
        public var id: Int
        public var url: String
        public var title: String
        /// `watch` or `listen`.
        public var type: String
        public var fallbackURL: String?
        public var openedBy: String?
        /// The URL this player is loading, while it loads.
        public var loading: String?

        public init(
            id: Int, url: String, title: String, type: String, fallbackURL: String? = nil, openedBy: String? = nil,
            loading: String? = nil
        ) {
            self.id = id
            self.url = url
            self.title = title
            self.type = type
            self.fallbackURL = fallbackURL
            self.openedBy = openedBy
            self.loading = loading
        }
    }

    /// The room's policy, as the server's welcome gave it.
    public typealias Policy = RoomPolicy

    public init(
        room: String, server: String, session: String, reason: String? = nil, endedBy: String? = nil,
        participants: Int, seq: Int, activity: Activity, policy: Policy, ready: Bool, waitForMe: Bool,
        waitForMeSetting: Bool, canPlay: Bool, lastError: CowatchError? = nil, role: String, managed: Bool,
        openOffer: OpenOffer? = nil, stall: String? = nil, waitingFor: [String] = [], reachability: ReachabilityStatus? = nil
    ) {
        self.room = room
        self.server = server
        self.session = session
        self.reason = reason
        self.endedBy = endedBy
        self.participants = participants
        self.seq = seq
        self.activity = activity
        self.policy = policy
        self.ready = ready
        self.waitForMe = waitForMe
        self.waitForMeSetting = waitForMeSetting
        self.canPlay = canPlay
        self.lastError = lastError
        self.role = role
        self.managed = managed
        self.openOffer = openOffer
        self.stall = stall
        self.waitingFor = waitingFor
        self.reachability = reachability
    }

    // MARK: Codec

    public var json: JSONValue {
        var activityJSON: [String: JSONValue] = [
            "id": .count(activity.id), "url": .string(activity.url), "title": .string(activity.title),
            "type": .string(activity.type), "fallback_url": activity.fallbackURL.map(JSONValue.string) ?? .null,
            "opened_by": activity.openedBy.map(JSONValue.string) ?? .null,
        ]
        if let loading = activity.loading { activityJSON["loading"] = .string(loading) }
        var object: [String: JSONValue] = [
            "room": .string(room), "server": .string(server), "session": .string(session),
            "reason": reason.map(JSONValue.string) ?? .null, "participants": .count(participants), "seq": .count(seq),
            "activity": .object(activityJSON),
            "policy": [
                "play_when_ready": .bool(policy.playWhenReady), "wait_timeout": .number(policy.waitTimeout),
                "managed": .bool(policy.managed),
            ],
            "ready": .bool(ready), "wait_for_me": .bool(waitForMe), "wait_for_me_setting": .bool(waitForMeSetting),
            "can_play": .bool(canPlay),
            "last_error": lastError.map { ["code": .string($0.code.rawValue), "message": .string($0.message)] } ?? .null,
            "role": .string(role), "managed": .bool(managed), "open_offer": openOffer?.json ?? .null,
            "stall": stall.map(JSONValue.string) ?? .null, "waiting_for": .array(waitingFor.map(JSONValue.string)),
        ]
        if let endedBy { object["ended_by"] = .string(endedBy) }
        if let reachability { object["reachability"] = reachability.json }
        return .object(object)
    }

    public init(_ fields: ControlFields) throws(CowatchError) {
        room = try fields.string("room")
        server = try fields.string("server")
        session = try fields.string("session")
        reason = try fields.optionalString("reason")
        endedBy = try fields.optionalString("ended_by")
        participants = try fields.optionalCount("participants") ?? 0
        seq = try fields.optionalCount("seq") ?? 0
        let activityFields = try fields.object("activity", what: "the room status's activity")
        activity = Activity(
            id: try activityFields.count("id"), url: try activityFields.string("url"),
            title: try activityFields.string("title"), type: try activityFields.optionalString("type") ?? "watch",
            fallbackURL: try activityFields.optionalString("fallback_url"),
            openedBy: try activityFields.optionalString("opened_by"), loading: try activityFields.optionalString("loading"))
        let policyFields = try fields.optionalObject("policy", what: "the room status's policy")
        policy = Policy(
            playWhenReady: try policyFields?.optionalBool("play_when_ready") ?? false,
            waitTimeout: try policyFields?.optionalNumber("wait_timeout") ?? 0,
            managed: try policyFields?.optionalBool("managed") ?? false)
        ready = try fields.optionalBool("ready") ?? false
        waitForMe = try fields.optionalBool("wait_for_me") ?? true
        waitForMeSetting = try fields.optionalBool("wait_for_me_setting") ?? waitForMe
        canPlay = try fields.optionalBool("can_play") ?? true
        lastError = try fields.optionalObject("last_error", what: "the room status's last_error")?.error()
        role = try fields.optionalString("role") ?? "member"
        managed = try fields.optionalBool("managed") ?? false
        openOffer = try fields.optionalObject("open_offer", what: "the room status's open_offer").map(OpenOffer.init)
        stall = try fields.optionalString("stall")
        waitingFor = try fields.optionalStrings("waiting_for") ?? []
        reachability = try fields.optionalObject("reachability", what: "the room status's reachability")
            .map(ReachabilityStatus.init)
    }

    /// Reads a `room` section. Errors: `malformed-control-message`.
    public init(json: JSONValue) throws(CowatchError) {
        try self.init(ControlFields(json, what: "the room status"))
    }
}
