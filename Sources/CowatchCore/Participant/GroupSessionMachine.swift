/// The lifecycle of a daemon's membership of its room, as a pure state machine.
///
/// The daemon's room loop asks it what to do after each connection ends (`connectionEnded`
/// returns `Next`), and control commands (`leave`, `join`) go through it so every transition is
/// in one place and tested with a manual clock. Transitions:
///
/// - `waiting` → `joined` on the server's welcome;
/// - `joined` → `invalidated(left)` on leave (stay out until join);
/// - any → `invalidated(ended-by X)` when X ends the activity (then keep the player, or quit);
/// - `joined`/`waiting` → `invalidated(server-gone)` when the link drops (reconnect with backoff);
///   before the first welcome the session stays `waiting` (a server never reached is not gone);
/// - `waiting` → `invalidated(name-taken | auth-failed | room-full | unsupported-version)`: stop
///   the daemon, except `name-taken` and `room-full` once this daemon has been in the room
///   (a rejoin or a reconnect): then stay out until join, which may try again;
/// - any → `invalidated(removed)` when the server puts us out (`kicked`, `flooding`, …; stay out
///   until join);
/// - `invalidated(left | ended-by | removed | server-gone | name-taken | room-full)` → `waiting`
///   on join.
///
/// Threading: a value type; one owner.
public struct GroupSessionMachine: Sendable {
    /// What a daemon does when someone ends the activity for everyone.
    public enum OnEnd: String, Sendable, Hashable, CaseIterable {
        /// Keep the player open where it is (`cowatch join` starts a new session). The default.
        case keep
        /// Quit the daemon.
        case quit
    }

    public struct Configuration: Sendable, Equatable {
        public var onEnd: OnEnd
        /// Seconds before the first reconnection attempt; doubles per failure. Default 0.25 s.
        public var initialBackoff: Double
        /// The longest wait between reconnection attempts. Default 2 s.
        public var maxBackoff: Double

        public init(onEnd: OnEnd = .keep, initialBackoff: Double = 0.25, maxBackoff: Double = 2) {
            self.onEnd = onEnd
            self.initialBackoff = initialBackoff
            self.maxBackoff = maxBackoff
        }
    }

    /// How a connection ended.
    public enum ConnectionEnd: Sendable, Hashable {
        /// We said bye after `leave`.
        case left
        /// The server said the activity was ended by this participant.
        case ended(by: String)
        /// The server sent an error and closed.
        case refused(CowatchError)
        /// The link dropped (or could not be made).
        case lost
    }

    /// What the room loop does next.
    public enum Next: Sendable, Hashable {
        /// Connect at this local instant.
        case connect(at: Double)
        /// Stay out of the room until `join`.
        case stayOut
        /// Shut the daemon down gracefully (on-end quit).
        case quit
        /// Stop with this error (a refusal retrying cannot fix).
        case stop(CowatchError)
    }

    public let configuration: Configuration
    public private(set) var state: SessionState = .waiting
    /// True once the server has welcomed us: later refusals that may pass (a taken name, a full
    /// room) no longer stop the daemon.
    public private(set) var hasJoined = false
    private var backoff: Double

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
        self.backoff = configuration.initialBackoff
    }

    /// A connection attempt starts: `waiting`. Returns false (and changes nothing) when the
    /// session must stay out (left, ended, removed, stopped).
    public mutating func connecting() -> Bool {
        switch state {
        case .waiting: return true
        case .joined: return false
        case .invalidated(let reason):
            guard reason == .serverGone else { return false }
            state = .waiting
            return true
        }
    }

    /// The server welcomed us.
    public mutating func welcomed() {
        guard state == .waiting else { return }
        state = .joined
        hasJoined = true
        backoff = configuration.initialBackoff
    }

    /// The connection is over; says what to do next.
    public mutating func connectionEnded(_ end: ConnectionEnd, now: Double) -> Next {
        switch end {
        case .left:
            state = .invalidated(.left)
            return .stayOut
        case .ended(let by):
            state = .invalidated(.endedBy(by))
            return configuration.onEnd == .quit ? .quit : .stayOut
        case .refused(let error):
            if SessionEndReason.fatalCodes.contains(error.code) {
                state = .invalidated(.refused(error.code))
                // A refusal never closes the player: out of the room, still playing. Only a first
                // join's refusal that nothing but a restart fixes (a version, a key, a file of
                // ours) stops the daemon, with the server's message.
                return hasJoined || SessionEndReason.retryableCodes.contains(error.code) ? .stayOut : .stop(error)
            }
            state = .invalidated(.removed(error.code))
            return .stayOut
        case .lost:
            if case .invalidated(let reason) = state, reason != .serverGone { return .stayOut }
            // A server never reached is not "gone": the session is still waiting to get in.
            state = hasJoined ? .invalidated(.serverGone) : .waiting
            let at = now + backoff
            backoff = min(backoff * 2, configuration.maxBackoff)
            return .connect(at: at)
        }
    }

    /// `leave`: allowed only when joined. Throws `not-in-room`. The loop then says bye and
    /// reports `connectionEnded(.left)`.
    public func checkLeave() throws(CowatchError) {
        guard state == .joined else {
            throw CowatchError(.notInRoom, "not in the room (\(state.name))")
        }
    }

    /// `join`: a new session after leave, an end, removal, or while the server is gone (retry
    /// now). Returns nil when already joined or connecting. Throws `not-in-room` after a refusal
    /// that retrying cannot fix.
    public mutating func join(now: Double) throws(CowatchError) -> Next? {
        switch state {
        case .joined, .waiting:
            return nil
        case .invalidated(let reason):
            if case .refused(let code) = reason, !mayRetry(code) {
                throw CowatchError(.notInRoom, "the room refused this daemon (\(code.rawValue)); restart it to try again")
            }
            state = .waiting
            backoff = configuration.initialBackoff
            return .connect(at: now)
        }
    }

    /// A refusal that `join` may try again (`SessionEndReason.retryableCodes`).
    private func mayRetry(_ code: CowatchError.Code) -> Bool {
        SessionEndReason.retryableCodes.contains(code)
    }
}
