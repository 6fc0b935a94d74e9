import CowatchCore

/// What the control server asks of the daemon: carry out one validated request.
///
/// Threading: called concurrently from many connections' tasks; implementations serialise
/// what needs serialising (the daemon uses an actor).
/// Errors: return `.failure` with a stable code; never throw, never trap on client input.
public protocol ControlRequestHandler: Sendable {
    func handle(_ request: ControlRequest) async -> ControlReply
}
