import CowatchCore
import NIOCore

/// What the room server still has to write to one connection, in two lanes, as encoded lines
/// (a broadcast is encoded once and the same buffer queued for every member).
///
/// Sync traffic (time replies, timelines, notices, participant lists) goes in the first lane and
/// is always written before the second, which carries chat and messenger traffic: a burst of
/// messages never delays a clock probe's answer or a pause. The lanes are bounded: a peer that
/// stops reading fills the first (it is then dropped, as before); unreliable messages are
/// refused beyond `droppableLimit` queued (dropped, nobody else waits); reliable ones beyond
/// `secondLaneLimit` drop the peer too. A marker (`pushMarker`) queued behind a reliable copy
/// comes back with the batch that writes it, so the server acknowledges a message only once its
/// copies are written (`RoomSequencer.DeliveryTracker`).
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

    /// What one write carries: lines (nil means "close after these") and the markers of the
    /// reliable copies among them.
    struct Batch {
        var messages: [ByteBuffer?] = []
        var markers: [Int] = []
        var isEmpty: Bool { messages.isEmpty && markers.isEmpty }
    }

    private enum Entry {
        case message(ByteBuffer)
        case marker(Int)
    }

    private struct State {
        var sync: [ByteBuffer?] = []
        var messages: [Entry] = []
        var waiter: CheckedContinuation<Batch, Never>?
        var finished = false

        var syncCount: Int { sync.count }
        /// Messages in the second lane (markers not counted).
        var queuedMessages = 0
    }

    private let state = Locked(State())

    /// Queues `message` (one encoded line); nil in the sync lane means "close after what is queued".
    func push(_ message: ByteBuffer?, lane: Lane) -> Outcome {
        enqueue { state in
            switch lane {
            case .sync:
                guard state.syncCount < Self.firstLaneLimit else { return .full }
                state.sync.append(message)
            case .message, .droppable:
                guard let message else { return .queued }
                let limit = lane == .droppable ? Self.droppableLimit : Self.secondLaneLimit
                guard state.queuedMessages < limit else { return lane == .droppable ? .dropped : .full }
                state.messages.append(.message(message))
                state.queuedMessages += 1
            }
            return .queued
        }
    }

    /// Queues `token` behind the messages queued so far: `next()` returns it with the batch that
    /// writes them. Markers do not count against the lane's limit (one follows each reliable copy).
    func pushMarker(_ token: Int) {
        _ = enqueue { state in
            state.messages.append(.marker(token))
            return .queued
        }
    }

    private func enqueue(_ change: (inout State) -> Outcome) -> Outcome {
        let (outcome, waiter, batch) = state.withLock { state -> (Outcome, CheckedContinuation<Batch, Never>?, Batch) in
            guard !state.finished else { return (.queued, nil, Batch()) }
            let outcome = change(&state)
            guard outcome == .queued, let waiter = state.waiter else { return (outcome, nil, Batch()) }
            state.waiter = nil
            return (.queued, waiter, Self.take(&state))
        }
        waiter?.resume(returning: batch)
        return outcome
    }

    /// What is queued, sync lane first, then up to `messagesPerBatch` messages (waits while empty). An empty result means finished;
    /// a nil element means "close now".
    /// Cancelling the waiting task finishes the outbox (a server shutting down).
    func next() async -> Batch {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Batch? in
                    if !state.sync.isEmpty || !state.messages.isEmpty { return Self.take(&state) }
                    if state.finished || Task.isCancelled { return Batch() }
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
        let waiter = state.withLock { state -> CheckedContinuation<Batch, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: Batch())
    }

    /// Messages written per batch at most: a sync message queued meanwhile waits for no more.
    static let messagesPerBatch = 16

    private static func take(_ state: inout State) -> Batch {
        var batch = Batch(messages: state.sync)
        state.sync = []
        var taken = 0
        var written = 0
        entries: for entry in state.messages {
            switch entry {
            case .message(let message):
                if written == messagesPerBatch { break entries }
                batch.messages.append(message)
                written += 1
            case .marker(let token):
                // Markers follow their copies: one met before the cut belongs to this write.
                batch.markers.append(token)
            }
            taken += 1
        }
        state.queuedMessages -= written
        state.messages.removeFirst(taken)
        return batch
    }
}
