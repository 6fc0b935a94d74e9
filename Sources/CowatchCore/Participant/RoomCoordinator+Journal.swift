/// The journal on the daemon's side (GroupSessionJournal): detach requests and their answers.
/// The bytes move on transfer connections of their own (`TransferClient` in CowatchNet), never
/// on the room connection.
///
/// Threading: part of `RoomCoordinator` (a value type; one owner).
extension RoomCoordinator {
    /// Removes attachment `id` for everyone. Returns the request id our own
    /// `attachment_removed` will echo (or its refusal).
    /// Errors: `unsupported` when the server keeps no attachments.
    public mutating func detach(_ id: String, now: Double) throws(CowatchError) -> (id: Int, actions: [Action]) {
        guard features.contains(WireFeature.journal) else {
            throw CowatchError(.unsupported, "the room server keeps no attachments (it runs with --no-attachments, or is older)")
        }
        nextRequestID += 1
        pendingRequests[nextRequestID] = now
        return (nextRequestID, [.send(.detach(id: nextRequestID, attachment: id))])
    }

    mutating func attachmentRemoved(_ id: String, by: String, requestID: Int?) -> [Action] {
        var actions: [Action] = []
        if by == name, let requestID, pendingRequests.removeValue(forKey: requestID) != nil {
            actions.append(.actionApplied(id: requestID))
        }
        return actions + [.attachmentRemoved(id: id, by: by)]
    }
}
