import CowatchCore

/// The share of one of `RoomConnection`'s bounded queues (`queueLimit` either way) that unreliable
/// messenger messages may take: beyond `unreliableAllowance` waiting, a new unreliable message is
/// dropped here, so a peer's unreliable stream (up to 64 KiB a message) never fills the queue
/// that reliable messages, timelines and clock replies share with it (issue 22, item 7). Before,
/// a full inbound queue ended the link (`flooding`), losing reliable messages the server had
/// already acknowledged, and a full outbound queue dropped whatever came next, reliable or not.
///
/// The queue's occupancy is known from its last `yield` (`AsyncStream`'s remaining capacity):
/// between two yields it can only have shrunk, so the allowance is never overrun; while
/// unreliable messages are being dropped, the next other message refreshes it.
///
/// Threading: a value type; one owner (the link's reader, or under the sender's lock).
struct LinkQueueAllowance {
    /// Unreliable messages waiting at most in one queue (with `queueLimit` 4096: the other
    /// 3840 places are for everything else).
    static let unreliableAllowance = 256

    let limit: Int
    /// Free places in the queue after the last yield.
    private var room: Int

    init(limit: Int) {
        self.limit = limit
        room = limit
    }

    /// Whether an unreliable message may be queued now.
    var admitsUnreliable: Bool { limit - room < Self.unreliableAllowance }

    /// What a yield answered. Returns false when the queue dropped the item (it was full).
    mutating func yielded<T>(_ result: AsyncStream<T>.Continuation.YieldResult) -> Bool {
        switch result {
        case .enqueued(let remaining): noted(remaining: remaining)
        case .dropped: noted(remaining: nil)
        default: true
        }
    }

    /// The same for a throwing stream.
    mutating func yielded<T>(_ result: AsyncThrowingStream<T, any Error>.Continuation.YieldResult) -> Bool {
        switch result {
        case .enqueued(let remaining): noted(remaining: remaining)
        case .dropped: noted(remaining: nil)
        default: true
        }
    }

    /// The queue's free places after a yield (nil: it was full and dropped the item).
    private mutating func noted(remaining: Int?) -> Bool {
        room = remaining ?? 0
        return remaining != nil
    }
}

extension ServerMessage {
    /// A peer's unreliable messenger message (the one kind a busy link may drop).
    var isUnreliableMessage: Bool {
        if case .message(let message) = self { return !message.reliable }
        return false
    }
}

extension ClientMessage {
    /// Our own unreliable messenger message (the one kind a busy link may drop).
    var isUnreliableMessage: Bool {
        if case .message(let message) = self { return !message.reliable }
        return false
    }
}
