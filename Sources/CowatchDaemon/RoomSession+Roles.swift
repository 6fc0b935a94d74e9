import CowatchClient
import CowatchCore
import CowatchNet

/// `end`, `op`, `deop` and `kick`: requests the server answers without an action id.
///
/// The server handles a connection's messages in order and answers each of these exactly once:
/// with the notice it broadcasts (`op`, `deop`, `kick`; the actor is us), with `ended` (`end`),
/// or with a `refused` that carries no id. So a notice settles the first request it matches,
/// and a refusal without an id settles the oldest request still open. A request whose caller
/// stopped waiting (timeout) stays in the queue as a tombstone until its answer comes, so a
/// late answer never settles a newer request; the queue is emptied when the connection ends.
///
/// Threading: actor-isolated to `RoomSession`.
extension RoomSession {
    struct ServerRequest {
        enum Kind: Equatable {
            case end
            case role(name: String, role: Role)
            case kick(name: String)
        }

        let id: Int
        let kind: Kind
        /// Resolved when answered, or when the caller stopped waiting (a tombstone then).
        let reply: Reply<CowatchError?>

        /// True when `notice`, from `me`, is this request's outcome.
        func isAnswered(by notice: Notice, me: String) -> Bool {
            guard notice.actor == me else { return false }
            switch kind {
            case .end: return false
            case .role(let name, let role):
                return notice.action == (role == .operator ? .op : .deop) && notice.others?.contains(name) == true
            case .kick(let name):
                return notice.action == .kick && notice.others?.contains(name) == true
            }
        }
    }

    /// `op NAME` / `deop NAME`: owner only. Returns once the server announced it.
    /// Errors: `not-in-room`, `not-permitted` (not the owner), `timeout`.
    func setRole(of name: String, to role: Role, timeout: Double) async throws(CowatchError) {
        try await serverRequest(.role(name: name, role: role), message: .role(name: name, role: role), timeout: timeout)
    }

    /// `kick NAME`: owners and operators. Returns once the server announced it.
    /// Errors: `not-in-room`, `not-permitted`, `invalid-argument` (nobody of that name), `timeout`.
    func kick(_ name: String, timeout: Double) async throws(CowatchError) {
        guard name != configuration.name else {
            throw CowatchError(.invalidArgument, "use leave to leave the room yourself")
        }
        try await serverRequest(.kick(name: name), message: .kick(name: name), timeout: timeout)
    }

    /// `end`: ends the activity for everyone; returns once the session ended.
    /// Errors: `not-in-room`, `not-permitted` (at once, when the server refuses), `timeout`.
    func end(timeout: Double) async throws(CowatchError) {
        let deadline = monotonicNow() + timeout
        try await serverRequest(.end, message: .end, timeout: timeout)
        try await waitForSession(timeout: max(0.1, deadline - monotonicNow())) {
            if case .invalidated(.endedBy) = $0 { true } else { false }
        }
    }

    private func serverRequest(_ kind: ServerRequest.Kind, message: ClientMessage, timeout: Double) async throws(CowatchError) {
        guard isJoined, let send else {
            throw CowatchError(.notInRoom, "not in the room (\(machine.state.name))")
        }
        nextServerRequestID += 1
        let reply = Reply<CowatchError?>()
        serverRequests.append(ServerRequest(id: nextServerRequestID, kind: kind, reply: reply))
        send(message)
        if let outcome = await reply.wait(
            timeout: timeout, orElse: CowatchError(.timeout, "the room server did not answer in time"))
        {
            throw outcome
        }
    }

    /// A notice: settles the first open request it answers.
    func serverRequestAnswered(by notice: Notice) {
        guard let index = serverRequests.firstIndex(where: { $0.isAnswered(by: notice, me: configuration.name) }) else {
            return
        }
        serverRequests.remove(at: index).reply.resume(nil)
    }

    /// The room ended: every `end` succeeded (whoever's came first).
    func serverRequestsEnded() {
        for request in serverRequests where request.kind == .end { request.reply.resume(nil) }
        serverRequests.removeAll { $0.kind == .end }
    }

    /// A refusal without an action id: settles the oldest request.
    func serverRequestRefused(_ error: CowatchError) {
        guard !serverRequests.isEmpty else { return }
        serverRequests.removeFirst().reply.resume(error)
    }

    /// The connection ended: nothing more will be answered.
    func failServerRequests(_ error: CowatchError) {
        for request in serverRequests { request.reply.resume(error) }
        serverRequests = []
    }
}
