import CowatchCore
import NIOConcurrencyHelpers
import NIOCore

/// What goes out to one peer, written by a task of its own: the task that serves the peer queues
/// and never waits for the peer to read. A peer that stops reading shows in the queue's bounds —
/// `limit` items waiting, or the oldest waiting longer than its owner allows (`waited`) — and the
/// owner then closes the connection instead of being held by it (a hostile peer could otherwise
/// pin its task, and its slot, forever).
///
/// Items are written in order; a `step` (e.g. putting TLS in front of the pipeline) runs in that
/// order too, after every line queued before it has been handed to the channel.
///
/// Threading: `enqueue`, `waited`, `finish` from any task; `run` from exactly one task, once.
/// Errors: none thrown; a failed write or step ends `run` and makes the next `enqueue` say
/// `.failed` (the peer is gone).
public final class PeerWriter: Sendable {
    public enum Item: Sendable {
        case bytes(ByteBuffer)
        /// Runs on the writer's task once everything before it was written.
        case step(@Sendable () async throws -> Void)
    }

    public enum Outcome: Sendable, Equatable {
        case queued
        /// `limit` items already wait: the peer is not reading.
        case full
        /// A write failed: the peer is gone.
        case failed
    }

    private struct State {
        /// When each waiting item was queued, oldest first.
        var queuedAt: [Double] = []
        var failed = false
    }

    public let limit: Int
    private let state = NIOLockedValueBox(State())
    private let items: AsyncStream<Item>
    private let continuation: AsyncStream<Item>.Continuation

    /// - Parameter limit: the most items that may wait (at least 1).
    public init(limit: Int) {
        self.limit = max(1, limit)
        (items, continuation) = AsyncStream.makeStream(of: Item.self, bufferingPolicy: .unbounded)
    }

    /// Queues `item`, stamped `now` (the owner's clock); refused when `limit` items wait or the
    /// writer failed. A refused item is not queued.
    public func enqueue(_ item: Item, now: Double) -> Outcome {
        let outcome = state.withLockedValue { state -> Outcome in
            if state.failed { return .failed }
            guard state.queuedAt.count < limit else { return .full }
            state.queuedAt.append(now)
            return .queued
        }
        if outcome == .queued { continuation.yield(item) }
        return outcome
    }

    /// How long (seconds, on the owner's clock) the oldest item has waited; 0 when none waits.
    public func waited(now: Double) -> Double {
        state.withLockedValue { state in state.queuedAt.first.map { max(0, now - $0) } ?? 0 }
    }

    /// No more items: `run` returns once the queued ones are written.
    public func finish() {
        continuation.finish()
    }

    /// Waits until nothing is left to write (or the writer failed), at most `seconds` on `clock`:
    /// a last line (a refusal, an error) reaches a reading peer before the connection closes,
    /// and one that does not read cannot hold the close.
    public func drained(within seconds: Double, clock: any MonotonicClock) async {
        let deadline = clock.now() + seconds
        while clock.now() < deadline, state.withLockedValue({ !$0.failed && !$0.queuedAt.isEmpty }) {
            guard (try? await clock.sleep(seconds: 0.01)) != nil else { return }
        }
    }

    /// Writes the items as they come, until `finish` or a failure (or the task is cancelled).
    public func run(_ outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) async {
        for await item in items {
            do {
                switch item {
                case .bytes(let buffer): try await outbound.write(buffer)
                case .step(let step): try await step()
                }
            } catch {
                state.withLockedValue { $0.failed = true }
                return
            }
            state.withLockedValue { state in
                if !state.queuedAt.isEmpty { state.queuedAt.removeFirst() }
            }
        }
    }
}
