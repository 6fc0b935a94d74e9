import CowatchCore

/// What the room makes this player open: the room's switches (`open`) judged by the daemon's
/// `OpenPolicy` (`--allow-scheme`, `--accept-open`), offers waiting for `accept_open`, and the
/// check of this participant's own `open` requests.
///
/// A switch this player does not open (refused, or offered and not yet accepted) leaves it on
/// its current media, paused and left alone by the coordinator; it reports itself unable to play
/// (`can_play` false, so the group does not wait for it) until the next switch, and the group
/// carries on.
///
/// Threading: actor-isolated to `RoomSession`.
extension RoomSession {
    /// The room's activity is `activity`: the player side judges it (load its media unless the
    /// player has it, offer it, or refuse it; see `PlayerSide.roomSwitched`). The room's first
    /// media (id 0) is each participant's own copy, from its own `--media`: never replaced, so a
    /// late joiner never opens the creator's path or URL. `playerHas`: what the player really has
    /// loaded, when it is not what this daemon last loaded (mpv moved through its own list).
    func activityChanged(_ activity: Activity, playerHas: String? = nil) {
        // The opener's role: from the last participant list, or an op/deop announced since.
        let participants = coordinator.participants.map { participant in
            var updated = participant
            if let role = recentRoles[participant.name], participant.role != .owner { updated.role = role }
            return updated
        }
        let now = clock.now()
        // Media we lack plays streamed from a member who offers it (RoomSession+Stream.swift).
        if let lacked = lackedMedia(for: activity) {
            if streamIfOffered(activity) { return }
            if lacked.entry == nil, !lacked.differs { return lackingFirstMedia(activity) }
        } else if streams.receiving != nil {
            stopReceiving()
        }
        switch playlistFile(for: activity) {
        case .have(let path):
            carryOut(playerSide.roomSwitched(to: activity, ownCopy: path, playerHas: playerHas ?? media.current, now: now), now: now)
        case .lack(let name):
            carryOut(playerSide.roomSwitched(to: activity, lacking: name), now: now)
        case .notAFile:
            carryOut(playerSide.roomSwitched(to: activity, playerHas: playerHas ?? media.current, participants: participants, now: now), now: now)
        }
    }

    /// `accept_open`: opens the offered media. Errors: `invalid-request` when nothing is offered,
    /// or the room switched again since.
    func acceptOpen() throws(CowatchError) {
        let now = clock.now()
        carryOut(try playerSide.acceptOffer(roomActivityID: coordinator.activity.id, now: now), now: now)
    }

    /// Our own `open`: fails at once when this player would not open it either (a network URL
    /// whose scheme `--allow-scheme` leaves out). Local paths go on to the server, which refuses
    /// them for every room. Errors: `open-refused`.
    func checkOwnOpen(_ open: ControlCommand.OpenRequest) throws(CowatchError) {
        let policy = room.openPolicy
        let urls = [open.url] + (open.fallbackURL.map { [$0] } ?? [])
        guard OpenPolicy.networkScheme(of: open.url) != nil, !urls.contains(where: policy.allows) else { return }
        throw CowatchError(.openRefused, "this player would not open \(open.url) itself: \(policy.whyNot(open.url))")
    }

    /// `room.open_offer` in `get_status`: the switch waiting for `accept_open`, or null.
    func openOfferStatus() -> OpenOffer? {
        guard case .offered(let activity, let url) = playerSide.media else { return nil }
        return OpenOffer(id: activity.id, url: url, title: activity.displayTitle, by: activity.openedBy)
    }
}
