/// Switching media: the room's switches judged by the open policy, offers waiting for
/// `accept_open`, and the load of the room's media with its fallback and deadline (`MediaLoad`).
///
/// A switch this player does not open (refused, or offered and not yet accepted) leaves it on
/// its current media, paused and left alone; it reports itself unable to play until the next
/// switch, and the group carries on.
extension PlayerSide {
    /// The room's activity is (now) `activity`; the player has, or is opening, `current`.
    /// The room's first media (id 0) is each participant's own copy: never replaced, so a late
    /// joiner never opens the creator's path or URL. A switch already judged (a reconnect's
    /// welcome repeats the room's activity) is not judged twice. `participants` are the room's,
    /// with roles as last known, for the open policy (`--accept-open operators`).
    public mutating func roomSwitched(
        to activity: Activity, playerHas current: String, participants: [ParticipantInfo], now: Double
    ) -> [Action] {
        if activity.id == 0 || activity.url == current || activity.fallbackURL == current {
            var actions: [Action] = []
            if media.stoodAside {
                // We stood aside from a switch; the room is back on media this player has.
                media = .roomMedia
                actions.append(.statusChanged)
            }
            if !media.isLoading { actions.append(.reportMedia) }
            return actions
        }
        switch media {
        case .offered(let offered, _) where offered == activity: return []
        case .refused(let refused) where refused == activity: return []
        default: break
        }
        switch configuration.openPolicy.decide(activity, me: configuration.name, participants: participants) {
        case .open(let url):
            return startLoading(activity, url: url, now: now)
        case .ask(let url):
            let by = activity.openedBy ?? "someone"
            return standAside(as: .offered(activity, url: url)) + [
                .offered(activity, url: url),
                .show("\(by) wants everyone to open \(url) — cowatch accept to open it", milliseconds: 10_000),
            ]
        case .refuse(let error):
            return standAside(as: .refused(activity)) + [
                .warning(error.message), .error(error), .show(error.message, milliseconds: 6000),
            ]
        }
    }

    /// The room switched to `activity`, and the daemon's check of its media before loading it
    /// (a switch by someone else) failed: this player stays on what it has and stands aside
    /// until the next switch, saying why (`error`, `open-refused`).
    public mutating func roomSwitchRefused(_ activity: Activity, error: CowatchError) -> [Action] {
        standAside(as: .refused(activity)) + [.warning(error.message), .error(error), .show(error.message, milliseconds: 6000)]
    }

    /// The room switched to a playlist entry that is a local file, and this daemon found its own
    /// copy at `path` (by the entry's identity): opened as our own media, whoever added it (no
    /// open policy applies to a file of ours). `playerHas` is what the player has now.
    public mutating func roomSwitched(to activity: Activity, ownCopy path: String, playerHas current: String, now: Double) -> [Action] {
        if path == current {
            var actions: [Action] = []
            if media.stoodAside {
                media = .roomMedia
                actions.append(.statusChanged)
            }
            if !media.isLoading { actions.append(.reportMedia) }
            return actions
        }
        var own = activity
        own.url = path
        own.fallbackURL = nil
        return startLoading(own, url: path, now: now)
    }

    /// The room switched to a playlist entry that is a local file this daemon does not have
    /// (`name`: the entry's file name): the player stands aside, and the room (told by the
    /// availability report) goes on without us for that entry.
    /// `quietly`: the caller says why itself (a film streamed to us that its sharer withdrew).
    public mutating func roomSwitched(to activity: Activity, lacking name: String, quietly: Bool = false) -> [Action] {
        guard !quietly else { return standAside(as: .refused(activity)) }
        let text = "you do not have \(name): the room plays it without you (cowatch playlist pick, or --media-dir)"
        return standAside(as: .refused(activity)) + [.warning(text), .show(text, milliseconds: 8000)]
    }

    /// `accept_open`: opens the offered media, the room's activity being `roomActivityID`.
    /// Errors: `invalid-request` when nothing is offered, or when the room switched again since
    /// (the offer is then dropped).
    public mutating func acceptOffer(roomActivityID: Int, now: Double) throws(CowatchError) -> [Action] {
        guard case .offered(let activity, let url) = media else {
            throw CowatchError(.invalidRequest, "nothing to accept: no switch is waiting (see --accept-open)")
        }
        guard activity.id == roomActivityID else {
            media = .failed
            throw CowatchError(.invalidRequest, "nothing to accept: the room has switched again since")
        }
        return startLoading(activity, url: url, now: now)
    }

    /// mpv refused the `loadfile` of the load under way (`reason` is its wording): the fallback,
    /// or failing.
    public mutating func loadRefused(_ reason: String, now: Double) -> [Action] {
        advanceLoad { $0.loadRefused(reason, now: now) }
    }

    /// Loads `url` for `activity` (its fallback, when the policy allows it, tried once if this
    /// fails); the player is held until the group starts together.
    mutating func startLoading(_ activity: Activity, url: String, now: Double) -> [Action] {
        let fallback = activity.fallbackURL.flatMap { configuration.openPolicy.allows($0) ? $0 : nil }
        var load = MediaLoad(url: url, fallback: url == activity.url ? fallback : nil, timeout: configuration.openTimeout)
        forgetSeeks()
        let started = load.start(now: now)
        media = .loading(load, for: activity)
        return [.holdPaused] + follow(started, activity: activity) + [.statusChanged]
    }

    /// Not opening the room's media: a switch still loading is given up (this one replaced
    /// it); the player is held where it is and left alone, and the group goes on without us.
    private mutating func standAside(as state: Media) -> [Action] {
        media = state
        forgetSeeks()
        return [.holdPaused, .statusChanged]
    }

    /// Runs `step` on the load under way and follows what it says (nothing when not loading).
    mutating func advanceLoad(_ step: (inout MediaLoad) -> [MediaLoad.Action]) -> [Action] {
        guard case .loading(var load, let activity) = media else { return [] }
        let steps = step(&load)
        media = .loading(load, for: activity)
        return follow(steps, activity: activity)
    }

    /// The load's actions as the shell's.
    private mutating func follow(_ steps: [MediaLoad.Action], activity: Activity) -> [Action] {
        var actions: [Action] = []
        for step in steps {
            switch step {
            case .load(let url):
                loadLog.reset()
                actions.append(.load(url: url))
            case .tryingFallback(let error, let fallback):
                actions.append(.error(CowatchError(error.code, "\(error.message); trying the fallback \(fallback)")))
            case .finished(let url):
                media = .roomMedia
                actions += [.switched(url: url), .statusChanged, .reportMedia]
            case .failed(let error):
                media = .failed
                let message = "\(error.message) (\(activity.displayTitle)); the group goes on without this player"
                actions += [.error(CowatchError(error.code, message)), .statusChanged]
            }
        }
        return actions
    }
}
