import CowatchCore
import CowatchNet

/// `join` and `leave` on their way to the room session's loop, as messages: posted by the
/// control requests, taken by the loop when it is ready for them — waiting out of the room,
/// backing off before a reconnect, or during a connection (where `leave` ends it at once).
///
/// Bounded: each command is queued once at most (asking twice is asking once).
///
/// Threading: any thread posts; one task takes at a time (the room loop, or the connection it runs).
final class LoopMailbox: Sendable {
    enum Command: Sendable, Hashable {
        case join
        case leave
    }

    private struct State {
        var queued: [Command] = []
        var waiter: Reply<Void>?
    }

    private let state = Locked(State())

    /// Queues `command` (once) and wakes the taker.
    func post(_ command: Command) {
        let waiter = state.withLock { state -> Reply<Void>? in
            if !state.queued.contains(command) { state.queued.append(command) }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(())
    }

    /// Takes `command` when it is queued, without waiting.
    func takeNow(_ command: Command) -> Bool {
        state.withLock { state in
            guard let index = state.queued.firstIndex(of: command) else { return false }
            state.queued.remove(at: index)
            return true
        }
    }

    /// Takes `command`, waiting for it until `clock` reaches `deadline` (infinite: until cancelled).
    /// False when it did not come in time, or the task was cancelled (then nothing is taken).
    func take(_ command: Command, until deadline: Double, on clock: any MonotonicClock) async -> Bool {
        while !Task.isCancelled {
            let signal = Reply<Void>()
            let taken = state.withLock { state -> Bool in
                if let index = state.queued.firstIndex(of: command) {
                    state.queued.remove(at: index)
                    return true
                }
                state.waiter = signal
                return false
            }
            if taken { return true }
            await signal.wait(until: deadline, on: clock, orElse: ())
            // Cancelled: leave the command queued for whoever takes next (a `leave` that comes as
            // its connection ends for another reason is still the loop's to see).
            if Task.isCancelled { return false }
            if clock.now() >= deadline { return takeNow(command) }
        }
        return false
    }
}
