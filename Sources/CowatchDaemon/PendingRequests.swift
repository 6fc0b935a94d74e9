import CowatchCore
import CowatchNet

/// The daemon's requests waiting for the room server's answer, in one table keyed by request id:
/// group actions, chat lines and detaches, reliable messages, and `end`, `op`/`deop` and `kick`.
/// The coordinator turns every answer into the id it names (`actionApplied`, `actionRefused`,
/// `messageDelivered`), and `resolve` hands it to the request of that id.
///
/// A request is registered before its message goes (the answer may come at once), then awaited
/// with a deadline (`wait`). However the wait ends — answered, timed out, or the control client
/// gone — the request's entry goes with it: a late answer finds no entry and is dropped, and
/// can never settle a newer request, which has an id of its own.
///
/// Threading: any thread (the table is behind a lock); `RoomSession`'s actor uses it.
final class PendingRequests: Sendable {
    enum Kind: Sendable, Equatable {
        /// A group action, a chat line or a detach: answered on the connection it went on, or never.
        case action
        /// A reliable message: the coordinator sends it again after a reconnect until it is
        /// acknowledged, so it outlives the connection.
        case message
        case end
        case role
        case kick
    }

    private struct Entry {
        let kind: Kind
        let reply: Reply<CowatchError?>
    }

    private let entries = Locked([Int: Entry]())

    init() {}

    /// Registers request `id`; returns the reply to hand to `wait`. Ids are unique among waiting
    /// requests; should one be taken anyway, its earlier request fails with `invalid-request`.
    func register(_ id: Int, kind: Kind) -> Reply<CowatchError?> {
        let reply = Reply<CowatchError?>()
        let displaced = entries.withLock { $0.updateValue(Entry(kind: kind, reply: reply), forKey: id) }
        displaced?.reply.resume(CowatchError(.invalidRequest, "another request took this one's id \(id)"))
        return reply
    }

    /// Waits for request `id` (registered as `reply`): nil once carried out, the server's refusal,
    /// or `timedOut` after `timeout` seconds or on cancellation. The entry is gone afterwards.
    func wait(_ id: Int, _ reply: Reply<CowatchError?>, timeout: Double, timedOut: CowatchError) async -> CowatchError? {
        let outcome = await reply.wait(timeout: timeout, orElse: timedOut)
        entries.withLock { entries in
            if entries[id]?.reply === reply { entries[id] = nil }
        }
        return outcome
    }

    /// Settles request `id`: `error` nil when the server carried it out. Returns its kind, or nil
    /// when no request of that id waits (answered already, given up on, or never ours).
    @discardableResult
    func resolve(_ id: Int, _ error: CowatchError?) -> Kind? {
        guard let entry = entries.withLock({ $0.removeValue(forKey: id) }) else { return nil }
        entry.reply.resume(error)
        return entry.kind
    }

    /// True while request `id` waits.
    func isWaiting(_ id: Int) -> Bool {
        entries.withLock { $0[id] != nil }
    }

    /// Requests waiting now.
    var count: Int { entries.withLock { $0.count } }

    /// The room connection ended: every request that can no longer be answered fails with
    /// `error`. Reliable messages wait on: they go again after a reconnect.
    func connectionEnded(_ error: CowatchError) {
        let failed = entries.withLock { entries -> [Entry] in
            let gone = entries.filter { $0.value.kind != .message }
            for id in gone.keys { entries[id] = nil }
            return Array(gone.values)
        }
        for entry in failed { entry.reply.resume(error) }
    }
}
