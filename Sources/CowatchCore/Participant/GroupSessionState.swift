/// Why a session is over, as in GroupActivities' `GroupSession.State.invalidated(reason:)`.
///
/// `code` is stable (the `reason` of `get_status` and of `session` events).
public enum SessionEndReason: Sendable, Hashable {
    /// This participant left (`cowatch leave`); the others carry on.
    case left
    /// A participant ended the activity for everyone (`cowatch end`).
    case endedBy(String)
    /// The server put this participant out (the code says why: `kicked`, `flooding`, `protocol-violation`, …).
    case removed(CowatchError.Code)
    /// The connection to the room server was lost; the daemon reconnects by itself.
    case serverGone
    /// The server refused the hello: `auth-failed`, `name-taken`, `room-full`, `unsupported-version`.
    /// At first start these stop the daemon; after it has been in the room, `name-taken` and
    /// `room-full` leave it out until `join`.
    case refused(CowatchError.Code)

    /// The stable reason code.
    public var code: String {
        switch self {
        case .left: "left"
        case .endedBy: "ended-by"
        case .removed: "removed"
        case .serverGone: "server-gone"
        case .refused(let code): code.rawValue
        }
    }

    /// Who ended it, or why the server removed us.
    public var detail: String? {
        switch self {
        case .endedBy(let name): name
        case .removed(let code): code.rawValue
        default: nil
        }
    }

    /// Refusals that an automatic retry cannot fix: the daemon stays out of the room (player open)
    /// rather than knocking again; only those that nothing but a restart can fix stop it, and only
    /// on its first join.
    public static let fatalCodes: Set<CowatchError.Code> = [
        .nameTaken, .unsupportedVersion, .authFailed, .roomFull, .certificateMismatch, .unsafePath, .invalidInvite, .keyNotPinned,
    ]
    /// Of those, the ones that may pass, first join or not: someone else holds the name (they may
    /// leave, or its hold may lapse), the room is full, or the room of that name has another
    /// secret (someone else's room, which may end; or a mistyped secret). The daemon stays up, out
    /// of the room, says how to get in, and `join` tries again.
    public static let retryableCodes: Set<CowatchError.Code> = [.nameTaken, .roomFull, .authFailed]
}

/// A daemon's session in its room: `waiting` → `joined` → `invalidated(reason)`.
public enum SessionState: Sendable, Hashable {
    /// Connecting, or connected and not yet welcomed.
    case waiting
    case joined
    case invalidated(SessionEndReason)

    /// `waiting`, `joined` or `invalidated`.
    public var name: String {
        switch self {
        case .waiting: "waiting"
        case .joined: "joined"
        case .invalidated: "invalidated"
        }
    }

    public var reason: SessionEndReason? {
        if case .invalidated(let reason) = self { reason } else { nil }
    }
}
