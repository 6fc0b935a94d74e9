/// Ending a room, naming operators and removing participants: what roles allow.
///
/// The server answers each of these requests to its sender exactly once: with a `refused`, or by
/// carrying it out (the notice everyone hears, or `ended`). A sender that negotiated
/// `request-ids` and gave the request an id hears that id back: as the refusal's `action_id`, or
/// in a `done` after the notice (for `end`, before `ended`). Anyone else gets the answers without
/// an id, as before the feature, and matches them in the order it sent its requests.
extension RoomSequencer {
    /// Who asked for an end, a role or a kick, and the id its answer names (nil: none given, or
    /// `request-ids` not negotiated).
    struct Request {
        var connection: ConnectionID
        var id: Int?
    }

    /// The id a request's answer names: the one given, if the connection negotiated `request-ids`.
    func answerID(_ id: Int?, _ membership: Joined) -> Int? {
        membership.features.contains(WireFeature.requestIDs) ? id : nil
    }

    /// `request` was carried out: `done` to its sender, when it gave an id.
    private func done(_ request: Request?) -> [Output] {
        guard let request, let id = request.id else { return [] }
        return [.send(request.connection, .done(id: id))]
    }

    private func refused(_ request: Request, _ code: CowatchError.Code, _ message: String) -> [Output] {
        [.send(request.connection, .refused(actionID: request.id, code: code.rawValue, message: message))]
    }

    func notPermitted(_ request: Request, _ message: String) -> [Output] {
        refused(request, .notPermitted, message)
    }

    /// Ends the activity for everyone: all hear who ended it, then every connection is closed and
    /// the room forgotten (its secret and roles too). `request`: the `end` this answers.
    mutating func end(_ roomName: String, by name: String, answering request: Request? = nil, now: Double) -> [Output] {
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
            if member == request?.connection { outputs += done(request) }
            outputs.append(.send(member, .ended(by: name)))
            outputs.append(.close(member))
        }
        return outputs + [.saveRecords]
    }

    /// Owner only: `name`, who must be in the room, becomes an operator (bound to its current
    /// session token) or a member again.
    mutating func setRole(of name: String, to role: Role, by request: Request, _ membership: Joined, now: Double) -> [Output] {
        guard var room = rooms[membership.room] else { return [] }
        let id = request.connection
        guard room.playback.role(of: id) == .owner else { return notPermitted(request, "only the room's owner names operators") }
        guard role != .owner else { return notPermitted(request, "a room has one owner") }
        guard records[membership.room]?.owner != name else { return notPermitted(request, "the owner stays the owner") }
        let target = room.playback.member(named: name)
        if role == .operator {
            guard let target, let token = joined[target]?.token else {
                return refused(request, .invalidArgument, "nobody named \(name) is in the room")
            }
            guard (records[membership.room]?.operators.count ?? 0) < configuration.maxOperators else {
                return notPermitted(request, "a room has at most \(configuration.maxOperators) operators")
            }
            records[membership.room]?.operators[name] = SessionTokens.id(of: token)
        } else {
            records[membership.room]?.operators[name] = nil
        }
        if let target { room.playback.setRole(role, of: target) }
        store(room, as: membership.room)
        let notice = Notice(actor: membership.name, action: role == .operator ? .op : .deop, others: [name])
        return room.playback.broadcast(.notice(notice)).map(Self.output) + done(request) + [.saveRecords]
    }

    /// Owners and operators: removes `name` and keeps its session token and its name out for
    /// `kickCooldown` — not its address, which a household or a dormitory shares.
    /// Only the owner may remove an operator; nobody removes the owner.
    mutating func kick(_ name: String, by request: Request, _ membership: Joined, now: Double) -> [Output] {
        guard let room = rooms[membership.room] else { return [] }
        let role = room.playback.role(of: request.connection) ?? .member
        guard role.isPrivileged else { return notPermitted(request, "only the room's owner and operators may remove someone") }
        guard let target = room.playback.member(named: name) else {
            return refused(request, .invalidArgument, "nobody named \(name) is in the room")
        }
        let targetRole = room.playback.role(of: target) ?? .member
        guard targetRole != .owner, role == .owner || targetRole == .member else {
            return notPermitted(request, "only the owner may remove an operator, and nobody the owner")
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
        return outputs + done(request) + [.close(target), .saveRecords]
    }
}
