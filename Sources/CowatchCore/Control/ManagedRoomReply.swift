/// `manage`'s reply: the managed Syncplay room this daemon made (or already controlled) — its
/// name, which others join, and its password, the controllers' secret — and the link a Cowatch
/// viewer joins it with. `json` and `init(json:)` are its one codec.
///
/// The password is a secret: the reply goes only to the control socket's client (a socket only
/// this user may open); the daemon never logs it.
///
/// Threading: a value type, safe to share.
/// Errors: `init(json:)` throws `malformed-control-message` (see `ControlFields`).
public struct ManagedRoomReply: ControlReplyData, CustomStringConvertible {
    /// `+base:HASH`: Syncplay users type it as the room, Cowatch viewers join `link`.
    public var room: String
    /// `AB-123-456`: whoever has it controls the room (a Syncplay user types `room:password`, a
    /// daemon is given it in `--syncplay-room-password-file`).
    public var password: String
    /// `syncplay://HOST:PORT/+base:HASH`, for `cowatchd --join`.
    public var link: String
    /// True when it was made now; false when this daemon already controlled this managed room.
    public var created: Bool

    public init(room: String, password: String, link: String, created: Bool) {
        self.room = room
        self.password = password
        self.link = link
        self.created = created
    }

    public var json: JSONValue {
        ["room": .string(room), "password": .string(password), "link": .string(link), "created": .bool(created)]
    }

    public init(json: JSONValue) throws(CowatchError) {
        let fields = try ControlFields(json, what: "the manage reply")
        room = try fields.string("room")
        password = try fields.string("password")
        link = try fields.string("link")
        created = try fields.bool("created")
    }

    /// Without the password.
    public var description: String { "\(room) (password …, \(created ? "made now" : "already managed"))" }
}

extension CowatchError {
    /// `unsupported`: `manage` in a Cowatch room, which is managed or not from its start.
    public static func manageNeedsSyncplayRoom() -> CowatchError {
        CowatchError(
            .unsupported,
            "a Cowatch room is managed or not from its start (cowatchd --host … --managed, or cowatch-server --managed; its owner names operators with cowatch op): manage makes a Syncplay room managed")
    }
}
