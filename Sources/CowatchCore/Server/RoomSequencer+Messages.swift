/// Chat and the messenger: lines and opaque payloads relayed within a room.
///
/// Both travel in the connection's second lane (after sync traffic) and have their own budgets
/// per participant (`ServerAdmission`), so one chatty sender neither floods the room nor slows
/// the clock. The server never reads a messenger payload: it checks its size and copies it.
/// Late joiners get the room's last `chatHistory` chat lines; messages are not replayed (as in
/// GroupActivities; shared state belongs in a journal).
///
/// Threading: part of `RoomSequencer` (a value type; one owner).
extension RoomSequencer {
    /// The connections in `room` that negotiated `feature`, with their names, in join order
    /// (the room's own member list: no scan of every connection on the server per message).
    func members(of room: String, speaking feature: String) -> [(id: ConnectionID, name: String)] {
        (rooms[room]?.playback.memberIDs ?? []).compactMap { id in
            guard let membership = joined[id], membership.features.contains(feature) else { return nil }
            return (id, membership.name)
        }
    }

    mutating func chat(_ text: String, requestID: Int, from id: ConnectionID, _ membership: Joined, now: Double) -> [Output] {
        guard membership.features.contains(WireFeature.chat) else { return [.send(id, .unsupported(type: "chat"))] }
        guard admission.allowChat(from: id, now: now) else {
            return [.send(id, .refused(
                actionID: requestID, code: CowatchError.Code.rateLimited.rawValue,
                message: "more than \(Int(configuration.admission.chatRate)) chat line a second; wait a moment"))]
        }
        let line = ChatLine(from: membership.name, text: text)
        var history = chatHistory[membership.room] ?? []
        history.append(line)
        Self.trimChatHistory(&history, to: configuration.chatHistory)
        chatHistory[membership.room] = history
        return members(of: membership.room, speaking: WireFeature.chat).map { member in
            var copy = line
            if member.id == id { copy.id = requestID }  // the sender's confirmation
            return .sendMessage(member.id, .chat(copy), reliable: true)
        }
    }

    /// Keeps at most `limit` lines, dropping the oldest line of whoever has the most lines kept:
    /// a burst of lines (or of cheap identities, each within its budget) pushes out its own
    /// lines, not the few that the room's people said.
    static func trimChatHistory(_ history: inout [ChatLine], to limit: Int) {
        while history.count > max(0, limit) {
            var counts: [String: Int] = [:]
            for line in history { counts[line.from, default: 0] += 1 }
            guard let most = counts.values.max(),
                let index = history.firstIndex(where: { counts[$0.from] == most })
            else { return }
            history.remove(at: index)
        }
    }

    mutating func relay(_ message: RoomMessage, from id: ConnectionID, _ membership: Joined, now: Double) -> [Output] {
        guard membership.features.contains(WireFeature.messages) else { return [.send(id, .unsupported(type: "message"))] }
        guard admission.allowMessage(bytes: message.payload.utf8.count, from: id, now: now) else {
            guard message.reliable else { return [] }  // best effort: dropped, as under load
            return [.send(id, .refused(
                actionID: message.id, code: CowatchError.Code.rateLimited.rawValue,
                message: "over this participant's message budget; slow down"))]
        }
        let wanted = message.to.map(Set.init)
        let recipients = members(of: membership.room, speaking: WireFeature.messages).filter { member in
            member.id != id && (wanted?.contains(member.name) ?? true)
        }
        var delivered = message
        delivered.from = membership.name
        delivered.sender = membership.sender
        delivered.to = nil
        var outputs = recipients.map { Output.sendMessage($0.id, .message(delivered), reliable: message.reliable) }
        if message.reliable {
            outputs.append(.acknowledgeWhenWritten(DeliveryReceipt(sender: id, messageID: message.id, recipients: recipients)))
        }
        return outputs
    }
}
