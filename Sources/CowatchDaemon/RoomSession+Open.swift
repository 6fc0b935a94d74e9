import CowatchClient
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
    /// The room's activity is `activity`: load its media unless the player has it. The room's
    /// first media (id 0) is each participant's own copy, from its own `--media`: never
    /// replaced, so a late joiner never opens the creator's path or URL.
    func activityChanged(_ activity: Activity) {
        let current = media.current
        if activity.id == 0 || activity.url == current || activity.fallbackURL == current {
            if openOffer != nil || refusedActivity != nil {
                // We stood aside from a switch; the room is back on media this player has.
                openOffer = nil
                refusedActivity = nil
                cannotPlay = false
                updateStatus(now: monotonicNow())
            }
            if load == nil { reportMedia() }
            return
        }
        // Already judged (a reconnect's welcome repeats the room's activity): say nothing twice.
        if let offer = openOffer, offer.activity == activity { return }
        if let refused = refusedActivity, refused == activity { return }
        openOffer = nil
        refusedActivity = nil
        cannotPlay = false
        // The opener's role: from the last participant list, or an op/deop announced since.
        let participants = coordinator.participants.map { participant in
            var updated = participant
            if let role = recentRoles[participant.name], participant.role != .owner { updated.role = role }
            return updated
        }
        switch room.openPolicy.decide(activity, me: configuration.name, participants: participants) {
        case .open(let url):
            startLoading(activity, url: url)
        case .ask(let url):
            offer(activity, url: url)
        case .refuse(let error):
            refusedActivity = activity
            standAside()
            logger.warning("\(error.message)")
            publishError(error)
            showOnScreen(error.message, milliseconds: 6000)
        }
    }

    /// `--accept-open ask`: tell the person, and wait for `accept_open`.
    private func offer(_ activity: Activity, url: String) {
        openOffer = (activity, url)
        standAside()
        let by = activity.openedBy ?? "someone"
        events.publish(ControlEvent(name: ControlEvent.Name.openOffer, fields: [
            "by": .string(by), "url": .string(url), "title": .string(activity.displayTitle),
            "id": .number(Double(activity.id)),
        ]))
        showOnScreen("\(by) wants everyone to open \(url) — cowatch accept to open it", milliseconds: 10_000)
    }

    /// Not opening the room's media: hold the player where it is, leave it alone, and let the
    /// group go on without us.
    private func standAside() {
        // A switch still loading is given up: this one replaced it.
        if load != nil { abandonLoading() }
        forgetSeeks()
        apply(.setPaused(true))
        cannotPlay = true
        updateStatus(now: monotonicNow())
    }

    /// `accept_open`: opens the offered media. Errors: `invalid-request` when nothing is offered.
    func acceptOpen() throws(CowatchError) {
        guard let offer = openOffer else {
            throw CowatchError(.invalidRequest, "nothing to accept: no switch is waiting (see --accept-open)")
        }
        guard offer.activity.id == coordinator.activity.id else {
            openOffer = nil
            throw CowatchError(.invalidRequest, "nothing to accept: the room has switched again since")
        }
        openOffer = nil
        cannotPlay = false
        startLoading(offer.activity, url: offer.url)
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
    func openOfferJSON() -> JSONValue {
        guard let offer = openOffer else { return .null }
        return [
            "id": .number(Double(offer.activity.id)), "url": .string(offer.url),
            "title": .string(offer.activity.displayTitle), "by": offer.activity.openedBy.map(JSONValue.string) ?? .null,
        ]
    }
}
