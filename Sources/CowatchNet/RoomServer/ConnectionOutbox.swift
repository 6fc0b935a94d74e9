import CowatchCore
import NIOCore

/// What the room server still has to write to one connection, in three lanes, as encoded lines
/// (a broadcast is encoded once and the same buffer queued for every member).
///
/// Sync traffic (time replies, timelines, notices, participant lists) goes in the first lane and
/// is always written before the others; then reliable chat and messenger traffic; unreliable
/// messages last, in a lane of their own: a burst of messages never delays a clock probe's
/// answer or a pause, and another sender's unreliable stream never queues ahead of a reliable
/// message (issue 22, item 7). The lanes are bounded: a peer that stops reading fills the first
/// (it is then dropped, as before); unreliable messages are refused beyond `droppableLimit`
/// queued or `droppableByteLimit` bytes (dropped, nobody else waits); reliable ones beyond
/// `secondLaneLimit` drop the peer too. One write carries at most `batchBytes` of messages (and
/// at least one), so a sync line queued meanwhile waits behind that much at most. A marker (`pushMarker`) queued behind a reliable copy
/// is reported (`onWritten`) once the write that carries it completed, so the server
/// acknowledges a message only once its copies are written (`RoomSequencer.DeliveryTracker`).
///
/// The outbox writes on its channel's event loop itself: a push schedules one drain there (pushes
/// meanwhile join it), which writes what is queued and flushes once — no writer task to wake per
/// connection. It writes only while the channel is writable (`writabilityChanged` resumes it), so
/// a peer that stops reading fills the lanes instead of the server's memory.
///
/// Threading: any thread; draining happens on the channel's event loop.
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
    /// Bytes of unreliable messages queued at most (about eight of the largest).
    static let droppableByteLimit = 512 * 1024

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
        /// Unreliable messages: after the reliable ones, and the first to go when full.
        var droppable: [ByteBuffer] = []
        var droppableBytes = 0
        var finished = false
        /// A drain is scheduled on the event loop (pushes meanwhile need not schedule another).
        var scheduled = false
        /// The close marker was written: nothing more goes out.
        var closed = false
        var onWritten: (@Sendable ([Int]) -> Void)?

        var syncCount: Int { sync.count }
        /// Messages in the second lane (markers not counted).
        var queuedMessages = 0
        var isEmpty: Bool { sync.isEmpty && messages.isEmpty && droppable.isEmpty }
    }

    private let state = Locked(State())
    private let channel: any Channel
    /// Completed once everything up to the close marker is written (or the channel closed).
    private let done: EventLoopPromise<Void>

    init(channel: any Channel) {
        self.channel = channel
        self.done = channel.eventLoop.makePromise()
        channel.closeFuture.whenComplete { [done] _ in done.succeed() }
    }

    /// Called with the markers of each completed write (from the event loop).
    func onWritten(_ handler: @escaping @Sendable ([Int]) -> Void) {
        state.withLock { $0.onWritten = handler }
    }

    /// Queues `message` (one encoded line); nil in the sync lane means "close after what is queued".
    func push(_ message: ByteBuffer?, lane: Lane) -> Outcome {
        enqueue { state in
            switch lane {
            case .sync:
                guard state.syncCount < Self.firstLaneLimit else { return .full }
                state.sync.append(message)
            case .message:
                guard let message else { return .queued }
                guard state.queuedMessages < Self.secondLaneLimit else { return .full }
                state.messages.append(.message(message))
                state.queuedMessages += 1
            case .droppable:
                guard let message else { return .queued }
                guard state.droppable.count < Self.droppableLimit,
                    state.droppableBytes + message.readableBytes <= Self.droppableByteLimit
                else { return .dropped }
                state.droppable.append(message)
                state.droppableBytes += message.readableBytes
            }
            return .queued
        }
    }

    /// Queues `token` behind the messages queued so far: it is reported with the write that
    /// carries them. Markers do not count against the lane's limit (one follows each reliable copy).
    func pushMarker(_ token: Int) {
        _ = enqueue { state in
            state.messages.append(.marker(token))
            return .queued
        }
    }

    private func enqueue(_ change: (inout State) -> Outcome) -> Outcome {
        let (outcome, schedule) = state.withLock { state -> (Outcome, Bool) in
            guard !state.finished, !state.closed else { return (.queued, false) }
            let outcome = change(&state)
            guard outcome == .queued, !state.scheduled else { return (outcome, false) }
            state.scheduled = true
            return (outcome, true)
        }
        if schedule { channel.eventLoop.execute { self.drain() } }
        return outcome
    }

    /// No more messages: what is queued is still written, then nothing.
    func finish() {
        let empty = state.withLock { state -> Bool in
            state.finished = true
            return state.isEmpty && !state.scheduled
        }
        if empty { done.succeed() }
    }

    /// Waits (at most `timeout` seconds) until what was queued before `finish` is written.
    func drained(timeout: TimeAmount = .seconds(5)) async {
        let timer = channel.eventLoop.scheduleTask(in: timeout) { [done] in done.succeed() }
        try? await done.futureResult.get()
        timer.cancel()
    }

    /// The channel became writable (or not): resume writing.
    func writabilityChanged() {
        guard channel.isWritable else { return }
        let schedule = state.withLock { state -> Bool in
            guard !state.scheduled, !state.isEmpty, !state.closed else { return false }
            state.scheduled = true
            return true
        }
        if schedule { drain() }
    }

    /// Writes what is queued (on the event loop), sync lane first, then up to `messagesPerBatch`
    /// messages; flushes once. More waiting: another drain is scheduled, so a sync message queued
    /// meanwhile goes first.
    /// How long a closing connection may take to let its last lines out.
    static let closeGrace = TimeAmount.seconds(2)

    private func drain() {
        guard channel.isWritable else {
            // `writabilityChanged` resumes.
            state.withLock { $0.scheduled = false }
            return
        }
        let (batch, more, handler, finished) = state.withLock { state -> (Batch, Bool, (@Sendable ([Int]) -> Void)?, Bool) in
            let batch = Self.take(&state)
            let more = !state.isEmpty
            if !more { state.scheduled = false }
            return (batch, more, state.onWritten, state.finished)
        }
        var close = false
        var last: EventLoopPromise<Void>?
        for line in batch.messages {
            guard let line else {
                close = true
                break
            }
            channel.write(line, promise: nil)
        }
        if close || !batch.markers.isEmpty {
            last = channel.eventLoop.makePromise()
            channel.writeAndFlush(ByteBuffer(), promise: last)
            if close {
                // A peer that never finished its TLS handshake (or stopped reading) never lets
                // the last line out: the connection closes anyway, `closeGrace` later.
                let channel = self.channel
                channel.eventLoop.scheduleTask(in: Self.closeGrace) { channel.close(promise: nil) }
            }
        } else {
            channel.flush()
        }
        if let last {
            let markers = batch.markers
            let close = close
            let channel = self.channel
            let done = self.done
            last.futureResult.whenComplete { result in
                if case .success = result, !markers.isEmpty { handler?(markers) }
                if close {
                    done.succeed()
                    channel.close(promise: nil)
                }
            }
        }
        if close {
            state.withLock { state in
                state.closed = true
                state.scheduled = false
            }
            return
        }
        if more {
            channel.eventLoop.execute { self.drain() }
        } else if finished {
            done.succeed()
        }
    }

    /// Messages written per batch at most: a sync message queued meanwhile waits for no more.
    static let messagesPerBatch = 16
    /// Bytes of messages written per batch at most (at least one message goes).
    static let batchBytes = 128 * 1024

    /// The sync lane, then reliable messages (with their markers), then unreliable ones, within
    /// `messagesPerBatch` and `batchBytes`.
    private static func take(_ state: inout State) -> Batch {
        var batch = Batch(messages: state.sync)
        state.sync = []
        var taken = 0
        var written = 0
        var bytes = 0
        let full = { (next: ByteBuffer) in written == messagesPerBatch || (written > 0 && bytes + next.readableBytes > batchBytes) }
        entries: for entry in state.messages {
            switch entry {
            case .message(let message):
                if full(message) { break entries }
                batch.messages.append(message)
                written += 1
                bytes += message.readableBytes
            case .marker(let token):
                // Markers follow their copies: one met before the cut belongs to this write.
                batch.markers.append(token)
            }
            taken += 1
        }
        state.queuedMessages -= written
        state.messages.removeFirst(taken)
        guard state.messages.isEmpty else { return batch }
        var unreliable = 0
        for message in state.droppable {
            if full(message) { break }
            batch.messages.append(message)
            written += 1
            bytes += message.readableBytes
            unreliable += 1
        }
        for message in state.droppable.prefix(unreliable) { state.droppableBytes -= message.readableBytes }
        state.droppable.removeFirst(unreliable)
        return batch
    }
}
