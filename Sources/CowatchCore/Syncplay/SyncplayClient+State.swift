/// The room's `State`, once a second: the answer, the counters, the delays, and the one timeline
/// the room's changes move (see `SyncplayClient`).
extension SyncplayClient {
    /// A server `State`: counters, stamps and delays taken in, the room's change followed (or our
    /// timeline carried into a managed room we made), and the answer.
    mutating func state(_ state: SyncplayState, player: PlayerReading, now: Double) -> [Action] {
        guard phase == .joined else { return [] }
        lastStateAt = now
        // The server's echo of our change's counter: this state is our change as it placed it.
        let ownEcho = clientIgnoring != 0 && state.ignoring?.client == clientIgnoring && state.playstate?.setBy == username
        if let ignoring = state.ignoring {
            if let server = ignoring.server {
                serverIgnoring = server
                clientIgnoring = 0
            } else if let client = ignoring.client, client == clientIgnoring {
                clientIgnoring = 0
            }
        }
        let serverStamp = state.ping?.latencyCalculation
        delays.serverSaid(serverRtt: state.ping?.serverRtt, stamp: serverStamp)
        var measured: Double?
        if let echoed = state.ping?.clientLatencyCalculation, let serverStamp, echoed <= now {
            roundTrip = now - echoed
            measured = roundTrip
            delays.measuredOwn(roundTrip: roundTrip)
            serverClock.add(ClockSample(t1: echoed, t2: serverStamp, t3: serverStamp, t4: now))
        }
        if let left = carryingTimeline, let line = timeline {
            // Syncplay sends whoever enters a room its state twice, plain then forced (and reads
            // nothing of theirs until they echo the forced one): neither is followed; the answer to
            // the forced one is our timeline, as our seek, its counter echoed.
            guard state.ignoring?.server == nil, left > 0 else {
                carryingTimeline = nil
                return [.send([.state(change(paused: line.paused, position: line.position(at: now), seek: true, now: now))])]
            }
            carryingTimeline = left - 1
            var quiet = answer(serverStamp: serverStamp, measured: measured, player: player, now: now)
            quiet.playstate = nil
            return [.send([.state(quiet)])]
        }
        var actions: [Action] = []
        if let playstate = state.playstate, let paused = playstate.paused, clientIgnoring == 0 {
            actions += follow(playstate, paused: paused, serverStamp: serverStamp, ownEcho: ownEcho, now: now)
        }
        if !actions.contains(where: { if case .follow = $0 { true } else { false } }) { actions += refine(now: now) }
        // The player was read before it was told to follow: until it has, it is where the room is.
        let followed = actions.contains { if case .follow = $0 { true } else { false } }
        let reading = followed ? PlayerReading(position: nil, paused: player.paused) : player
        actions.append(.send([.state(answer(serverStamp: serverStamp, measured: measured, player: reading, now: now))]))
        return actions
    }

    /// The timeline placed again from its change's stamp, when the clock estimate moved it by
    /// `refineStep` or more (a playing timeline only: a paused one is where it is, whenever).
    private mutating func refine(now: Double) -> [Action] {
        guard let line = timeline, !line.paused, let anchor, now - anchor.since <= configuration.refineWindow,
            let placed = serverClock.estimate(atLocal: now)?.local(atReference: anchor.stamp)
        else { return [] }
        let target = SyncplayTimeline(position: anchor.position, at: min(placed, now), paused: false, setBy: line.setBy)
        guard abs(target.position(at: now) - line.position(at: now)) >= configuration.refineStep else { return [] }
        timeline = target
        return [.follow(target)]
    }

    /// The room said where it is: move our timeline only for a change (or for our own change as
    /// the server placed it, `ownEcho`).
    private mutating func follow(
        _ playstate: SyncplayState.Playstate, paused: Bool, serverStamp: Double?, ownEcho: Bool, now: Double
    ) -> [Action] {
        // When the server stamped this, on our clock: from the clock estimate, else half a round trip ago.
        let sentAt = serverStamp.flatMap { serverClock.estimate(atLocal: now)?.local(atReference: $0) }.map { min($0, now) }
            ?? now - roundTrip / 2
        let position = max(0, playstate.position)
        let said = SyncplayTimeline(position: position, at: sentAt, paused: paused, setBy: playstate.setBy)
        let anchored = serverStamp.map { (position: position, stamp: $0, since: now) }
        guard let current = timeline else {
            timeline = said
            anchor = anchored
            return [.follow(said)]
        }
        if ownEcho, paused == current.paused {
            // Everyone places the change as the server stamped it: so do we, and refine it alike.
            anchor = anchored
            guard abs(said.position(at: now) - current.position(at: now)) >= configuration.refineStep else { return [] }
            timeline = said
            return [.follow(said)]
        }
        // Someone else's change is said; our own echo and a nameless one are not.
        let other = playstate.setBy.flatMap { $0 == username ? nil : $0 }
        let at = said.position(at: now)
        if paused != current.paused {
            timeline = said
            anchor = anchored
            return [.follow(said)] + (other.map { [.notice(paused ? .paused($0, at: at) : .played($0, at: at))] } ?? [])
        }
        if playstate.doSeek == true || abs(at - current.position(at: now)) > configuration.seekThreshold {
            timeline = said
            anchor = anchored
            // A jump without doSeek is someone's drift or skip, not an announced seek.
            let seeker = playstate.doSeek == true ? other : nil
            return [.follow(said)] + (seeker.map { [.notice(.sought($0, to: at))] } ?? [])
        }
        return []
    }

    /// Our answer to a server State: where this viewer is (the room's position while its file
    /// opens or while it moves to a change it was just told of: never a stale pause that the
    /// server would take for this viewer's own, nor a 0 or an old position that would drag the
    /// room, its slowest member's, back), the stamps, and the counters.
    private mutating func answer(serverStamp: Double?, measured: Double?, player: PlayerReading, now: Double) -> SyncplayState {
        let clientRtt = delays.clientRtt
        // Its stamp echoed only once we can predict the round trip the server measures with it.
        let echo = delays.hasOwnRoundTrip ? serverStamp : nil
        var state = SyncplayState(ping: SyncplayState.Ping(latencyCalculation: echo, clientLatencyCalculation: now, clientRtt: clientRtt))
        // The server measures this answer's round trip before it reads the position.
        let delay = echo.map { delays.answering(stamp: $0, clientRtt: clientRtt, ownRoundTrip: measured) } ?? delays.forwardDelay
        if clientIgnoring == 0 || serverIgnoring != 0 {
            if let position = player.position ?? roomPosition(at: now) {
                let paused = player.position == nil ? timeline?.paused ?? player.paused : player.paused
                state.playstate = SyncplayState.Playstate(position: delays.reported(position, paused: paused, delay: delay), paused: paused)
            }
        }
        let server = takeServerIgnoring()
        if server != nil || clientIgnoring != 0 {
            state.ignoring = SyncplayState.Ignoring(server: server, client: clientIgnoring == 0 ? nil : clientIgnoring)
        }
        return state
    }
}
