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
            if let url = urlToCheck(activity, playerHas: playerHas ?? media.current, participants: participants) {
                return checkThenSwitch(to: activity, url: url, playerHas: playerHas, participants: participants)
            }
            carryOut(playerSide.roomSwitched(to: activity, playerHas: playerHas ?? media.current, participants: participants, now: now), now: now)
        }
    }

    /// The URL of a switch by someone else that this player would open at once: it is tried in
    /// a throwaway player first (issue 22, item 8). Nil when there is nothing to check (our own
    /// switch, media the player has, an offer or a refusal, no probe).
    private func urlToCheck(_ activity: Activity, playerHas current: String, participants: [ParticipantInfo]) -> String? {
        guard probe != nil, activity.id != 0, activity.openedBy != configuration.name,
            activity.url != current, activity.fallbackURL != current,
            case .open(let url) = room.openPolicy.decide(activity, me: configuration.name, participants: participants)
        else { return nil }
        return url
    }

    /// Tries `url` (and the switch's fallback) in a throwaway player with mpv's safety on, then
    /// switches — or, when it does not open (a list of other URLs, an EDL, nothing playable),
    /// stays on the current media and stands aside with the reason: a stranger's switch never
    /// leaves this player with nothing. The result counts only if the room is still on
    /// `activity` by then.
    private func checkThenSwitch(to activity: Activity, url: String, playerHas: String?, participants: [ParticipantInfo]) {
        guard checkingSwitch != activity.id, let probe else { return }
        checkingSwitch = activity.id
        let timeout = min(configuration.openTimeout, 8)
        Task {
            var failure = await probe.check(url, timeout: timeout)
            if failure != nil, let fallback = activity.fallbackURL, fallback != url, room.openPolicy.allows(fallback),
                await probe.check(fallback, timeout: timeout) == nil
            {
                failure = nil
            }
            guard checkingSwitch == activity.id else { return }
            checkingSwitch = nil
            guard coordinator.activity.id == activity.id else { return }
            let now = clock.now()
            if let failure {
                let error = CowatchError(
                    .openRefused,
                    "not opening \(activity.displayTitle) from \(activity.openedBy ?? "someone"): \(failure.message); staying on what this player has")
                carryOut(playerSide.roomSwitchRefused(activity, error: error), now: now)
            } else {
                carryOut(playerSide.roomSwitched(to: activity, playerHas: playerHas ?? media.current, participants: participants, now: now), now: now)
            }
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
