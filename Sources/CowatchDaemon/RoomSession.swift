import CowatchClient
import CowatchCore
import CowatchMpv
import CowatchNet
import Logging

/// The daemon's membership of a room: runs the `RoomCoordinator` against the real player and the
/// real server connection, reconnecting when the link drops.
///
/// Threading: an actor. `run()` is its loop; `playerEvent` is fed by `PlayerController`;
/// `request` is called for control-socket commands.
actor RoomSession {
    let player: MpvPlayer
    let configuration: DaemonConfiguration
    let room: RoomSettings
    let events: EventHub
    let logger: Logger

    private var coordinator: RoomCoordinator
    /// The group's rate, readable without awaiting the actor: `get_status` and `state` events
    /// report it rather than the player's momentary, drift-corrected speed.
    nonisolated let groupRate = Locked<Double?>(nil)
    /// False after `leave` (or a refusal): playback commands then act on this player alone.
    nonisolated let following = Locked(true)
    private var send: RoomConnection.Send?
    /// `waiting` (connecting, or connected and not yet welcomed), `joined`, or `invalidated`
    /// with `sessionReason` (`left`, `server-gone` while reconnecting, or the server's refusal code).
    private var sessionState = "waiting"
    private var sessionReason: String?
    private var leaveRequested = false
    private var joinRequested = false
    private var seeking = false
    private var ourSeeks: [Double] = []
    private var recentPaused: [(value: Bool, at: Double)] = []
    private var recentSpeeds: [(value: Double, at: Double)] = []
    private var userSeekFrom: Double?
    private var frameClock = FrameEventClock()
    private var hasAudio = false
    private var actionWaiters: [Int: CheckedContinuation<Bool, Never>] = [:]
    private var lastFailure: CowatchError?

    init(player: MpvPlayer, configuration: DaemonConfiguration, room: RoomSettings, events: EventHub, logger: Logger) {
        self.player = player
        self.configuration = configuration
        self.room = room
        self.events = events
        self.logger = logger
        var coordinatorConfiguration = RoomCoordinator.Configuration()
        coordinatorConfiguration.drift = room.drift
        self.coordinator = RoomCoordinator(name: configuration.name, room: room.room, configuration: coordinatorConfiguration)
    }

    // MARK: Loop

    /// Feeds player events to `playerEvent`, in order, until the player ends.
    func consume(_ events: AsyncStream<MpvEvent>) async {
        for await event in events { playerEvent(event) }
    }

    /// Connects, joins and keeps the player on the group timeline until cancelled. Returns the
    /// error when the server refuses us for good (name taken, wrong version, …).
    func run() async -> CowatchError? {
        hasAudio = (try? player.getNode("current-tracks/audio")) != nil
        if !hasAudio {
            // Frame instants are noisier than audio-pts: leave errors within that noise alone.
            var configuration = coordinator.configuration
            configuration.drift.deadband = max(configuration.drift.deadband, 0.001)
            coordinator = RoomCoordinator(name: coordinator.name, room: coordinator.room, configuration: configuration)
        }
        var backoff = 0.25
        while !Task.isCancelled {
            if sessionState == "invalidated" && sessionReason == "left" {
                // Left on request: stay out until asked to join again.
                while !joinRequested && !Task.isCancelled { try? await Task.sleep(for: .milliseconds(50)) }
                joinRequested = false
                setSession("waiting", reason: nil)
            }
            do {
                try await RoomConnection.connect(host: room.serverHost, port: room.serverPort, logger: logger) {
                    inbound, send in
                    try await self.session(inbound: inbound, send: send)
                }
                backoff = 0.25
            } catch is LeftRoom {
                send = nil
                setSession("invalidated", reason: "left")
                continue
            } catch let error as CowatchError where Self.isFatal(error) {
                lastFailure = error
                setSession("invalidated", reason: error.code.rawValue)
                publishError(error)
                return error
            } catch {
                if sessionState == "joined" {
                    publishError(CowatchError(.ioError, "lost the room server (\(error)); reconnecting"))
                    setSession("waiting", reason: "server-gone")
                }
                logger.debug("room connection ended", metadata: ["cowatch.room.error": "\(error)"])
            }
            send = nil
            try? await Task.sleep(for: .seconds(backoff))
            backoff = min(backoff * 2, 2)
        }
        return nil
    }

    /// Ends a session on `leave`.
    struct LeftRoom: Error {}

    private func setSession(_ state: String, reason: String?) {
        guard state != sessionState || reason != sessionReason else { return }
        sessionState = state
        sessionReason = reason
        following.withLock { $0 = state != "invalidated" }
        var fields: [String: JSONValue] = ["state": .string(state)]
        if let reason { fields["reason"] = .string(reason) }
        events.publish(ControlEvent(name: ControlEvent.Name.session, fields: fields))
    }

    static func isFatal(_ error: CowatchError) -> Bool {
        [.nameTaken, .unsupportedVersion, .authFailed, .roomFull].contains(error.code)
    }

    private func session(inbound: AsyncThrowingStream<ServerMessage, any Error>, send: @escaping RoomConnection.Send) async throws {
        self.send = send
        lastFailure = nil
        let title = try? player.getString("media-title")
        let duration = try? player.getDouble("duration")
        perform(coordinator.connected(now: monotonicNow(), mediaTitle: title, mediaDuration: duration))
        // Two loops; whichever ends first (the link drops, the server refuses, or we leave) ends both.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.tickLoop() }
            group.addTask {
                for try await message in inbound { try await self.received(message) }
                throw CowatchError(.ioError, "the room server closed the connection")
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    private func received(_ message: ServerMessage) throws {
        perform(coordinator.received(message, now: monotonicNow()))
        if let failure = lastFailure { throw failure }
    }

    private func tickLoop() async throws {
        let interval = room.tickInterval
        while !Task.isCancelled {
            let now = monotonicNow()
            if let transition = coordinator.nextTransition(afterLocal: now), transition < now + interval {
                // Sleep to just before a scheduled start or speed change, then spin the last 2 ms:
                // it must not inherit the scheduler's slack.
                let coarse = transition - 0.002
                if coarse > now { try await Task.sleep(for: .seconds(coarse - now)) }
                while monotonicNow() < transition {}
            } else {
                try await Task.sleep(for: .seconds(interval))
            }
            if leaveRequested {
                leaveRequested = false
                send?(.bye)
                throw LeftRoom()
            }
            tick()
        }
    }

    private func tick() {
        let now = monotonicNow()
        perform(coordinator.tick(now: now, sample: sample()))
        let cutoff = now - 2
        ourSeeks.removeAll { $0 < cutoff }
        recentPaused.removeAll { $0.at < cutoff }
        recentSpeeds.removeAll { $0.at < cutoff }
    }

    /// Reads the player: audio-pts while playing with audio, the frame clock while playing without,
    /// the shown frame (time-pos) while paused.
    private func sample() -> RoomCoordinator.PlayerSample? {
        guard let paused = try? player.getFlag("pause"), let speed = try? player.getDouble("speed") else { return nil }
        let before = monotonicNow()
        var position: Double?
        if !paused && !seeking {
            position = hasAudio ? try? player.getDouble("audio-pts") : frameClock.position(at: before)
        }
        if position == nil { position = try? player.getDouble("time-pos") }
        let after = monotonicNow()
        guard let position else { return nil }
        return .init(position: position, at: (before + after) / 2, paused: paused, speed: speed, seeking: seeking)
    }

    // MARK: Carrying out actions

    private func perform(_ actions: [RoomCoordinator.Action]) {
        if let rate = coordinator.timelines?.current.rate { groupRate.withLock { $0 = rate } }
        for action in actions {
            switch action {
            case .send(let message):
                send?(message)
            case .player(let command):
                apply(command)
            case .notice(let notice):
                publish(notice)
            case .actionApplied(let id):
                actionWaiters.removeValue(forKey: id)?.resume(returning: true)
            case .joined(let welcome):
                setSession("joined", reason: nil)
                logger.debug("joined room", metadata: ["cowatch.room.name": "\(welcome.room)"])
            case .participants:
                break
            case .failed(let error):
                lastFailure = error
            }
        }
    }

    private func apply(_ command: RoomCoordinator.PlayerCommand) {
        let now = monotonicNow()
        do {
            switch command {
            case .setPaused(let paused):
                // Only a real change produces an mpv event to recognise as ours later.
                guard (try? player.getFlag("pause")) != paused else { return }
                recentPaused.append((paused, now))
                try player.setFlag("pause", paused)
                frameClock.reset()
            case .setSpeed(let speed):
                recentSpeeds.append((speed, now))
                try player.setDouble("speed", speed)
            case .seek(let target):
                ourSeeks.append(now)
                seeking = true
                frameClock.reset()
                try player.command(["seek", String(max(0, target)), "absolute+exact"])
            }
        } catch {
            logger.debug("player command failed", metadata: ["cowatch.room.error": "\(error)"])
            if case .seek = command { seeking = false }
        }
    }

    // MARK: Player events (echo suppression)

    /// Sees every mpv event; changes we did not order come from the person at this player
    /// (keyboard or mouse in the mpv window) and become group actions.
    func playerEvent(_ event: MpvEvent) {
        let now = monotonicNow()
        switch event {
        case .seek:
            if ourSeeks.isEmpty {
                seeking = true
                userSeekFrom = userSeekFrom ?? coordinator.expectedPosition(atLocal: now)
            } else {
                ourSeeks.removeFirst()
                seeking = true
            }
        case .playbackRestart:
            seeking = false
            frameClock.reset()
            if let from = userSeekFrom, ourSeeks.isEmpty, coordinator.isJoined {
                userSeekFrom = nil
                let target = (try? player.getDouble("time-pos")) ?? from
                perform(coordinator.request(.seek, position: target, from: from, now: now).actions)
            }
        case .propertyChange(name: "time-pos", let value, let at):
            // Without audio, the instants at which frames change are the fine clock.
            guard !hasAudio, !seeking, let position = value?.doubleValue,
                (try? player.getFlag("pause")) == false, let speed = try? player.getDouble("speed")
            else { return }
            frameClock.shown(position: position, at: at, rate: speed)
        case .propertyChange(name: "pause", let value, _):
            guard let paused = value?.boolValue, coordinator.isJoined else { return }
            if let index = recentPaused.firstIndex(where: { $0.value == paused }) {
                recentPaused.remove(at: index)
                return
            }
            let position = try? player.getDouble("time-pos")
            perform(coordinator.request(paused ? .pause : .play, position: position, now: now).actions)
        case .propertyChange(name: "speed", let value, _):
            guard let speed = value?.doubleValue, coordinator.isJoined else { return }
            if let index = recentSpeeds.firstIndex(where: { abs($0.value - speed) < 1e-9 }) {
                recentSpeeds.removeSubrange(0...index)
                return
            }
            let groupRate = coordinator.timelines?.ruling(at: coordinator.referenceTime(atLocal: now) ?? 0).rate ?? 1
            // A nudge we ordered that mpv reports late would sit within the correction band; a
            // person's speed change is a round number far outside it.
            if abs(speed / groupRate - 1) <= room.drift.maxAdjust + 1e-6 { return }
            perform(coordinator.request(.speed, position: nil, rate: speed, now: now).actions)
        default:
            break
        }
    }

    // MARK: Control requests

    /// Turns a playback command into a group action and waits until the server applied it.
    func request(_ command: ControlCommand, seekTimeout: Double) async throws(CowatchError) {
        guard coordinator.isJoined, send != nil else {
            throw CowatchError(.notInRoom, "not connected to the room yet (\(sessionState))")
        }
        let now = monotonicNow()
        let here = (try? player.getDouble("time-pos")) ?? coordinator.expectedPosition(atLocal: now) ?? 0
        let duration = (try? player.getDouble("duration")) ?? .infinity
        let groupPlaying = coordinator.timelines.map { pair in
            pair.expected(at: coordinator.referenceTime(atLocal: now) ?? 0).playing || pair.current.playing
        } ?? false
        let request: (id: Int, actions: [RoomCoordinator.Action])
        switch command {
        case .play:
            request = coordinator.request(.play, position: here, now: now)
        case .pause:
            apply(.setPaused(true))
            let frame = (try? player.getDouble("time-pos")) ?? here
            request = coordinator.request(.pause, position: frame, now: now)
        case .togglePause:
            return try await self.request(groupPlaying ? .pause : .play, seekTimeout: seekTimeout)
        case .seek(let seconds, let mode):
            let base = coordinator.expectedPosition(atLocal: now) ?? here
            let target = min(max(0, mode == .absolute ? seconds : base + seconds), duration)
            request = coordinator.request(.seek, position: target, from: base, now: now)
        case .speed(let rate):
            request = coordinator.request(.speed, position: nil, rate: rate, now: now)
        default:
            throw CowatchError(.invalidRequest, "\(command.name) is not a group action")
        }
        perform(request.actions)
        let id = request.id
        let applied = await withCheckedContinuation { continuation in
            actionWaiters[id] = continuation
            Task { [weak self] in
                try? await Task.sleep(for: .seconds(seekTimeout))
                await self?.expireWaiter(id)
            }
        }
        if !applied { throw CowatchError(.timeout, "the room server did not confirm \(command.name) in time") }
    }

    /// `leave`: stop following the group; the player stays where it is; the others hear "left".
    func leave(timeout: Double) async throws(CowatchError) {
        guard sessionState == "joined" else {
            throw CowatchError(.notInRoom, "not in the room (\(sessionState))")
        }
        leaveRequested = true
        try await waitForSession("invalidated", timeout: timeout)
    }

    /// `join`: after `leave`, a new session, aligned to the group.
    func join(timeout: Double) async throws(CowatchError) {
        if sessionState == "joined" { return }
        guard sessionState == "invalidated", sessionReason == "left" else {
            throw CowatchError(.notInRoom, "cannot join now (\(sessionState))")
        }
        joinRequested = true
        try await waitForSession("joined", timeout: timeout)
    }

    private func waitForSession(_ state: String, timeout: Double) async throws(CowatchError) {
        let deadline = monotonicNow() + timeout
        while sessionState != state {
            guard monotonicNow() < deadline else { throw CowatchError(.timeout, "the room did not answer in time") }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    private func expireWaiter(_ id: Int) {
        actionWaiters.removeValue(forKey: id)?.resume(returning: false)
    }

    // MARK: Reporting

    private func publish(_ notice: Notice) {
        var fields: [String: JSONValue] = [
            "participant": .string(notice.actor), "action": .string(notice.action.rawValue), "text": .string(notice.text),
        ]
        if let position = notice.position { fields["position"] = .number(position) }
        if let from = notice.from { fields["from"] = .number(from) }
        if let to = notice.to { fields["to"] = .number(to) }
        if let rate = notice.rate { fields["rate"] = .number(rate) }
        events.publish(ControlEvent(name: ControlEvent.Name.notice, fields: fields))
        if configuration.osd {
            try? player.command(["show-text", notice.text, "3000"])
        }
    }

    private func publishError(_ error: CowatchError) {
        events.publish(ControlEvent(name: ControlEvent.Name.error, fields: [
            "code": .string(error.code.rawValue), "message": .string(error.message),
        ]))
    }

    /// The `room`, `clock` and `drift` sections of `get_status`.
    func statusSections() -> [String: JSONValue] {
        let now = monotonicNow()
        var sections: [String: JSONValue] = [
            "room": [
                "room": .string(room.room), "server": .string("\(room.serverHost):\(room.serverPort)"),
                "session": .string(sessionState), "reason": sessionReason.map(JSONValue.string) ?? .null, "participants": .number(Double(coordinator.participants.count)),
                "seq": .number(Double(coordinator.timelines?.current.seq ?? 0)),
            ]
        ]
        if let estimate = coordinator.estimator.estimate(atLocal: now) {
            sections["clock"] = [
                "offset": .number(estimate.offset), "rtt": .number(estimate.roundTrip),
                "uncertainty": .number(estimate.uncertainty), "skew": .number(estimate.skew),
                "samples": .number(Double(coordinator.estimator.sampleCount)),
            ]
        }
        sections["drift"] = [
            "error": .finite(coordinator.lastError), "source": .string(hasAudio ? "audio-pts" : "frames"),
            "nudges": .number(Double(coordinator.drift.nudges)), "seeks": .number(Double(coordinator.drift.seeks)),
            "player_speed": .finite(try? player.getDouble("speed")),
            "expected": .finite(coordinator.expectedPosition(atLocal: now)),
        ]
        return sections
    }

    /// `get_participants` data.
    func participantsJSON() -> JSONValue {
        .array(coordinator.participants.map { participant in
            var object: [String: JSONValue] = [
                "name": .string(participant.name), "state": .string(participant.state),
                "drift": .finite(participant.drift), "rtt": .finite(participant.rtt),
            ]
            if participant.name == configuration.name { object["you"] = true }
            return .object(object)
        })
    }
}
