/// `get_invite`'s reply: `invite`, the link, and when hosting `reachability`, whether friends
/// can reach this host.
///
/// `json` and `init(json:)` are its one codec.
///
/// Threading: a value type, safe to share.
/// Errors: the decoder throws `malformed-control-message` (see `ControlFields`).
public struct InviteReply: ControlReplyData {
    /// The invite link (`Invite.text`); it holds the room secret.
    public var invite: String
    /// Only when hosting.
    public var reachability: ReachabilityStatus?

    public init(invite: String, reachability: ReachabilityStatus? = nil) {
        self.invite = invite
        self.reachability = reachability
    }

    public var json: JSONValue {
        var object: [String: JSONValue] = ["invite": .string(invite)]
        if let reachability { object["reachability"] = reachability.json }
        return .object(object)
    }

    public init(json: JSONValue) throws(CowatchError) {
        let fields = try ControlFields(json, what: "the get_invite reply")
        invite = try fields.string("invite")
        reachability = try fields.optionalObject("reachability", what: "the get_invite reply's reachability")
            .map(ReachabilityStatus.init)
    }
}
