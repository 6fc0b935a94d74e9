import CowatchCore

/// A value that arrives once, awaited with a deadline: the daemon's one way to wait for
/// something another part delivers (the server's confirmation, a seek landing, a session
/// state), in place of timer tasks and polling loops.
///
/// `resume` may come from anywhere and only the first counts; `wait(timeout:orElse:)` returns
/// it, or `orElse` when the deadline passes or the waiting task is cancelled (a control client
/// that hung up). Nothing outlives the wait: the timer is a child task, cancelled with it.
///
/// Threading: any thread.
public final class Reply<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiter: CheckedContinuation<Value, Never>?
    }

    private let state = Locked(State())

    public init() {}

    /// Delivers the value; later calls are ignored.
    public func resume(_ value: Value) {
        let waiter = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    /// True once a value was delivered (or the wait gave up).
    public var isResolved: Bool { state.withLock { $0.value != nil } }

    /// The value, or `orElse` after `timeout` seconds or on cancellation.
    public func wait(timeout: Double, orElse: Value) async -> Value {
        await withTaskGroup(of: Value.self) { group in
            group.addTask { await self.value(orElse: orElse) }
            group.addTask {
                try? await Task.sleep(for: .seconds(timeout))
                self.resume(orElse)
                return orElse
            }
            let first = await group.next() ?? orElse
            group.cancelAll()
            return first
        }
    }

    /// The value, or `orElse` once `clock` reaches `deadline` (never, for an infinite one) or on
    /// cancellation.
    public func wait(until deadline: Double, on clock: any MonotonicClock, orElse: Value) async -> Value {
        await withTaskGroup(of: Value.self) { group in
            group.addTask { await self.value(orElse: orElse) }
            group.addTask {
                try? await clock.sleep(until: deadline)
                self.resume(orElse)
                return orElse
            }
            let first = await group.next() ?? orElse
            group.cancelAll()
            return first
        }
    }

    private func value(orElse: Value) async -> Value {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Value? in
                    if let value = state.value { return value }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            self.resume(orElse)
        }
    }
}
