/// One control connection's outgoing messages: replies and events, in the order they were put
/// in, bounded.
///
/// - Events never wait: beyond `eventLimit` waiting events the oldest waiting event is dropped
///   (a client that stops reading loses old events, not the daemon's memory).
/// - Droppable events (`pushEvent(_:droppable: true)`: a peer's unreliable messages, up to
///   64 KiB each) have their own allowance, `droppableLimit` waiting: beyond it the new one is
///   dropped, and when `eventLimit` is reached a droppable event goes before any other. So a
///   stream of unreliable messages never pushes out a reliable message or a notice of a client
///   that reads slowly (issue 22, item 7), and holds at most `droppableLimit` payloads here.
/// - Replies are never dropped. Instead the reader of requests calls `awaitReplyRoom()` before
///   taking the next request, which returns only while fewer than `replyLimit` replies wait: a
///   client that sends requests without reading the replies is held up by its own socket (the
///   daemon stops reading it), not by the daemon's memory.
/// - One writer takes messages with `next()`; `finish()` lets it drain what is left, then it
///   gets nil; `cancel()` makes every wait return at once and `next()` return nil.
///
/// Threading: any thread or task; every method is safe to call concurrently. At most one task
/// may wait in `next()` and at most one in `awaitReplyRoom()` at a time (one writer, one reader
/// per connection). Waits end early when the waiting task is cancelled.
public final class ControlOutbox<Message: Sendable>: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var events = Queue()
        var replies = Queue()
        var nextSequence: UInt64 = 0
        var droppedEvents = 0
        /// Droppable events, in a queue of their own (merged with the others by sequence).
        var droppable = Queue()
        var finished = false
        var cancelled = false
        var nextWaiterID: UInt64 = 0
        var writer: Waiter?
        var reader: Waiter?

        mutating func takeWriter() -> Waiter? {
            defer { writer = nil }
            return writer
        }

        /// Events waiting, droppable or not.
        var eventCount: Int { events.count + droppable.count }

        /// The oldest waiting event of either queue, if any, and its sequence number.
        var firstEvent: UInt64? {
            switch (events.first?.sequence, droppable.first?.sequence) {
            case (let e?, let d?): min(e, d)
            case (let e?, nil): e
            case (nil, let d?): d
            case (nil, nil): nil
            }
        }

        /// The oldest waiting event, out of its queue (there is one).
        mutating func takeEvent() -> Message {
            if let d = droppable.first?.sequence, events.first.map({ d < $0.sequence }) ?? true { return droppable.removeFirst() }
            return events.removeFirst()
        }

        mutating func takeReader() -> Waiter? {
            defer { reader = nil }
            return reader
        }
    }

    /// A FIFO of sequence-numbered messages; the sequence numbers merge replies and events back
    /// into the order they were put in.
    private struct Queue {
        private var items: [(sequence: UInt64, message: Message)] = []
        private var head = 0

        var count: Int { items.count - head }
        var first: (sequence: UInt64, message: Message)? { head < items.count ? items[head] : nil }

        mutating func append(_ item: (sequence: UInt64, message: Message)) { items.append(item) }

        mutating func removeFirst() -> Message {
            let message = items[head].message
            head += 1
            if head >= 64 && head * 2 >= items.count {
                items.removeFirst(head)
                head = 0
            }
            return message
        }
    }

    /// Events kept at most while the client does not read.
    public let eventLimit: Int
    /// Droppable events kept at most while the client does not read.
    public let droppableLimit: Int
    /// Replies waiting at most before the reader of requests is held up.
    public let replyLimit: Int
    private let state: Locked<State>

    public init(eventLimit: Int = 1024, replyLimit: Int = 64, droppableLimit: Int = 64) {
        precondition(eventLimit > 0 && replyLimit > 0 && droppableLimit > 0)
        self.eventLimit = eventLimit
        self.droppableLimit = min(droppableLimit, eventLimit)
        self.replyLimit = replyLimit
        state = Locked(State())
    }

    /// Events waiting, replies waiting, and events dropped so far.
    public var counts: (events: Int, replies: Int, droppedEvents: Int) {
        state.withLock { ($0.eventCount, $0.replies.count, $0.droppedEvents) }
    }

    /// Queues an event. A droppable one is dropped itself when `droppableLimit` droppable events
    /// (or `eventLimit` events) wait; another one makes room, when `eventLimit` are waiting, by
    /// dropping the oldest droppable event, else the oldest event.
    /// Never blocks; ignored after `finish()` or `cancel()`.
    public func pushEvent(_ event: Message, droppable: Bool = false) {
        let (eventLimit, droppableLimit) = (self.eventLimit, self.droppableLimit)
        let writer = state.withLock { state -> Waiter? in
            guard !state.finished && !state.cancelled else { return nil }
            if droppable, state.droppable.count >= droppableLimit || state.eventCount >= eventLimit {
                state.droppedEvents += 1
                return nil
            }
            if state.eventCount >= eventLimit {
                _ = state.droppable.count > 0 ? state.droppable.removeFirst() : state.events.removeFirst()
                state.droppedEvents += 1
            }
            if droppable {
                state.droppable.append((state.nextSequence, event))
            } else {
                state.events.append((state.nextSequence, event))
            }
            state.nextSequence += 1
            return state.takeWriter()
        }
        writer?.continuation.resume()
    }

    /// Queues a reply. Never blocks and never drops; call `awaitReplyRoom()` before taking the
    /// request it answers. Ignored after `cancel()`.
    public func pushReply(_ reply: Message) {
        let writer = state.withLock { state -> Waiter? in
            guard !state.cancelled else { return nil }
            state.replies.append((state.nextSequence, reply))
            state.nextSequence += 1
            return state.takeWriter()
        }
        writer?.continuation.resume()
    }

    /// Returns once fewer than `replyLimit` replies wait, or at once after `cancel()` or when
    /// the task is cancelled.
    public func awaitReplyRoom() async {
        let limit = replyLimit
        await wait(\.reader) { $0.replies.count < limit || $0.cancelled }
    }

    /// The oldest waiting message; waits for one. Nil once `finish()` was called and nothing is
    /// left, at once after `cancel()`, or when the task is cancelled.
    public func next() async -> Message? {
        while true {
            let taken = state.withLock { state -> (message: Message?, done: Bool, reader: Waiter?) in
                if state.cancelled { return (nil, true, nil) }
                let event = state.firstEvent
                let reply = state.replies.first?.sequence
                let message: Message
                switch (event, reply) {
                case (nil, nil): return (nil, state.finished, nil)
                case (let e?, let r?) where e < r: message = state.takeEvent()
                case (_?, nil): message = state.takeEvent()
                default: message = state.replies.removeFirst()
                }
                let reader = state.replies.count < replyLimit ? state.takeReader() : nil
                return (message, false, reader)
            }
            taken.reader?.continuation.resume()
            if let message = taken.message { return message }
            if taken.done || Task.isCancelled { return nil }
            await wait(\.writer) { $0.cancelled || $0.finished || $0.eventCount + $0.replies.count > 0 }
        }
    }

    /// No more events; replies already queued stay for `next()`, which then returns nil.
    public func finish() {
        let writer = state.withLock { state -> Waiter? in
            state.finished = true
            return state.takeWriter()
        }
        writer?.continuation.resume()
    }

    /// Stops everything: waits return, `next()` returns nil, nothing more is queued.
    public func cancel() {
        let (writer, reader) = state.withLock { state -> (Waiter?, Waiter?) in
            state.cancelled = true
            return (state.takeWriter(), state.takeReader())
        }
        writer?.continuation.resume()
        reader?.continuation.resume()
    }

    /// Suspends in `slot` until `ready` holds (checked under the lock before suspending, and
    /// again by whoever resumes the slot's waiter), or the task is cancelled.
    private func wait(_ slot: WritableKeyPath<State, Waiter?> & Sendable, until ready: @Sendable (State) -> Bool) async {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if ready(state) || Task.isCancelled { return true }
                    precondition(state[keyPath: slot] == nil, "two tasks wait on one ControlOutbox slot")
                    state[keyPath: slot] = Waiter(id: id, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let waiter = state[keyPath: slot], waiter.id == id else { return nil }
                state[keyPath: slot] = nil
                return waiter
            }
            waiter?.continuation.resume()
        }
    }
}
