/// The room's shared playlist (feature `playlist`): edits, availability and end-of-file reports
/// from participants, and the moves they cause.
///
/// The list lives in the room's record (`RoomRecord.playlist`), so it survives the room sleeping
/// and a server restart. Moving to an entry is the room's ordinary switch of activity
/// (`RoomPlayback.switchTo`, what `open` does): every participant gets the `applied` with the new
/// activity, those with the feature first get the `playlist` state naming it as the current
/// entry; the group holds at 0 until everyone has loaded it (`ready`), or said it lacks the entry
/// (excused, with a notice), bounded by `openTimeout` (laggards are left behind, with a notice);
/// then it starts after the list's countdown, at the same instant for everyone.
///
/// A participant without the feature keeps the single-media behaviour: it follows each switch
/// like any `open`, and its playlist messages (if it sends any) get `unsupported`.
///
/// Threading: part of `RoomSequencer` (a value type; one owner).
extension RoomSequencer {
    /// A seed for a shuffle: drawn from `playlistSeed` when configured (tests replay), else random.
    mutating func nextPlaylistSeed() -> UInt64 {
        guard let base = configuration.playlistSeed else { return UInt64.random(in: 0...UInt64.max) }
        playlistDraws &+= 1
        var random = PlaylistRandom(seed: base &+ playlistDraws)
        return random.next()
    }

    /// The members of `room` that speak the playlist.
    private func playlistMembers(of room: String) -> [ConnectionID] {
        members(of: room, speaking: WireFeature.playlist).map(\.id)
    }

    /// The list's state to everyone in `room` who speaks the playlist, with `change`; the
    /// editor's copy (`requester`) echoes its request id.
    private func broadcastPlaylist(
        _ room: String, change: PlaylistChange?, requester: (id: ConnectionID, requestID: Int)? = nil
    ) -> [Output] {
        guard let state = records[room]?.playlist.state else { return [] }
        return playlistMembers(of: room).map { member in
            .send(member, .playlist(state, change: change, requestID: member == requester?.id ? requester?.requestID : nil))
        }
    }

    /// What a joiner that speaks the playlist gets after its welcome: the list (with the current
    /// entry and the activity it plays as; the welcome carried the timeline).
    func playlistWelcome(_ id: ConnectionID, room: String) -> [Output] {
        guard let state = records[room]?.playlist.state else { return [] }
        return [.send(id, .playlist(state, change: nil, requestID: nil))]
    }

    // MARK: Messages

    mutating func playlistEdit(_ request: PlaylistEditRequest, from id: ConnectionID, _ membership: Joined, now: Double) -> [Output] {
        guard membership.features.contains(WireFeature.playlist) else { return [.send(id, .unsupported(type: "playlist_edit"))] }
        guard let room = rooms[membership.room], var playlist = records[membership.room]?.playlist else { return [] }
        guard admission.allowAction(from: id, in: membership.room, now: now) else {
            return [.send(id, .refused(
                actionID: request.id, code: CowatchError.Code.rateLimited.rawValue, message: "too many edits; wait a moment"))]
        }
        let outcome: PlaylistOutcome
        do {
            outcome = try playlist.apply(
                request, by: membership.name, role: room.playback.role(of: id) ?? .member, managed: room.playback.policy.managed,
                seed: nextPlaylistSeed())
        } catch {
            var outputs: [Output] = [.send(id, .refused(actionID: request.id, code: error.code.rawValue, message: error.message))]
            if error.code == .stalePlaylist { outputs += playlistWelcome(id, room: membership.room) }
            return outputs
        }
        records[membership.room]?.playlist = playlist
        return carryOut(outcome, in: membership.room, requester: (id, request.id), now: now) + [.saveRecords]
    }

    mutating func playlistHave(version: Int, have: [PlaylistEntry.ID], from id: ConnectionID, _ membership: Joined, now: Double) -> [Output] {
        guard membership.features.contains(WireFeature.playlist) else { return [.send(id, .unsupported(type: "playlist_have"))] }
        guard var room = rooms[membership.room], var playlist = records[membership.room]?.playlist else { return [] }
        // Relayed to everyone: the messenger's budget (a flapping client only spends its own).
        guard admission.allowMessage(bytes: 64 + 8 * have.count, from: id, now: now) else {
            return [.send(id, .refused(
                actionID: nil, code: CowatchError.Code.rateLimited.rawValue, message: "too many availability reports; wait a moment"))]
        }
        guard let availability = playlist.report(have: have, version: version, from: membership.name) else { return [] }
        records[membership.room]?.playlist = playlist
        var outputs = playlistMembers(of: membership.room).map { member in
            Output.send(member, .playlistAvailability(availability, version: playlist.version))
        }
        // One who lacks the entry the room plays is not waited for while it plays.
        if let current = playlist.current, playlist.playingActivity == room.playback.activity.id, playlist.lacks(membership.name, current) {
            outputs += room.playback.excuse([id], why: Self.lacking(current, in: playlist), now: now).map(Self.output)
            store(room, as: membership.room)
        }
        return outputs
    }

    mutating func playlistEnded(activity: Int, position: Double, from id: ConnectionID, _ membership: Joined, now: Double) -> [Output] {
        guard membership.features.contains(WireFeature.playlist) else { return [.send(id, .unsupported(type: "playlist_eof"))] }
        guard let room = rooms[membership.room], var playlist = records[membership.room]?.playlist else { return [] }
        let trusted = RoomPlaylist.mayEdit(
            role: room.playback.role(of: id) ?? .member, managed: room.playback.policy.managed, openEditing: playlist.openEditing)
        guard let outcome = playlist.endReported(
            activity: activity, position: position, roomActivity: room.playback.activity.id, timeline: room.playback.timeline,
            now: now, trusted: trusted, seed: nextPlaylistSeed())
        else { return [] }
        records[membership.room]?.playlist = playlist
        return carryOut(outcome, in: membership.room, requester: nil, now: now) + [.saveRecords]
    }

    /// A participant's `media` report: its duration counts toward the end of the room's media.
    mutating func playlistMediaReported(_ info: MediaInfo, activity: Int, room: String) {
        guard let roomActivity = rooms[room]?.playback.activity.id else { return }
        records[room]?.playlist.noteMediaDuration(info.duration, activity: activity, roomActivity: roomActivity)
    }

    // MARK: Moves

    /// Tells everyone the change, and moves the group if the outcome says so: a switch to the
    /// entry (the state first, so the new activity reads as the current entry; then the
    /// `applied`; then who is excused for lacking it), or a stop.
    private mutating func carryOut(
        _ outcome: PlaylistOutcome, in roomName: String, requester: (id: ConnectionID, requestID: Int)?, now: Double
    ) -> [Output] {
        guard var room = rooms[roomName], var playlist = records[roomName]?.playlist else { return [] }
        switch outcome.move {
        case nil:
            return broadcastPlaylist(roomName, change: outcome.change, requester: requester)
        case .stop:
            let stopped = room.playback.stop(now: now).map(Self.output)
            store(room, as: roomName)
            return broadcastPlaylist(roomName, change: outcome.change, requester: requester) + stopped
        case .start(let entryID, let openedBy):
            guard let entry = playlist.entry(entryID) else { return broadcastPlaylist(roomName, change: outcome.change, requester: requester) }
            let switched = room.playback.switchTo(
                RoomPlaylist.activity(for: entry, openedBy: openedBy), by: openedBy, countdown: playlist.countdown, now: now)
            playlist.started(entryID, activity: room.playback.activity.id)
            records[roomName]?.playlist = playlist
            let lacking = room.playback.memberIDs.filter { member in
                joined[member].map { playlist.lacks($0.name, entryID) } ?? false
            }
            let excused = room.playback.excuse(lacking, why: Self.lacking(entryID, in: playlist), now: now)
            store(room, as: roomName)
            return broadcastPlaylist(roomName, change: outcome.change, requester: requester) + switched.map(Self.output)
                + excused.map(Self.output)
        }
    }

    /// "does not have #3", the reason a member is not waited for.
    private static func lacking(_ entry: PlaylistEntry.ID, in playlist: RoomPlaylist) -> String {
        "does not have #\((playlist.index(of: entry) ?? 0) + 1)"
    }

    // MARK: Views

    /// A room's playlist (for logs and tests).
    public func playlist(of roomName: String) -> RoomPlaylist? { records[roomName]?.playlist }
}
