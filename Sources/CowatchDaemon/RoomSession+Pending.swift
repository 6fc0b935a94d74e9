import CowatchCore
import CowatchNet

/// Waiting for the room server's answer to one of our requests: the one way every request
/// (group actions, chat, detach, reliable messages, end, roles, kick) waits, in `pending`.
///
/// Threading: actor-isolated to `RoomSession`.
extension RoomSession {
    /// Registers request `id`, carries out `actions` (which send it, or refuse it at once), and
    /// returns once the server carried it out. `sent` runs right after the request went out,
    /// before the wait.
    /// Errors: the server's refusal (`not-permitted`, `rate-limited`, …); `timedOut` after
    /// `timeout` seconds or when the control client hangs up; `not-in-room` when the connection
    /// ends first (except for reliable messages, which go again after a reconnect).
    func awaitAnswer(
        _ id: Int, kind: PendingRequests.Kind, sending actions: [RoomCoordinator.Action], timeout: Double,
        timedOut: CowatchError, sent: () -> Void = {}
    ) async throws(CowatchError) {
        let reply = pending.register(id, kind: kind)
        perform(actions)
        sent()
        if let error = await pending.wait(id, reply, timeout: timeout, timedOut: timedOut) { throw error }
    }
}
