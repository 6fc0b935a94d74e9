/// A participant's `end`, `role` and `kick` requests awaiting the room server's answer, and which
/// answer settles which request.
///
/// With `request-ids` (a *named* request) the request carries its id and the server names it in
/// its answer — `done`, or a `refused` whose `action_id` is it — so an answer settles exactly its
/// own request, and one whose caller stopped waiting leaves nothing behind that could settle
/// another. An older server answers without ids, but a connection's requests in the order sent,
/// each exactly once; for those (*unnamed*) requests only: a notice from us that matches one
/// settles the first such, a `refused` without an id the oldest. A timed-out unnamed request
/// stays here as a tombstone until its answer comes, so a late answer never settles a newer one.
/// `ended` settles every `end`, named or not: whoever's came first, the room ended.
///
/// Entries belong to one connection: `reset` when it ends (no answer can come after that).
///
/// Threading: a value type; one owner (`RoomCoordinator`).
public struct RoomRequestTracker: Sendable {
    /// What was asked.
    public enum Kind: Sendable, Hashable {
        case end
        case role(name: String, role: Role)
        case kick(name: String)
    }

    /// Requests waiting at once, at most (so a server that never answers cannot grow this).
    public static let capacity = 64

    struct Entry: Sendable, Equatable {
        var id: Int
        var kind: Kind
        /// Sent with its id (`request-ids`): only an answer naming the id settles it.
        var named: Bool
    }

    /// In the order sent.
    private(set) var entries: [Entry] = []

    public init() {}

    /// True when no further request may be sent until some are answered.
    public var isFull: Bool { entries.count >= Self.capacity }

    /// Records request `id` and returns its message: with the id when `named`.
    /// The caller checks `isFull` first.
    mutating func sent(_ kind: Kind, id: Int, named: Bool) -> ClientMessage {
        entries.append(Entry(id: id, kind: kind, named: named))
        let wireID = named ? id : nil
        switch kind {
        case .end: return .end(id: wireID)
        case .role(let name, let role): return .role(name: name, role: role, id: wireID)
        case .kick(let name): return .kick(name: name, id: wireID)
        }
    }

    /// `done`: the named request `id`, if it is waiting.
    mutating func done(_ id: Int) -> Int? {
        take { $0.named && $0.id == id }
    }

    /// A `refused`: with an id, the named request of that id; without, the oldest unnamed request.
    mutating func refused(_ id: Int?) -> Int? {
        if let id { return take { $0.named && $0.id == id } }
        return take { !$0.named }
    }

    /// A notice: the first unnamed request it reports as carried out, when `me` did it.
    mutating func noticed(_ notice: Notice, me: String) -> Int? {
        guard notice.actor == me else { return nil }
        return take { entry in
            guard !entry.named else { return false }
            switch entry.kind {
            case .end:
                return false
            case .role(let name, let role):
                return notice.action == (role == .operator ? .op : .deop) && notice.others?.contains(name) == true
            case .kick(let name):
                return notice.action == .kick && notice.others?.contains(name) == true
            }
        }
    }

    /// `ended`: every `end`, oldest first.
    mutating func ended() -> [Int] {
        let ends = entries.filter { $0.kind == .end }.map(\.id)
        entries.removeAll { $0.kind == .end }
        return ends
    }

    /// The connection ended: nothing more will be answered.
    mutating func reset() {
        entries = []
    }

    private mutating func take(where matches: (Entry) -> Bool) -> Int? {
        guard let index = entries.firstIndex(where: matches) else { return nil }
        return entries.remove(at: index).id
    }
}
