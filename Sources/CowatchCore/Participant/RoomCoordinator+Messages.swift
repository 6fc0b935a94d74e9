/// Chat and the messenger on the daemon's side (GroupSessionMessenger): requests, delivery and
/// acknowledgements.
///
/// Reliable messages are kept until the server acknowledges them (once written to each
/// recipient) and sent again, in order, after a reconnect, when the others we were with are back
/// too (at most `peersReturnGrace` later); receivers drop a copy they have already delivered (by
/// sender and id).
/// Unreliable ones are sent once and may be dropped under load. Nothing is replayed to a late
/// joiner except the room's recent chat.
///
/// Threading: part of `RoomCoordinator` (a value type; one owner).
extension RoomCoordinator {
    /// Reliable messages kept for resending at most; beyond it `send` refuses.
    public static let maxUnacknowledged = 256
    /// Deliveries remembered for the duplicate check.
    static let seenLimit = 1024

    /// A chat line from us. Returns the id our own copy will carry (or its refusal).
    /// Errors: `unsupported` when the server does not offer chat (`--no-chat`).
    public mutating func chat(_ text: String, now: Double) throws(CowatchError) -> (id: Int, actions: [Action]) {
        guard features.contains(WireFeature.chat) else {
            throw CowatchError(.unsupported, "the room server does not offer chat (it runs with --no-chat, or is older)")
        }
        nextRequestID += 1
        pendingRequests[nextRequestID] = now
        return (nextRequestID, [.send(.chat(id: nextRequestID, text: text))])
    }

    /// A messenger message from us: `payload` is JSON text, `to` nil for everyone else.
    /// Messages leave at our own pace (`MessagePace`, within the server's budgets): reliable ones
    /// queue in order and are answered by `messageDelivered` (or refused); unreliable ones keep
    /// only the newest per topic until it can go, and are answered by nothing.
    /// Errors: `unsupported` (the server has no messenger), `rate-limited` (too many unacknowledged).
    public mutating func send(
        topic: String, payload: String, reliable: Bool, to: [String]?, now: Double
    ) throws(CowatchError) -> (id: Int, actions: [Action]) {
        guard features.contains(WireFeature.messages) else {
            throw CowatchError(.unsupported, "the room server does not relay messages (it is older)")
        }
        guard !reliable || unacknowledged.count < Self.maxUnacknowledged else {
            throw CowatchError(.rateLimited, "\(Self.maxUnacknowledged) reliable messages await the server; wait a moment")
        }
        nextRequestID += 1
        let message = RoomMessage(id: nextRequestID, topic: topic, payload: payload, reliable: reliable, to: to)
        if reliable {
            pendingRequests[message.id] = now
            unacknowledged.append((message, false))
        } else if latestUnreliable[topic] != nil || latestUnreliable.count < Self.maxUnreliableTopics {
            latestUnreliable[topic] = message
        }
        return (message.id, isJoined ? flushMessages(now: now) : [])
    }

    /// Unreliable topics waiting at once at most (beyond, a new topic's message is dropped).
    static let maxUnreliableTopics = 64
    /// Seconds after a rejoin that queued messages wait for the others we were with to be back.
    /// "Everyone connected at send time" then still includes those the same outage dropped.
    public static let peersReturnGrace = 5.0

    /// Whether queued messages wait for peers after a reconnect (see `awaitedPeers`).
    mutating func awaitingPeers(now: Double) -> Bool {
        guard let awaited = awaitedPeers else { return false }
        // Not welcomed back yet: nothing may go on the new link before its welcome.
        guard let until = awaited.until else { return true }
        if now < until, !awaited.names.isSubset(of: Set(participants.map(\.name))) { return true }
        awaitedPeers = nil
        return false
    }

    /// Sends what our pace allows: reliable messages first, in order, then the newest
    /// unreliable message of each topic.
    mutating func flushMessages(now: Double) -> [Action] {
        guard !awaitingPeers(now: now) else { return [] }
        var actions: [Action] = []
        for index in unacknowledged.indices where !unacknowledged[index].sent {
            guard messagePace.allow(bytes: unacknowledged[index].message.payload.utf8.count, now: now) else { return actions }
            unacknowledged[index].sent = true
            actions.append(.send(.message(unacknowledged[index].message)))
        }
        for topic in latestUnreliable.keys.sorted() {
            guard let message = latestUnreliable[topic], messagePace.allow(bytes: message.payload.utf8.count, now: now) else {
                break
            }
            latestUnreliable[topic] = nil
            actions.append(.send(.message(message)))
        }
        return actions
    }

    /// A refusal naming one of our chat or message ids: that request is over.
    mutating func requestRefused(_ id: Int) -> Int? {
        guard pendingRequests.removeValue(forKey: id) != nil else { return nil }
        unacknowledged.removeAll { $0.message.id == id }
        return id
    }

    mutating func chatReceived(_ line: ChatLine) -> [Action] {
        var actions: [Action] = []
        if line.from == name, let id = line.id, pendingRequests.removeValue(forKey: id) != nil {
            actions.append(.actionApplied(id: id))
        }
        return actions + [.chat(line)]
    }

    mutating func messageReceived(_ message: RoomMessage) -> [Action] {
        // Ids are unique per sender session (token): by it when the server names it, so another
        // session that once used the same name cannot have used up this one's ids.
        let key = message.sender.map { "session:\($0)/\(message.id)" } ?? "\(message.from ?? "")/\(message.id)"
        guard !seenMessageSet.contains(key) else { return [] }
        seenMessageSet.insert(key)
        seenMessages.append(key)
        if seenMessages.count > Self.seenLimit { seenMessageSet.remove(seenMessages.removeFirst()) }
        return [.message(message)]
    }

    mutating func messageAcknowledged(_ id: Int, delivered: [String]) -> [Action] {
        unacknowledged.removeAll { $0.message.id == id }
        guard pendingRequests.removeValue(forKey: id) != nil else { return [] }
        return [.messageDelivered(id: id, to: delivered)]
    }
}

/// How fast this daemon sends messenger messages: a little under the server's default budgets
/// (64 messages then 32 a second; 2 MiB then 1 MiB a second) and far under its flood guard, so
/// a busy sender waits here instead of being refused or dropped there.
///
/// Threading: a value type; one owner.
public struct MessagePace: Sendable {
    var messages = 60.0
    var bytes = 2_000_000.0
    var at: Double?

    static let messageBurst = 60.0
    static let messageRate = 30.0
    static let byteBurst = 2_000_000.0
    static let byteRate = 1_000_000.0

    /// Takes one message of `bytes` if the pace allows it now.
    mutating func allow(bytes size: Int, now: Double) -> Bool {
        let elapsed = max(0, now - (at ?? now))
        at = now
        messages = min(Self.messageBurst, messages + elapsed * Self.messageRate)
        bytes = min(Self.byteBurst, bytes + elapsed * Self.byteRate)
        guard messages >= 1, bytes >= Double(size) else { return false }
        messages -= 1
        bytes -= Double(size)
        return true
    }
}
