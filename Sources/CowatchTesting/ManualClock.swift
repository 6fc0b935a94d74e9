import CowatchCore

/// A clock that moves only when a test moves it: the daemon's loops sleep on it, and wake in
/// deadline order as `advance` passes their instants — so a test of timing logic (a tick, a quiet
/// period, a scheduled start) runs in no real time and cannot be starved by a busy machine.
///
/// `waitPrecisely(until:)` — a blocking wait for a scheduled start — moves the clock to that
/// instant: the time the waiter would have spent passes, and whoever sleeps until then wakes.
///
/// Threading: any thread or task; state under a lock. Sleepers are resumed outside the lock.
public final class ManualClock: MonotonicClock {
    private struct Sleeper {
        let id: Int
        let deadline: Double
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Double
        var nextID = 0
        var sleepers: [Sleeper] = []
        /// Ids whose task was cancelled before it registered (the handler ran first).
        var cancelledEarly: Set<Int> = []
    }

    private let state: Locked<State>

    /// A clock that reads `start` until advanced (an arbitrary origin, like CLOCK_MONOTONIC's).
    public init(start: Double = 1_000) {
        state = Locked(State(now: start))
    }

    public func now() -> Double { state.withLock { $0.now } }

    /// How many tasks sleep on this clock now: a test that wants every loop parked before it moves
    /// time waits for this to reach the number it expects.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest instant somebody sleeps until, if anybody does.
    public var nextDeadline: Double? { state.withLock { $0.sleepers.map(\.deadline).min() } }

    public func sleep(until deadline: Double) async throws {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if state.cancelledEarly.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else {
                    state.cancelledEarly.insert(id)
                    return nil
                }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    public func waitPrecisely(until deadline: Double) {
        advance(to: deadline)
    }

    /// Moves the clock on by `seconds` (never back) and wakes every sleeper whose instant has come,
    /// earliest first.
    public func advance(by seconds: Double) {
        advance(to: now() + seconds)
    }

    /// Moves the clock to `instant` (never back) and wakes every sleeper whose instant has come,
    /// earliest first.
    public func advance(to instant: Double) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = max(state.now, instant)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}

extension ManualClock {
    /// Lets time flow while a test sets up (connects, joins, loads): advances `step` seconds every
    /// `realInterval` of real time until the returned task is cancelled. A test cancels it before
    /// the part whose timing it checks, and moves the clock itself from then on.
    public func flow(step: Double = 0.01, realInterval: Duration = .milliseconds(1)) -> Task<Void, Never> {
        Task.detached { [self] in
            while !Task.isCancelled {
                advance(by: step)
                try? await Task.sleep(for: realInterval)
            }
        }
    }
}
