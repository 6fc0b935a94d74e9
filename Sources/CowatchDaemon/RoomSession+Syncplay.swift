import CowatchCore
import CowatchNet

/// `manage`: a Syncplay room made managed from Cowatch, as Syncplay's "Create managed room" does.
///
/// Threading: actor-isolated to `RoomSession`.
extension RoomSession {
    /// Makes the Syncplay room this daemon is in a managed room it controls, with a new random
    /// password, and returns once the server says it does: the room's name (others join it), its
    /// password (the controllers' secret, said only in this reply) and the link. In a managed room
    /// this daemon already controls, that room. The link's reconnects go to the new room and claim
    /// it with the password, kept in memory (`SyncplayLinkControl`). The person hears of it on the
    /// OSD and in the log, by the room's name only.
    /// Errors: `unsupported` in a Cowatch room (`CowatchError.manageNeedsSyncplayRoom`) or from a
    /// server without managed rooms; `not-in-room`; `not-permitted` (the server refused);
    /// `timeout`.
    func manageSyncplayRoom(timeout: Double) async throws(CowatchError) -> ManagedRoomReply {
        guard let syncplay = room.syncplay else { throw .manageNeedsSyncplayRoom() }
        guard isJoined else { throw .notInSyncplayRoomYet() }
        var random = SystemRandomNumberGenerator()
        let password = SyncplayManagedRoom.newPassword(using: &random)
        let made = try await syncplayControl.manage(password: password, timeout: max(10, timeout))
        var address = syncplay.address
        address.room = made.room
        if made.created {
            showOnScreen("this Syncplay room is managed now: others join \(made.room); you control it", milliseconds: 8000)
        }
        return ManagedRoomReply(room: made.room, password: made.password, link: address.link, created: made.created)
    }
}
