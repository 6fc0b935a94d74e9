import CowatchCore
import CowatchNet

/// Control-socket commands that concern the room, and what `get_status` says about it.
///
/// While the session is `waiting` (connecting, or reconnecting after the server went away),
/// group actions are refused with `not-in-room` rather than queued: a queued pause that lands
/// seconds later, after the group moved on, would surprise everyone.
extension RoomSession {
    /// Turns a playback command into a group action and waits until the server applied it.
    func request(_ command: ControlCommand, seekTimeout: Double) async throws(CowatchError) {
        guard isJoined else {
            throw CowatchError(.notInRoom, "not in the room yet (\(machine.state.name))")
        }
        let now = clock.now()
        guard coordinator.referenceTime(atLocal: now) != nil else {
            // Without the room's clock an action could carry no deadline, and might land stale.
            throw CowatchError(.notInRoom, "not in step with the room's clock yet; try again in a moment")
        }
        // A player that does not have the room's media (it refused or could not open it) is no
        // guide to where the group is.
        let cannotPlay = !playerSide.media.canPlay
        let own = cannotPlay ? nil : player.shownPosition
        let here = own ?? coordinator.expectedPosition(atLocal: now) ?? 0
        let duration = (cannotPlay ? nil : player.duration) ?? .infinity
        let groupPlaying = coordinator.timelines.map { pair in
            pair.expected(at: coordinator.referenceTime(atLocal: now) ?? 0).playing || pair.current.playing
        } ?? false
        let request: (id: Int, actions: [RoomCoordinator.Action])
        var afterSending: () -> Void = {}
        switch command {
        case .play:
            request = coordinator.request(.play, position: here, now: now)
        case .pause:
            let frame = cannotPlay ? here : player.shownPosition ?? here
            request = coordinator.request(.pause, position: frame, now: now)
            // Sent first: the room hears it without waiting for our player. Ours pauses with the
            // others on the room's order when the link is quick, else at once.
            if !cannotPlay, !coordinator.pausesWithRoom(atLocal: now) { afterSending = { self.apply(.setPaused(true)) } }
        case .togglePause:
            return try await self.request(groupPlaying ? .pause : .play, seekTimeout: seekTimeout)
        case .seek(let seconds, let mode):
            let base = coordinator.expectedPosition(atLocal: now) ?? here
            let target = min(max(0, mode == .absolute ? seconds : base + seconds), duration)
            request = coordinator.request(.seek, position: target, from: base, now: now)
        case .speed(let rate):
            request = coordinator.request(.speed, position: nil, rate: rate, now: now)
        case .open(let open):
            try checkOwnOpen(open)
            try await checkOpens(open)
            let activity = Activity(
                url: open.url, title: open.title, type: open.type ?? coordinator.activity.type,
                fallbackURL: open.fallbackURL)
            request = coordinator.request(.open, position: nil, activity: activity, now: clock.now())
        default:
            throw CowatchError(.invalidRequest, "\(command.name) is not a group action")
        }
        try await awaitAnswer(
            request.id, kind: .action, sending: request.actions, timeout: seekTimeout,
            timedOut: CowatchError(.timeout, "the room server did not confirm the action in time"), sent: afterSending)
    }

    /// Our own `open` switches everyone: first make sure the media (or its fallback) opens at all,
    /// so a URL nobody can load leaves the room where it was. Errors: `media-unavailable`,
    /// `timeout` (the room stays on its media).
    private func checkOpens(_ open: ControlCommand.OpenRequest) async throws(CowatchError) {
        guard let probe else { return }
        // Bounded well within a control client's patience (10 s by default).
        let timeout = min(configuration.openTimeout, 8)
        let started = clock.now()
        guard var failure = await probe.check(open.url, timeout: timeout) else { return }
        // The probe's own FFmpeg lines (an HTTP status) reach our player's log, not the probe's.
        var libav = LoadFailureReason()
        for line in playerSide.libavLines(since: started) { libav.logged(line) }
        let explained = libav.explain(url: open.url, mpvReason: "loading failed")
        if failure.code == .mediaUnavailable, !failure.message.contains("HTTP error"),
            explained.message.contains("HTTP error")
        {
            failure = explained
        }
        if let fallback = open.fallbackURL, await probe.check(fallback, timeout: timeout) == nil { return }
        throw CowatchError(failure.code, "\(failure.message); nobody was switched, the room stays on \(coordinator.activity.displayTitle)")
    }

    /// `leave`: stop following the group; the player stays where it is; the others hear "left".
    func leave(timeout: Double) async throws(CowatchError) {
        try machine.checkLeave()
        mailbox.post(.leave)
        try await waitForSession(timeout: timeout) { $0.reason == .left }
    }

    /// `join`: after `leave`, an end or a removal, a new session aligned to the group.
    /// Errors: `timeout`; the server's refusal (`name-taken`, `kicked`, …) as soon as it comes.
    func join(timeout: Double) async throws(CowatchError) {
        if try machine.join(now: clock.now()) != nil {
            mailbox.post(.join)
            lastRefusal = nil
            publishSession()
        } else if machine.state == .joined {
            return
        }
        do throws(CowatchError) {
            try await waitForSession(timeout: timeout) { (state: SessionState) throws(CowatchError) -> Bool in
                if state == .joined { return true }
                // Out again, not by a dropped link (that retries by itself): the server refused us.
                if let reason = state.reason, reason != .serverGone, let refusal = lastRefusal { throw refusal }
                return false
            }
        } catch {
            // Still trying, because the server keeps refusing for now (`server-busy`: an address
            // locked out, a cap): say what it said, not that it did not answer.
            if error.code == .timeout, !isJoined, let refusal = lastRefusal {
                throw CowatchError(refusal.code, "\(refusal.message) (still trying)")
            }
            throw error
        }
    }

    /// `ready` / `unready` / `wait_for_me`: what we say about ourselves. Kept for the next
    /// session when not in the room now.
    func setStatus(ready: Bool? = nil, waitForMe: Bool? = nil) {
        var status = coordinator.status
        if let ready { status.ready = ready }
        if let waitForMe { playerSide.waitForMeSetting = waitForMe }
        status.waitForMe = playerSide.waitForMe
        perform(coordinator.setStatus(status))
    }

    /// Returns once `done` holds for the session state (looked at again on every change).
    /// Errors: `timeout`, or what `done` throws.
    func waitForSession(
        timeout: Double, until done: (SessionState) throws(CowatchError) -> Bool
    ) async throws(CowatchError) {
        let deadline = clock.now() + timeout
        while try !done(machine.state) {
            let left = deadline - clock.now()
            guard left > 0, !Task.isCancelled else { throw CowatchError(.timeout, "the room did not answer in time") }
            let change = Reply<Void>()
            sessionWatchers.append(change)
            await change.wait(timeout: left, orElse: ())
        }
    }

    /// The group's state as the last applied action left it: what a reply to a group action
    /// reports (the player itself follows a moment later, at the scheduled instant).
    func groupState() -> (position: Double, paused: Bool, rate: Double)? {
        guard isJoined, let current = coordinator.timelines?.current,
            let reference = coordinator.referenceTime(atLocal: clock.now())
        else { return nil }
        // A start scheduled a little ahead is reported as done: that is what the action did.
        let at = max(reference, current.reference)
        return (current.position(at: at), !current.playing, current.rate)
    }

    // MARK: Status

    /// The `room`, `clock` and `drift` sections of `get_status`.
    func statusSections() -> (room: RoomStatus, clock: ClockStatus?, drift: DriftStatus) {
        let now = clock.now()
        let state = machine.state
        let activity = coordinator.activity
        let status = coordinator.status
        var endedBy: String?
        if case .invalidated(.endedBy(let by)) = state { endedBy = by }
        let roomStatus = RoomStatus(
            room: room.room, server: "\(room.serverHost):\(room.serverPort)", session: state.name,
            reason: state.reason?.code, endedBy: endedBy, participants: coordinator.participants.count,
            seq: coordinator.timelines?.current.seq ?? 0,
            activity: RoomStatus.Activity(
                id: activity.id, url: activity.url, title: activity.displayTitle, type: activity.type.rawValue,
                fallbackURL: activity.fallbackURL, openedBy: activity.openedBy, loading: playerSide.media.loadingURL),
            policy: RoomStatus.Policy(
                playWhenReady: coordinator.policy.playWhenReady, waitTimeout: coordinator.policy.waitTimeout,
                managed: coordinator.policy.managed),
            // What the room is told (as in `get_participants`); `waitForMeSetting` is the
            // person's own choice, kept while this player cannot play.
            ready: status.ready, waitForMe: status.waitForMe, waitForMeSetting: playerSide.waitForMeSetting,
            canPlay: playerSide.media.canPlay,
            lastError: connectFailure, role: coordinator.role.rawValue, managed: coordinator.policy.managed,
            openOffer: openOfferStatus(), stall: status.stall?.rawValue,
            // Who is stalled and asks to be waited for (the server may still have given up on them).
            waitingFor: coordinator.participants.filter { $0.status.stall != nil && $0.status.waitForMe }.map(\.name),
            reachability: reachabilityStatus())
        let clockStatus = coordinator.estimator.estimate(atLocal: now).map { estimate in
            ClockStatus(
                offset: estimate.offset, rtt: estimate.roundTrip, uncertainty: estimate.uncertainty, skew: estimate.skew,
                samples: coordinator.estimator.sampleCount)
        }
        let drift = DriftStatus(
            // Only while the player follows a playing group: before anything plays there is no drift.
            error: isJoined && playerSide.media.hasRoomMedia ? coordinator.lastError : nil,
            source: playerSide.hasAudio ? "audio-pts" : "frames", nudges: coordinator.drift.nudges, seeks: coordinator.drift.seeks,
            playerSpeed: player.speed, expected: coordinator.expectedPosition(atLocal: now),
            unpauseLead: coordinator.unpauseLead.lead, startLate: playerSide.startLateness, pause: playerSide.pauseTiming,
            outputDelay: coordinator.drift.outputDelay)
        return (roomStatus, clockStatus, drift)
    }

    /// `get_participants`'s reply.
    func participantsReply() -> ParticipantsReply {
        ParticipantsReply(participants: coordinator.participants.map { participant in
            ParticipantsReply.Entry(
                name: participant.name, state: participant.state, drift: participant.drift, rtt: participant.rtt,
                ready: participant.status.ready, waitForMe: participant.status.waitForMe,
                stall: participant.status.stall?.rawValue, role: participant.role.rawValue,
                you: participant.name == configuration.name,
                stream: participant.stream.map {
                    .init(from: $0.from, aheadBytes: $0.aheadBytes, aheadSeconds: $0.aheadSeconds, rate: $0.rate)
                })
        })
    }
}
