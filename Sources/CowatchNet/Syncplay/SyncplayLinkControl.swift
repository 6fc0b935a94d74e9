import CowatchCore
import NIOConcurrencyHelpers

/// What outlives one connection of a daemon's Syncplay link, and the way in to the connection
/// that is up: the managed room this daemon made (a reconnect joins it and claims control with
/// its password, both kept here, in memory only), and `manage` for the control socket.
///
/// Threading: any task; the state is behind a lock. Errors: see `manage`.
public final class SyncplayLinkControl: Sendable {
    typealias Answer = Reply<Result<SyncplayControlledRoom, CowatchError>>

    private struct State {
        var made: SyncplayControlledRoom?
        /// Hands a request to the live connection's driver; nil while none is up.
        var inbox: (@Sendable (SyncplayLink.Event) -> Bool)?
    }

    private let state = NIOLockedValueBox(State())

    public init() {}

    /// The managed room this daemon made, if it made one: where reconnects go.
    public var madeRoom: SyncplayControlledRoom? { state.withLockedValue { $0.made } }

    /// Make the Syncplay room managed with `password` (see `SyncplayBridge.manage`) and wait up to
    /// `timeout` seconds for the server to say we control it. Errors: `not-in-room` (no connection
    /// up, or it ended first), `timeout`, and the bridge's (`not-permitted`, `unsupported`,
    /// `invalid-argument`).
    public func manage(password: String, timeout: Double) async throws(CowatchError) -> SyncplayControlledRoom {
        let answer = Answer()
        let inbox = state.withLockedValue { $0.inbox }
        guard let inbox, inbox(.manage(password: password, answer: answer)) else {
            throw .syncplayNotConnected()
        }
        return try await answer.wait(timeout: timeout, orElse: .failure(.syncplayManageTimedOut(after: timeout))).get()
    }

    func remember(_ made: SyncplayControlledRoom) {
        state.withLockedValue { $0.made = made }
    }

    func attach(_ inbox: @escaping @Sendable (SyncplayLink.Event) -> Bool) {
        state.withLockedValue { $0.inbox = inbox }
    }

    func detach() {
        state.withLockedValue { $0.inbox = nil }
    }

    /// The client settings of the next connection: the room this daemon made, when it made one.
    func configuration(_ base: SyncplayClient.Configuration) -> SyncplayClient.Configuration {
        guard let made = madeRoom else { return base }
        var configuration = base
        configuration.room = made.room + ":" + made.password
        return configuration
    }
}
