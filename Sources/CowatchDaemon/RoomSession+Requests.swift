import CowatchClient
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
        let now = monotonicNow()
        guard coordinator.referenceTime(atLocal: now) != nil else {
            // Without the room's clock an action could carry no deadline, and might land stale.
            throw CowatchError(.notInRoom, "not in step with the room's clock yet; try again in a moment")
        }
        // A player that does not have the room's media (it refused or could not open it) is no
        // guide to where the group is.
        let own = cannotPlay ? nil : try? player.getDouble("time-pos")
        let here = own ?? coordinator.expectedPosition(atLocal: now) ?? 0
        let duration = (cannotPlay ? nil : try? player.getDouble("duration")) ?? .infinity
        let groupPlaying = coordinator.timelines.map { pair in
            pair.expected(at: coordinator.referenceTime(atLocal: now) ?? 0).playing || pair.current.playing
        } ?? false
        let request: (id: Int, actions: [RoomCoordinator.Action])
        switch command {
        case .play:
            request = coordinator.request(.play, position: here, now: now)
        case .pause:
            if !cannotPlay { apply(.setPaused(true)) }
            let frame = cannotPlay ? here : (try? player.getDouble("time-pos")) ?? here
            request = coordinator.request(.pause, position: frame, now: now)
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
            request = coordinator.request(.open, position: nil, activity: activity, now: monotonicNow())
        default:
            throw CowatchError(.invalidRequest, "\(command.name) is not a group action")
        }
        let reply = Reply<CowatchError?>()
        actionWaiters[request.id] = reply
        perform(request.actions)
        let outcome = await reply.wait(
            timeout: seekTimeout, orElse: CowatchError(.timeout, "the room server did not confirm the action in time"))
        actionWaiters[request.id] = nil
        if let outcome { throw outcome }
    }

    /// Our own `open` switches everyone: first make sure the media (or its fallback) opens at all,
    /// so a URL nobody can load leaves the room where it was. Errors: `media-unavailable`,
    /// `timeout` (the room stays on its media).
    private func checkOpens(_ open: ControlCommand.OpenRequest) async throws(CowatchError) {
        guard let probe else { return }
        // Bounded well within a control client's patience (10 s by default).
        let timeout = min(configuration.openTimeout, 8)
        let started = monotonicNow()
        guard var failure = await probe.check(open.url, timeout: timeout) else { return }
        // The probe's own FFmpeg lines (an HTTP status) reach our player's log, not the probe's.
        var libav = LoadFailureReason()
        for entry in recentLibavLog where entry.at >= started { libav.logged(entry.line) }
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
        leaveRequested = true
        try await waitForSession(timeout: timeout) { $0.reason == .left }
    }

    /// `join`: after `leave`, an end or a removal, a new session aligned to the group.
    /// Errors: `timeout`; the server's refusal (`name-taken`, `kicked`, …) as soon as it comes.
    func join(timeout: Double) async throws(CowatchError) {
        if try machine.join(now: monotonicNow()) != nil {
            joinRequested = true
            joinSignal?.resume(())
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
        if let waitForMe { userWaitForMe = waitForMe }
        status.waitForMe = userWaitForMe && !cannotPlay
        perform(coordinator.setStatus(status))
    }

    /// Returns once `done` holds for the session state (looked at again on every change).
    /// Errors: `timeout`, or what `done` throws.
    func waitForSession(
        timeout: Double, until done: (SessionState) throws(CowatchError) -> Bool
    ) async throws(CowatchError) {
        let deadline = monotonicNow() + timeout
        while try !done(machine.state) {
            let left = deadline - monotonicNow()
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
            let reference = coordinator.referenceTime(atLocal: monotonicNow())
        else { return nil }
        // A start scheduled a little ahead is reported as done: that is what the action did.
        let at = max(reference, current.reference)
        return (current.position(at: at), !current.playing, current.rate)
    }

    // MARK: Status

    /// The `room`, `clock` and `drift` sections of `get_status`.
    func statusSections() -> [String: JSONValue] {
        let now = monotonicNow()
        let state = machine.state
        let activity = coordinator.activity
        var activityJSON: [String: JSONValue] = [
            "id": .number(Double(activity.id)), "url": .string(activity.url), "title": .string(activity.displayTitle),
            "type": .string(activity.type.rawValue),
            "fallback_url": activity.fallbackURL.map(JSONValue.string) ?? .null,
            "opened_by": activity.openedBy.map(JSONValue.string) ?? .null,
        ]
        if let load { activityJSON["loading"] = .string(load.current) }
        let status = coordinator.status
        var roomJSON: [String: JSONValue] = [
            "room": .string(room.room), "server": .string("\(room.serverHost):\(room.serverPort)"),
            "session": .string(state.name), "reason": state.reason.map { .string($0.code) } ?? .null,
            "participants": .number(Double(coordinator.participants.count)),
            "seq": .number(Double(coordinator.timelines?.current.seq ?? 0)),
            "activity": .object(activityJSON),
            "policy": [
                "play_when_ready": .bool(coordinator.policy.playWhenReady),
                "wait_timeout": .number(coordinator.policy.waitTimeout),
                "managed": .bool(coordinator.policy.managed),
            ],
            // What the room is told (as in `get_participants`); `wait_for_me_setting` is the
            // person's own choice, kept while this player cannot play.
            "ready": .bool(status.ready), "wait_for_me": .bool(status.waitForMe),
            "wait_for_me_setting": .bool(userWaitForMe), "can_play": .bool(!cannotPlay),
            "last_error": connectFailure.map { ["code": .string($0.code.rawValue), "message": .string($0.message)] }
                ?? .null,
            "role": .string(coordinator.role.rawValue), "managed": .bool(coordinator.policy.managed),
            "open_offer": openOfferJSON(),
            "stall": status.stall.map { .string($0.rawValue) } ?? .null,
            // Who is stalled and asks to be waited for (the server may still have given up on them).
            "waiting_for": .array(
                coordinator.participants.filter { $0.status.stall != nil && $0.status.waitForMe }.map { .string($0.name) }),
        ]
        if case .invalidated(.endedBy(let by)) = state { roomJSON["ended_by"] = .string(by) }
        if room.hostPort != nil { roomJSON["reachability"] = reachabilityJSON() }
        var sections: [String: JSONValue] = ["room": .object(roomJSON)]
        if let estimate = coordinator.estimator.estimate(atLocal: now) {
            sections["clock"] = [
                "offset": .number(estimate.offset), "rtt": .number(estimate.roundTrip),
                "uncertainty": .number(estimate.uncertainty), "skew": .number(estimate.skew),
                "samples": .number(Double(coordinator.estimator.sampleCount)),
            ]
        }
        sections["drift"] = [
            // Only while the player follows a playing group: before anything plays there is no drift.
            "error": .finite(isJoined && load == nil && !cannotPlay ? coordinator.lastError : nil), "source": .string(hasAudio ? "audio-pts" : "frames"),
            "nudges": .number(Double(coordinator.drift.nudges)), "seeks": .number(Double(coordinator.drift.seeks)),
            "player_speed": .finite(try? player.getDouble("speed")),
            "expected": .finite(coordinator.expectedPosition(atLocal: now)),
            "unpause_lead": .number(coordinator.unpauseLead.lead),
            "start_late": .finite(startLateness),
        ]
        return sections
    }

    /// `get_participants` data.
    func participantsJSON() -> JSONValue {
        .array(coordinator.participants.map { participant in
            var object: [String: JSONValue] = [
                "name": .string(participant.name), "state": .string(participant.state),
                "drift": .finite(participant.drift), "rtt": .finite(participant.rtt),
                "ready": .bool(participant.status.ready), "wait_for_me": .bool(participant.status.waitForMe),
                "stall": participant.status.stall.map { .string($0.rawValue) } ?? .null,
                "role": .string(participant.role.rawValue),
            ]
            if participant.name == configuration.name { object["you"] = true }
            return .object(object)
        })
    }
}
