/// Ending a room, naming operators and removing participants: what roles allow.
extension RoomSequencer {
    /// Ends the activity for everyone: all hear who ended it, then every connection is closed and
    /// the room forgotten (its secret and roles too).
    mutating func end(_ roomName: String, by name: String, now: Double) -> [Output] {
        guard let room = rooms[roomName] else { return [] }
        removeRoom(roomName)
        chatHistory[roomName] = nil
        endedRooms[roomName] = (name, now + configuration.endedRoomMemory)
        records[roomName] = nil
        // A new evening starts afresh: nobody is held back by a kick from the one that ended.
        kicked[roomName] = nil
        var outputs: [Output] = []
        for member in room.playback.memberIDs {
            joined[member] = nil
            admission.disconnected(member)
            outputs.append(.send(member, .ended(by: name)))
            outputs.append(.close(member))
        }
        return outputs + [.saveRecords]
    }

    private func notPermitted(_ id: ConnectionID, _ message: String) -> [Output] {
        [.send(id, .refused(actionID: nil, code: CowatchError.Code.notPermitted.rawValue, message: message))]
    }

    /// Owner only: `name`, who must be in the room, becomes an operator (bound to its current
    /// session token) or a member again.
    mutating func setRole(of name: String, to role: Role, by id: ConnectionID, _ membership: Joined, now: Double) -> [Output] {
        guard var room = rooms[membership.room] else { return [] }
        guard room.playback.role(of: id) == .owner else { return notPermitted(id, "only the room's owner names operators") }
        guard role != .owner else { return notPermitted(id, "a room has one owner") }
        guard records[membership.room]?.owner != name else { return notPermitted(id, "the owner stays the owner") }
        let target = room.playback.member(named: name)
        if role == .operator {
            guard let target, let token = joined[target]?.token else {
                return [.send(id, .refused(actionID: nil, code: CowatchError.Code.invalidArgument.rawValue, message: "nobody named \(name) is in the room"))]
            }
            guard (records[membership.room]?.operators.count ?? 0) < configuration.maxOperators else {
                return notPermitted(id, "a room has at most \(configuration.maxOperators) operators")
            }
            records[membership.room]?.operators[name] = SessionTokens.id(of: token)
        } else {
            records[membership.room]?.operators[name] = nil
        }
        if let target { room.playback.setRole(role, of: target) }
        store(room, as: membership.room)
        let notice = Notice(actor: membership.name, action: role == .operator ? .op : .deop, others: [name])
        return room.playback.broadcast(.notice(notice)).map(Self.output) + [.saveRecords]
    }

    /// Owners and operators: removes `name` and keeps its session token and its name out for
    /// `kickCooldown` — not its address, which a household or a dormitory shares.
    /// Only the owner may remove an operator; nobody removes the owner.
    mutating func kick(_ name: String, by id: ConnectionID, _ membership: Joined, now: Double) -> [Output] {
        guard let room = rooms[membership.room] else { return [] }
        let role = room.playback.role(of: id) ?? .member
        guard role.isPrivileged else { return notPermitted(id, "only the room's owner and operators may remove someone") }
        guard let target = room.playback.member(named: name) else {
            return [.send(id, .refused(actionID: nil, code: CowatchError.Code.invalidArgument.rawValue, message: "nobody named \(name) is in the room"))]
        }
        let targetRole = room.playback.role(of: target) ?? .member
        guard targetRole != .owner, role == .owner || targetRole == .member else {
            return notPermitted(id, "only the owner may remove an operator, and nobody the owner")
        }
        let until = now + configuration.kickCooldown
        kicked[membership.room, default: [:]]["name:" + name] = until
        if let token = joined[target]?.token { kicked[membership.room, default: [:]]["token:" + SessionTokens.id(of: token)] = until }
        records[membership.room]?.operators[name] = nil
        var outputs: [Output] = [
            .send(target, .error(code: CowatchError.Code.kicked.rawValue, message: "\(membership.name) removed you from room \(membership.room); you may join again in \(Int(configuration.kickCooldown.rounded(.up))) s"))
        ]
        admission.disconnected(target)
        if let gone = joined.removeValue(forKey: target) {
            outputs += leave(target, gone, now: now, notice: Notice(actor: membership.name, action: .kick, others: [name]))
        }
        return outputs + [.close(target), .saveRecords]
    }
}
