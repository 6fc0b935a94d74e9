import CowatchCore

/// How one connection to the room server ended, as the room session's loop needs to know it:
/// the loops of a connection return it (instead of throwing marker errors), and the session
/// turns it into what its `GroupSessionMachine` hears.
enum LinkOutcome: Sendable {
    /// We said bye (`leave`).
    case left
    /// Someone ended the activity for everyone.
    case ended(by: String)
    /// A cluster server does not host the room: the next connection goes to `target`.
    case redirected(Endpoint)
    /// The server refused or removed us, in its own words.
    case refused(CowatchError)
    /// The link failed or dropped (cannot connect, TLS, silence, closed), or was cancelled.
    case lost(any Error)
}
