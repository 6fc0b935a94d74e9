/// The server's record of film streams (issue 25): each room's offered files, the streams asked
/// for and not yet served, and the connections relaying one.
///
/// Bounded everywhere: `SharedMedia.maxPerMember` offers per member and `maxPerRoom` per room;
/// `maxStreamsPerReceiver` streams per receiving member, `maxStreamsPerSharer` per sharer; a
/// stream asked for and not served within `serveDeadline` seconds is given up.
///
/// Threading: a value type inside `RoomSequencer` (one owner).
struct StreamBook: Sendable {
    static let maxStreamsPerReceiver = 4
    static let maxStreamsPerSharer = 16
    /// Seconds a sharer has to answer `stream_wanted` with its serving connection.
    static let serveDeadline = 10.0

    struct Pending: Sendable, Equatable {
        var room: String
        var receiver: String
        var receiverConnection: RoomSequencer.ConnectionID
        var sharer: String
        var fingerprint: String
        var size: Int
        var deadline: Double
    }

    /// A connection that carries (or waits to carry) a stream's frames.
    struct Leg: Sendable, Equatable {
        var room: String
        var receiver: String
        var sharer: String
        var stream: Int
    }

    /// Offers per room, in the order they were made.
    private(set) var shares: [String: [SharedMedia]] = [:]
    private(set) var pending: [Int: Pending] = [:]
    private(set) var legs: [RoomSequencer.ConnectionID: Leg] = [:]
    private var lastStream = 0

    func offers(in room: String) -> [SharedMedia] { shares[room] ?? [] }

    /// Adds or replaces `offer` (same sharer and fingerprint). Errors: `too-large` past the caps.
    mutating func share(_ offer: SharedMedia, in room: String) throws(CowatchError) {
        var list = shares[room] ?? []
        if let index = list.firstIndex(where: { $0.by == offer.by && $0.file.fingerprint == offer.file.fingerprint }) {
            list[index] = offer
        } else {
            guard list.filter({ $0.by == offer.by }).count < SharedMedia.maxPerMember else {
                throw CowatchError(.tooLarge, "you already offer \(SharedMedia.maxPerMember) files: unshare one first")
            }
            guard list.count < SharedMedia.maxPerRoom else {
                throw CowatchError(.tooLarge, "this room already has \(SharedMedia.maxPerRoom) files on offer")
            }
            list.append(offer)
        }
        shares[room] = list
    }

    /// Withdraws `sharer`'s offer of `fingerprint` (nil: all of them). Returns whether any went.
    @discardableResult
    mutating func unshare(by sharer: String, fingerprint: String?, in room: String) -> Bool {
        guard let list = shares[room] else { return false }
        let kept = list.filter { $0.by != sharer || (fingerprint != nil && $0.file.fingerprint != fingerprint) }
        shares[room] = kept.isEmpty ? nil : kept
        if kept.count != list.count {
            // Streams asked for and not yet served die with the offer.
            pending = pending.filter { $0.value.room != room || $0.value.sharer != sharer || (fingerprint != nil && $0.value.fingerprint != fingerprint) }
        }
        return kept.count != list.count
    }

    /// The room is gone: its offers and pending streams go too.
    mutating func roomGone(_ room: String) {
        shares[room] = nil
        pending = pending.filter { $0.value.room != room }
    }

    func streams(of receiver: String, in room: String) -> Int {
        // A pending stream has its receiver's leg already (`ask`).
        Set(legs.values.filter { $0.room == room && $0.receiver == receiver }.map(\.stream)).count
    }

    func served(by sharer: String, in room: String) -> Int {
        Set(legs.values.filter { $0.room == room && $0.sharer == sharer }.map(\.stream)).count
    }

    /// A receiver's stream connection asks for a stream: numbered, waiting for its sharer.
    mutating func ask(_ request: Pending) -> Int {
        lastStream = lastStream >= wireMaxRequestID ? 1 : lastStream + 1
        pending[lastStream] = request
        legs[request.receiverConnection] = Leg(room: request.room, receiver: request.receiver, sharer: request.sharer, stream: lastStream)
        return lastStream
    }

    /// The sharer's serving connection for `stream` came: the stream's pending record, taken.
    mutating func serve(_ stream: Int, by sharer: String, in room: String, on id: RoomSequencer.ConnectionID) -> Pending? {
        guard let waiting = pending[stream], waiting.sharer == sharer, waiting.room == room else { return nil }
        pending[stream] = nil
        legs[id] = Leg(room: room, receiver: waiting.receiver, sharer: sharer, stream: stream)
        return waiting
    }

    /// Streams not served in time: their receivers' connections.
    mutating func expired(now: Double) -> [(RoomSequencer.ConnectionID, Pending)] {
        let due = pending.filter { $0.value.deadline <= now }
        for stream in due.keys { pending[stream] = nil }
        return due.values.map { ($0.receiverConnection, $0) }
    }

    var nextDeadline: Double? { pending.values.map(\.deadline).min() }

    /// A connection ended: it carries no stream any more (a pending one it asked for is dropped).
    mutating func connectionEnded(_ id: RoomSequencer.ConnectionID) {
        guard let leg = legs.removeValue(forKey: id) else { return }
        if let waiting = pending[leg.stream], waiting.receiverConnection == id { pending[leg.stream] = nil }
    }

    func isStream(_ id: RoomSequencer.ConnectionID) -> Bool { legs[id] != nil }
}
