import CowatchCore

/// What the room server still has to write to one connection, in two lanes.
///
/// Sync traffic (time replies, timelines, notices, participant lists) goes in the first lane and
/// is always written before the second, which carries chat and messenger traffic: a burst of
/// messages never delays a clock probe's answer or a pause. The lanes are bounded: a peer that
/// stops reading fills the first (it is then dropped, as before); unreliable messages are
/// refused beyond `droppableLimit` queued (dropped, nobody else waits); reliable ones beyond
/// `secondLaneLimit` drop the peer too.
///
/// Threading: any thread; `next()` has one consumer (the connection's writer).
final class ConnectionOutbox: Sendable {
    enum Lane { case sync, message, droppable }

    enum Outcome: Equatable {
        case queued
        /// An unreliable message over its limit: dropped, the connection lives.
        case dropped
        /// The peer does not read: drop the connection.
        case full
    }

    static let firstLaneLimit = 4096
    static let secondLaneLimit = 1024
    static let droppableLimit = 64

    private struct State {
        var sync: [ServerMessage?] = []
        var messages: [ServerMessage] = []
        var waiter: CheckedContinuation<[ServerMessage?], Never>?
        var finished = false

        var syncCount: Int { sync.count }
        var messageCount: Int { messages.count }
    }

    private let state = Locked(State())

    /// Queues `message`; nil in the sync lane means "close after what is queued".
    func push(_ message: ServerMessage?, lane: Lane) -> Outcome {
        let (outcome, waiter, batch) = state.withLock { state -> (Outcome, CheckedContinuation<[ServerMessage?], Never>?, [ServerMessage?]) in
            guard !state.finished else { return (.queued, nil, []) }
            switch lane {
            case .sync:
                guard state.syncCount < Self.firstLaneLimit else { return (.full, nil, []) }
                state.sync.append(message)
            case .message, .droppable:
                guard let message else { return (.queued, nil, []) }
                let limit = lane == .droppable ? Self.droppableLimit : Self.secondLaneLimit
                guard state.messageCount < limit else { return (lane == .droppable ? .dropped : .full, nil, []) }
                state.messages.append(message)
            }
            guard let waiter = state.waiter else { return (.queued, nil, []) }
            state.waiter = nil
            return (.queued, waiter, Self.take(&state))
        }
        waiter?.resume(returning: batch)
        return outcome
    }

    /// What is queued, sync lane first, then up to `messagesPerBatch` messages (waits while empty). An empty result means finished;
    /// a nil element means "close now".
    /// Cancelling the waiting task finishes the outbox (a server shutting down).
    func next() async -> [ServerMessage?] {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> [ServerMessage?]? in
                    if state.syncCount + state.messageCount > 0 { return Self.take(&state) }
                    if state.finished || Task.isCancelled { return [] }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }

    /// No more messages; `next()` returns what is left, then empty.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<[ServerMessage?], Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: [])
    }

    /// Messages written per batch at most: a sync message queued meanwhile waits for no more.
    static let messagesPerBatch = 16

    private static func take(_ state: inout State) -> [ServerMessage?] {
        let count = min(state.messages.count, messagesPerBatch)
        let batch = state.sync + state.messages.prefix(count).map(Optional.some)
        state.sync = []
        state.messages.removeFirst(count)
        return batch
    }
}
