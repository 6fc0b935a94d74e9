/// The room's playlist as a participant follows it (`playlist` feature): the list the server
/// last sent, our edits and their answers, what this player can play, and its end-of-file.
///
/// The server sequences every edit and decides every advance; a participant only proposes. An
/// edit names the list's `version` and `current` as we have them, so one made on a list that
/// changed meanwhile is refused (`stale-playlist`) instead of touching the wrong entry.
///
/// Threading: part of `RoomCoordinator` (a value type; one owner).
extension RoomCoordinator {
    /// The server speaks the playlist feature on this connection.
    public var speaksPlaylist: Bool { features.contains(WireFeature.playlist) }

    /// The local user's edit, made on the list as we have it: the message to send and the id
    /// its answer carries (`actionApplied` once the server's new list names it, `actionRefused`
    /// when refused). Refused at once (`actionRefused` among the actions) before the welcome or
    /// any list (`not-in-room`), and when the server does not speak the feature (`unsupported`).
    public mutating func playlistEdit(_ edit: PlaylistEdit) -> (id: Int, actions: [Action]) {
        let id = takeActionID()
        guard welcomed, isJoined else {
            return (id, [.actionRefused(id: id, CowatchError(.notInRoom, "not in the room yet; try again in a moment"))])
        }
        guard speaksPlaylist else {
            return (id, [.actionRefused(id: id, CowatchError(.unsupported, "the room server has no shared playlist (an older server)"))])
        }
        let seen = playlist ?? PlaylistState()
        pendingEdits.insert(id)
        return (id, [.send(.playlistEdit(PlaylistEditRequest(id: id, version: seen.version, current: seen.current, edit: edit)))])
    }

    /// What this player can play of the list at `version` (ids of entries it found or may
    /// open): sent so that the room skips us for the rest and everyone sees who lacks what.
    /// Nothing when the list has moved on since (a newer state asks again).
    public func playlistHave(_ have: [PlaylistEntry.ID], version: Int) -> [Action] {
        guard welcomed, speaksPlaylist, let playlist, playlist.version == version else { return [] }
        return [.send(.playlistHave(version: version, have: Array(have.prefix(PlaylistState.maxEntries))))]
    }

    /// This player reached the end of the room's media at `position`: told to the room when the
    /// media is the playlist's current entry (the server decides whether the group moves on).
    public func playlistMediaEnded(position: Double) -> [Action] {
        guard welcomed, isJoined, speaksPlaylist, let playlist, playlist.activity == activity.id,
            position.isFinite, position >= 0
        else { return [] }
        return [.send(.playlistEnded(activity: activity.id, position: position))]
    }

    mutating func playlistReceived(_ state: PlaylistState, change: PlaylistChange?, requestID: Int?) -> [Action] {
        // A state older than the one we have (a reordering cannot happen on one connection, but
        // a reconnect may bring an old one first) changes nothing.
        if let playlist, state.version < playlist.version, requestID == nil { return [] }
        playlist = state
        var actions: [Action] = [.playlist(state, change: change)]
        if let requestID, pendingEdits.remove(requestID) != nil { actions.append(.actionApplied(id: requestID)) }
        return actions
    }

    mutating func playlistAvailabilityReceived(_ availability: PlaylistAvailability, version: Int) -> [Action] {
        guard var state = playlist, state.version == version else { return [] }
        if let index = state.availability.firstIndex(where: { $0.name == availability.name }) {
            state.availability[index] = availability
        } else {
            state.availability.append(availability)
        }
        playlist = state
        return [.playlist(state, change: nil)]
    }
}
