import CowatchCore

/// Fans control events out to every connected client.
///
/// A subscriber either gets a stream with its own bounded buffer (`subscribe()`: a client that
/// stops reading loses its oldest events instead of stalling the daemon or the other clients),
/// or hands in a function that queues each event itself (`subscribe(deliver:)`, for a subscriber
/// with its own bounded queue, such as the control server's per-client outbox).
///
/// Threading: all methods may be called from any thread or task.
public final class EventHub: Sendable {
    public typealias Subscription = (id: Int, events: AsyncStream<ControlEvent>)

    private struct Subscriber: Sendable {
        let deliver: @Sendable (ControlEvent) -> Void
        let finish: @Sendable () -> Void
    }

    private let state = Locked<(nextID: Int, subscribers: [Int: Subscriber])>((0, [:]))
    private let bufferLimit: Int

    /// - Parameter bufferLimit: events kept per slow stream subscriber before the oldest are dropped.
    public init(bufferLimit: Int = 1024) {
        self.bufferLimit = bufferLimit
    }

    /// Starts delivering events to a new stream; call `unsubscribe` with its id when done.
    public func subscribe() -> Subscription {
        let (stream, continuation) = AsyncStream.makeStream(
            of: ControlEvent.self, bufferingPolicy: .bufferingNewest(bufferLimit))
        let id = add(Subscriber(deliver: { continuation.yield($0) }, finish: { continuation.finish() }))
        return (id, stream)
    }

    /// Calls `deliver` with every event published from now on, on the publisher's thread, until
    /// `unsubscribe` with the returned id. `deliver` must not block or wait (queue the event and
    /// return): `publish` waits for it.
    public func subscribe(deliver: @escaping @Sendable (ControlEvent) -> Void) -> Int {
        add(Subscriber(deliver: deliver, finish: {}))
    }

    private func add(_ subscriber: Subscriber) -> Int {
        state.withLock { state in
            state.nextID += 1
            state.subscribers[state.nextID] = subscriber
            return state.nextID
        }
    }

    /// Stops delivery and finishes that subscriber's stream.
    public func unsubscribe(_ id: Int) {
        let subscriber = state.withLock { $0.subscribers.removeValue(forKey: id) }
        subscriber?.finish()
    }

    /// Sends an event to every subscriber. Never blocks.
    public func publish(_ event: ControlEvent) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.deliver(event) }
    }

    /// Finishes every subscriber's stream (at shutdown).
    public func finishAll() {
        let subscribers = state.withLock { state in
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }

}
