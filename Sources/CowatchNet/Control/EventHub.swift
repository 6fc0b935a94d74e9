import CowatchCore

/// Fans control events out to every connected client.
///
/// Each subscriber gets its own bounded buffer: a client that stops reading loses its oldest
/// events instead of stalling the daemon or the other clients.
///
/// Threading: all methods may be called from any thread or task.
public final class EventHub: Sendable {
    public typealias Subscription = (id: Int, events: AsyncStream<ControlEvent>)

    private let state = Locked<(nextID: Int, subscribers: [Int: AsyncStream<ControlEvent>.Continuation])>((0, [:]))
    private let bufferLimit: Int

    /// - Parameter bufferLimit: events kept per slow subscriber before the oldest are dropped.
    public init(bufferLimit: Int = 1024) {
        self.bufferLimit = bufferLimit
    }

    /// Starts delivering events to a new stream; call `unsubscribe` with its id when done.
    public func subscribe() -> Subscription {
        let (stream, continuation) = AsyncStream.makeStream(
            of: ControlEvent.self, bufferingPolicy: .bufferingNewest(bufferLimit))
        let id = state.withLock { state in
            state.nextID += 1
            state.subscribers[state.nextID] = continuation
            return state.nextID
        }
        return (id, stream)
    }

    /// Stops delivery and finishes that subscriber's stream.
    public func unsubscribe(_ id: Int) {
        let continuation = state.withLock { $0.subscribers.removeValue(forKey: id) }
        continuation?.finish()
    }

    /// Sends an event to every subscriber. Never blocks.
    public func publish(_ event: ControlEvent) {
        let continuations = state.withLock { Array($0.subscribers.values) }
        for continuation in continuations { continuation.yield(event) }
    }

    /// Finishes every subscriber's stream (at shutdown).
    public func finishAll() {
        let continuations = state.withLock { state in
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for continuation in continuations { continuation.finish() }
    }

}
