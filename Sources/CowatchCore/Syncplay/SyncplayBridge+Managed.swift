/// Making the Syncplay room a managed one from Cowatch (`cowatch manage`), as Syncplay's "Create
/// managed room" does: the daemon claims the room's base name with a new password, the server
/// names the managed room (`+base:HASH`), the daemon moves there with its timeline and its shared
/// list and claims it again; the answer (`managed`) comes once the server says we control it.
extension SyncplayBridge {
    /// Where our `manage` stands.
    enum Managing: Sendable, Equatable {
        /// The claim on the base name is out; the server names the room next.
        case asking
        /// We moved into the room it made and claimed it; its verdict is next.
        case claiming(SyncplayControlledRoom)
    }

    /// Make the room managed with `password` (`AB-123-456`, from the shell's random source).
    /// In a managed room this daemon already controls with a password it has, the answer is that
    /// room, at once (`created` false); while one `manage` is on its way, another waits for its
    /// answer (nothing more is sent). Errors: `not-in-room` before the welcome; `unsupported`
    /// from a server without managed rooms; `invalid-argument` for a malformed password.
    public mutating func manage(password: String, now: Double) throws(CowatchError) -> [Action] {
        guard welcomed, client.phase == .joined else { throw .notInSyncplayRoomYet() }
        if SyncplayManagedRoom.parse(client.room) != nil, controlling, let known = client.controlPassword {
            return [.managed(SyncplayControlledRoom(room: client.room, password: known, created: false))]
        }
        guard managing == nil else { return [] }
        let actions = try client.manage(password: password)
        managing = .asking
        return translate(actions, now: now)
    }

    /// The server made the room and the client moved there: keep it for the reconnects, and carry
    /// the shared list along (a new room has none; Syncplay's client re-uploads its own too).
    mutating func managedRoomCreated(room: String, password: String) -> [Action] {
        managing = .claiming(SyncplayControlledRoom(room: room, password: password, created: true))
        controlling = false
        var actions: [Action] = [.managedRoomCreated(room: room, password: password)]
        if !sharedNames.isEmpty {
            carryingList = true
            actions.append(.syncplay([.set([.playlistChange(files: sharedNames, user: nil)])]))
            if let sharedIndex { actions.append(.syncplay([.set([.playlistIndex(index: sharedIndex, user: nil)])])) }
        }
        return actions
    }

    /// The server's verdict on a claim of ours.
    mutating func claimAnswered(_ success: Bool) -> [Action] {
        switch managing {
        case .asking? where !success:
            managing = nil
            return [.manageRefused(.syncplayManageRefused())]
        case .claiming(let made)? where made.room == client.room:
            managing = nil
            return [success ? .managed(made) : .manageRefused(.syncplayManageRefused())]
        default:
            return []
        }
    }

    /// While we carry our list into the new room, the server's word on the room's list from
    /// nobody (the new room's empty one, said as we entered) is not the room's: ours is on its way.
    mutating func skipsNewRoomList(by: String?) -> Bool {
        guard carryingList else { return false }
        if by == nil { return true }
        if by == client.username { carryingList = false }
        return false
    }
}

extension CowatchError {
    /// `not-permitted`: the Syncplay server did not let us make or claim the managed room.
    static func syncplayManageRefused() -> CowatchError {
        CowatchError(.notPermitted, "the Syncplay server refused to make this room managed")
    }

    /// `unsupported`: the Syncplay server says it has no managed rooms.
    static func syncplayNoManagedRooms() -> CowatchError {
        CowatchError(.unsupported, "this Syncplay server has no managed rooms")
    }

    /// `not-in-room`: the Syncplay server has not welcomed us (or said where the room is) yet.
    public static func notInSyncplayRoomYet() -> CowatchError {
        CowatchError(.notInRoom, "not in the Syncplay room yet")
    }

    /// `not-in-room`: no connection to the Syncplay server is up, or it ended before it answered.
    public static func syncplayNotConnected(_ detail: String = "not connected to the Syncplay server") -> CowatchError {
        CowatchError(.notInRoom, detail)
    }

    /// `timeout`: the Syncplay server did not make the managed room within `seconds`.
    public static func syncplayManageTimedOut(after seconds: Double) -> CowatchError {
        CowatchError(.timeout, "the Syncplay server did not make the managed room within \(Int(seconds)) s")
    }
}
