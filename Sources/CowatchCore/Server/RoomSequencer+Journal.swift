/// The journal on the server (GroupSessionJournal): attachments announced on the room
/// connection, their bytes moved on transfer connections of their own.
///
/// A transfer connection's first line is `transfer`: the participant's room, name and the
/// session token of its room connection, which must be in the room now (the token proves it is
/// that participant; the room's secret was proved when that connection joined). From then on the
/// connection leaves the handshake's admission (deadlines, flood budget) and is bounded by the
/// journal's own limits (transfers per participant and in total; sizes and quotas).
///
/// Attachments stay when their uploader leaves, and go when the room empties. A late joiner
/// gets the room's list after its welcome.
///
/// Threading: part of `RoomSequencer` (a value type; one owner).
extension RoomSequencer {
    /// The first line of a transfer connection.
    mutating func transferRequested(_ request: TransferRequest, from id: ConnectionID, now: Double) -> [Output] {
        guard handshakes[id] == nil, joined[id] == nil, !journal.isTransfer(id) else {
            return refuse(id, CowatchError(.protocolViolation, "transfer is the first line of a connection of its own"), now: now)
        }
        guard configuration.journal.enabled else {
            return refuse(id, CowatchError(.unsupported, "this server keeps no attachments (--no-attachments)"), now: now)
        }
        if let lockout = admission.authLockout(of: id, room: request.room, name: request.name, now: now) {
            return refuse(id, lockout, now: now)
        }
        guard tokens.verify(request.token, room: request.room, name: request.name),
            let member = rooms[request.room]?.playback.member(named: request.name), let membership = joined[member],
            RoomSecret.matches(membership.token, request.token)
        else {
            // Counted like a wrong room secret: answered late, and a name that keeps guessing
            // tokens from one address is locked out (a whole address only when it floods).
            admission.authFailed(
                id, room: request.room, name: request.name,
                error: CowatchError(.authFailed, "a transfer needs the session token of a participant in the room"), now: now)
            return []
        }
        guard membership.features.contains(WireFeature.journal) else {
            return refuse(id, CowatchError(.unsupported, "the journal was not negotiated on the room connection"), now: now)
        }
        // From here the journal's limits bound this connection, not the handshake's; its
        // address still counts (transfers and bytes per address).
        let address = admission.address(of: id) ?? "unknown"
        admission.disconnected(id)
        do {
            switch request.kind {
            case .upload:
                let attachment = Attachment(
                    id: request.id, name: request.fileName ?? "attachment", size: request.size ?? 0, from: request.name,
                    meta: request.meta)
                switch try journal.beginUpload(attachment, room: request.room, address: address, on: id) {
                case .receive(let size, let resume):
                    return [.receiveUpload(id, id: request.id, size: size, resume: resume)]
                case .stored(let stored, let added):
                    return [.send(id, .transferDone(stored)), .close(id)] + (added ? announce(stored, in: request.room) : [])
                }
            case .download:
                let attachment = try journal.beginDownload(
                    request.id, offset: request.offset, room: request.room, participant: request.name, address: address, on: id)
                return [.sendDownload(id, id: attachment.id, size: attachment.size, offset: request.offset)]
            }
        } catch {
            return [.send(id, .error(code: error.code.rawValue, message: error.message)), .close(id)]
        }
    }

    /// The shell received the whole upload on `id` and checked its SHA-256 (`verified`).
    /// Announces it to the room, or discards it (`hash-mismatch`, or its room emptied meanwhile).
    public mutating func uploadFinished(_ id: ConnectionID, verified: Bool, now: Double) -> [Output] {
        guard verified else {
            let rejected = journal.uploadRejected(on: id)
            return [
                .send(id, .error(code: CowatchError.Code.hashMismatch.rawValue, message: "the bytes received do not have the announced SHA-256; discarded")),
                .close(id),
            ] + (rejected.map { journal.isUnreferenced($0) ? [.deleteStored($0)] : [] } ?? [])
        }
        let pending = journal.transfers[id]
        let roomAlive = pending.map { rooms[$0.room] != nil } ?? false
        guard let done = journal.uploadCompleted(on: id, roomAlive: roomAlive) else {
            let orphan = pending.flatMap { journal.isUnreferenced($0.id) ? Output.deleteStored($0.id) : nil }
            return [
                .send(id, .error(code: CowatchError.Code.notInRoom.rawValue, message: "the room emptied before the upload ended; discarded")),
                .close(id),
            ] + (orphan.map { [$0] } ?? [])
        }
        return [.send(id, .transferDone(done.attachment)), .close(id)] + announce(done.attachment, in: done.room)
    }

    /// The shell's upload on `id` stopped after `received` bytes (the peer went away, or moved
    /// bytes too slowly): it holds those bytes, for a resume by the same participant.
    public mutating func uploadInterrupted(_ id: ConnectionID, received: Int) {
        journal.uploadInterrupted(on: id, received: received)
    }

    /// `name` is no longer in `room`: its uploads there are given up (issue 22: a reservation
    /// goes with its owner).
    mutating func uploaderLeft(_ name: String, room: String) -> [Output] {
        let (close, delete) = journal.participantLeft(name, room: room)
        return close.map(Output.close) + delete.map(Output.deleteStored)
    }

    /// `attachment_added` to everyone in `room` who speaks the journal (the uploader included).
    func announce(_ attachment: Attachment, in room: String) -> [Output] {
        members(of: room, speaking: WireFeature.journal).map {
            .sendMessage($0.id, .attachmentAdded(attachment, history: false), reliable: true)
        }
    }

    /// `detach`: the adder, or anyone in an unmanaged room, or an owner or operator.
    mutating func detach(
        _ attachmentID: String, requestID: Int, from id: ConnectionID, _ membership: Joined, role: Role, managed: Bool
    ) -> [Output] {
        guard membership.features.contains(WireFeature.journal) else { return [.send(id, .unsupported(type: "detach"))] }
        guard let attachment = journal.attachments(in: membership.room).first(where: { $0.id == attachmentID }) else {
            return [.send(id, .refused(
                actionID: requestID, code: CowatchError.Code.notFound.rawValue,
                message: "room \(membership.room) has no attachment \(attachmentID.prefix(12))…"))]
        }
        guard !managed || role.isPrivileged || attachment.from == membership.name else {
            return [.send(id, .refused(
                actionID: requestID, code: CowatchError.Code.notPermitted.rawValue,
                message: "in this managed room only \(attachment.from), the owner and operators may detach \(attachment.name)"))]
        }
        _ = journal.remove(attachmentID, from: membership.room)
        var outputs: [Output] = members(of: membership.room, speaking: WireFeature.journal).map { member in
            .sendMessage(
                member.id, .attachmentRemoved(id: attachmentID, by: membership.name, requestID: member.id == id ? requestID : nil),
                reliable: true)
        }
        if journal.isUnreferenced(attachmentID) { outputs.append(.deleteStored(attachmentID)) }
        return outputs
    }
}
