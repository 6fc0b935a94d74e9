import CowatchCore
import CowatchNet

/// `end`, `op`, `deop` and `kick`: requests the server answers once, to us alone. The coordinator
/// gives each an id and tells which answer settles it (by the id with a server that speaks
/// `request-ids`, in order with an older one: `RoomRequestTracker`); they wait in `pending`.
///
/// Threading: actor-isolated to `RoomSession`.
extension RoomSession {
    /// `op NAME` / `deop NAME`: owner only. Returns once the server carried it out.
    /// Errors: `not-in-room`, `not-permitted` (not the owner), `invalid-argument` (nobody of that
    /// name), `rate-limited`, `timeout`.
    func setRole(of name: String, to role: Role, timeout: Double) async throws(CowatchError) {
        try await serverRequest(.role(name: name, role: role), kind: .role, timeout: timeout)
    }

    /// `kick NAME`: owners and operators. Returns once the server carried it out.
    /// Errors: `not-in-room`, `not-permitted`, `invalid-argument` (nobody of that name, or
    /// ourselves), `rate-limited`, `timeout`.
    func kick(_ name: String, timeout: Double) async throws(CowatchError) {
        guard name != configuration.name else {
            throw CowatchError(.invalidArgument, "use leave to leave the room yourself")
        }
        try await serverRequest(.kick(name: name), kind: .kick, timeout: timeout)
    }

    /// `end`: ends the activity for everyone; returns once the session ended.
    /// Errors: `not-in-room`, `not-permitted` (at once, when the server refuses), `rate-limited`,
    /// `timeout`.
    func end(timeout: Double) async throws(CowatchError) {
        let deadline = clock.now() + timeout
        try await serverRequest(.end, kind: .end, timeout: timeout)
        try await waitForSession(timeout: max(0.1, deadline - clock.now())) {
            if case .invalidated(.endedBy) = $0 { true } else { false }
        }
    }

    private func serverRequest(
        _ request: RoomRequestTracker.Kind, kind: PendingRequests.Kind, timeout: Double
    ) async throws(CowatchError) {
        guard isJoined, link != nil else {
            throw CowatchError(.notInRoom, "not in the room (\(machine.state.name))")
        }
        let asked = coordinator.ask(request)
        try await awaitAnswer(
            asked.id, kind: kind, sending: asked.actions, timeout: timeout,
            timedOut: CowatchError(.timeout, "the room server did not answer in time"))
    }
}
