/// Chat and the messenger on the daemon's side (GroupSessionMessenger): requests, delivery and
/// acknowledgements.
///
/// Reliable messages are kept until the server acknowledges them and sent again, in order,
/// after a reconnect; receivers drop a copy they have already delivered (by sender and id).
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
    /// Reliable ones are answered by `messageDelivered` (or refused); unreliable ones by nothing.
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
            unacknowledged.append(message)
        }
        return (message.id, [.send(.message(message))])
    }

    /// A refusal naming one of our chat or message ids: that request is over.
    mutating func requestRefused(_ id: Int) -> Int? {
        guard pendingRequests.removeValue(forKey: id) != nil else { return nil }
        unacknowledged.removeAll { $0.id == id }
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
        let key = "\(message.from ?? "")/\(message.id)"
        guard !seenMessageSet.contains(key) else { return [] }
        seenMessageSet.insert(key)
        seenMessages.append(key)
        if seenMessages.count > Self.seenLimit { seenMessageSet.remove(seenMessages.removeFirst()) }
        return [.message(message)]
    }

    mutating func messageAcknowledged(_ id: Int, delivered: [String]) -> [Action] {
        unacknowledged.removeAll { $0.id == id }
        guard pendingRequests.removeValue(forKey: id) != nil else { return [] }
        return [.messageDelivered(id: id, to: delivered)]
    }
}
