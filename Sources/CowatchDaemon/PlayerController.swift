import CowatchCore
import CowatchMpv
import CowatchNet
import Logging

/// Owns the player for the daemon: opens the media, turns mpv events into control events, and
/// carries out control requests.
///
/// Threading: an actor; `runEvents()` is its event loop and must be running for `open()` and
/// seeks to complete.
public actor PlayerController: ControlRequestHandler {
    let player: MpvPlayer
    let configuration: DaemonConfiguration
    let events: EventHub
    let logger: Logger
    private var shutdownHandler: (@Sendable () async -> Void)?

    private var lastErrorLine: String?
    private var loadWaiter: CheckedContinuation<Result<Void, CowatchError>, Never>?
    private var restartWaiters: [Int: CheckedContinuation<Bool, Never>] = [:]
    private var seekStartedSinceRegistration: Set<Int> = []
    private var nextWaiterID = 0
    private var lastPublished: PlayerStatus?
    private var eof = false
    private var playerEnded = false
    private var stopWaiting = false
    private var endWaiters: [CheckedContinuation<Void, Never>] = []
    private var room: RoomSession?
    private var roomEvents: AsyncStream<MpvEvent>.Continuation?
    private var fileLoaded = false
    /// Loads media and knows which file the player has: `--media`, until switched (`open`).
    nonisolated let media: MediaLoader

    public init(player: MpvPlayer, configuration: DaemonConfiguration, events: EventHub, logger: Logger) {
        self.player = player
        self.configuration = configuration
        self.events = events
        self.logger = logger
        self.media = MediaLoader(player: player, url: configuration.media)
    }

    /// Puts the player under a room's control: playback commands become group actions, and the
    /// session sees every player event (in order) to tell its own changes from the user's.
    func attach(room: RoomSession) -> AsyncStream<MpvEvent> {
        self.room = room
        let (stream, continuation) = AsyncStream.makeStream(of: MpvEvent.self)
        roomEvents = continuation
        return stream
    }

    /// Called for the `quit` command and when mpv goes away.
    public func setShutdownHandler(_ handler: @escaping @Sendable () async -> Void) {
        shutdownHandler = handler
    }

    // MARK: Opening

    /// Loads the media and waits until its first frame is decoded (so a room joins only with a
    /// player that is ready), or loading has failed.
    /// Throws `media-unavailable` with mpv's reason, or `timeout`.
    public func open() async throws(CowatchError) {
        for property in ["pause", "speed", "eof-reached", "media-title", "duration", "time-pos", "paused-for-cache"] {
            try? player.observe(property)
        }
        do {
            try await load(configuration.media)
        } catch {
            // The fallback URL is offered to the others, and serves this daemon too.
            guard let fallback = configuration.fallbackURL, fallback != configuration.media else { throw error }
            logger.warning("\(error.message); trying the fallback \(fallback)")
            do {
                try await load(fallback)
            } catch let second {
                throw CowatchError(second.code, "\(error.message); the fallback failed too: \(second.message)")
            }
        }
    }

    private var loadGeneration = 0

    private func load(_ url: String) async throws(CowatchError) {
        fileLoaded = false
        loadGeneration += 1
        let generation = loadGeneration
        do {
            try media.load(url)
        } catch {
            throw CowatchError(.mediaUnavailable, "cannot open \(url): \(error.reason)")
        }
        let timeout = configuration.openTimeout
        let result = await withCheckedContinuation { continuation in
            loadWaiter = continuation
            Task { [weak self] in
                try? await Task.sleep(for: .seconds(timeout))
                await self?.expireLoad(generation, CowatchError(.timeout, "cannot open \(url): no answer within \(Int(timeout)) s"))
            }
        }
        try result.get()
    }

    private func expireLoad(_ generation: Int, _ error: CowatchError) {
        guard generation == loadGeneration else { return }
        finishLoad(.failure(error))
    }

    private func finishLoad(_ result: Result<Void, CowatchError>) {
        loadWaiter?.resume(returning: result)
        loadWaiter = nil
    }

    // MARK: Events

    /// Consumes player events until the player shuts down.
    public func runEvents() async {
        for await event in player.events {
            handle(event)
        }
        playerEnded = true
        roomEvents?.finish()
        finishLoad(.failure(CowatchError(.mediaUnavailable, "the player quit while opening \(configuration.media)")))
        for waiter in restartWaiters.values { waiter.resume(returning: false) }
        restartWaiters = [:]
        for waiter in endWaiters { waiter.resume() }
        endWaiters = []
    }

    /// Returns once the player has shut down (the user closed it, or `quit`).
    public func waitUntilPlayerEnded() async {
        if playerEnded || stopWaiting { return }
        await withCheckedContinuation { endWaiters.append($0) }
    }

    /// Releases `waitUntilPlayerEnded` callers (at graceful shutdown).
    public func stopWaitingForPlayerEnd() {
        stopWaiting = true
        for waiter in endWaiters { waiter.resume() }
        endWaiters = []
    }

    private func handle(_ event: MpvEvent) {
        if media.isStale(event) { return }
        roomEvents?.yield(event)
        switch event {
        case .fileLoaded:
            fileLoaded = true
        case .endFile(let reason, let error, _):
            if reason == .error {
                let why = lastErrorLine.map { "\(error?.reason ?? "loading failed") (\($0))" }
                    ?? (error?.reason ?? "loading failed")
                let failure = CowatchError(.mediaUnavailable, "cannot open \(media.current): \(why)")
                if loadWaiter != nil {
                    finishLoad(.failure(failure))
                } else if room == nil {
                    // In a room, the session reports it (and tries the activity's fallback).
                    events.publish(ControlEvent(name: ControlEvent.Name.error, fields: [
                        "code": .string(failure.code.rawValue), "message": .string(failure.message),
                    ]))
                }
            }
        case .seek:
            for id in restartWaiters.keys { seekStartedSinceRegistration.insert(id) }
        case .playbackRestart:
            if fileLoaded { finishLoad(.success(())) }
            let ready = restartWaiters.filter { seekStartedSinceRegistration.contains($0.key) }
            for (id, waiter) in ready {
                restartWaiters[id] = nil
                seekStartedSinceRegistration.remove(id)
                waiter.resume(returning: true)
            }
            publishState(force: true)
        case .propertyChange("time-pos", _, _):
            break  // every frame; only the room's frame clock wants it
        case .propertyChange(let name, let value, _):
            if name == "eof-reached" {
                let reached = value?.boolValue ?? false
                if reached && !eof {
                    eof = true
                    events.publish(ControlEvent(name: ControlEvent.Name.endOfFile, fields: [
                        "position": .finite(try? player.getDouble("time-pos")),
                    ]))
                }
                eof = reached
            }
            publishState(force: false)
        case .log(let level, let prefix, let text):
            if level == "error" || level == "fatal" || level == "warn" {
                lastErrorLine = text
            }
            logger.debug("mpv: \(text)", metadata: ["cowatch.mpv.level": "\(level)", "cowatch.mpv.module": "\(prefix)"])
        case .shutdown:
            logger.debug("mpv shut down", metadata: ["cowatch.player": "shutdown"])
            if let handler = shutdownHandler { Task { await handler() } }
        case .startFile:
            break
        }
    }

    /// Publishes a `state` event when paused, speed or eof changed, or always after a seek.
    private func publishState(force: Bool) {
        let status = currentStatus()
        if !force, let last = lastPublished, last.paused == status.paused, last.speed == status.speed,
            last.eof == status.eof, last.title == status.title, last.duration == status.duration
        {
            return
        }
        lastPublished = status
        events.publish(ControlEvent(name: ControlEvent.Name.state, fields: status.json.objectValue ?? [:]))
    }

    // MARK: Status

    private func statusWithRoom() async -> PlayerStatus {
        var status = currentStatus()
        if let room { status.extra = await room.statusSections() }
        return status
    }

    /// A fresh read of the player's state (each property read is ~10 µs).
    public func currentStatus() -> PlayerStatus {
        PlayerStatus(
            position: try? player.getDouble("time-pos"),
            paused: (try? player.getFlag("pause")) ?? true,
            speed: (room?.following.withLock({ $0 }) == true ? room?.groupRate.withLock({ $0 }) : nil)
                ?? (try? player.getDouble("speed")) ?? 1,
            duration: try? player.getDouble("duration"),
            media: media.current,
            title: try? player.getString("media-title"),
            name: configuration.name,
            eof: (try? player.getFlag("eof-reached")) ?? false)
    }

    // MARK: Requests

    public func handle(_ request: ControlRequest) async -> ControlReply {
        do {
            return .success(request.requestID, try await perform(request.command))
        } catch {
            return .failure(request.requestID, error)
        }
    }

    private func perform(_ command: ControlCommand) async throws(CowatchError) -> JSONValue {
        if let room {
            let following = room.following.withLock { $0 }
            switch command {
            case .play, .pause, .togglePause, .seek, .speed:
                // After `leave`, these act on this player alone (below).
                if following {
                    try await room.request(command, seekTimeout: configuration.seekTimeout)
                    return await statusWithRoom().json
                }
            case .getStatus:
                return await statusWithRoom().json
            case .getParticipants:
                return await room.participantsJSON()
            case .leave:
                try await room.leave(timeout: configuration.seekTimeout)
                return await statusWithRoom().json
            case .join:
                try await room.join(timeout: configuration.seekTimeout)
                return await statusWithRoom().json
            case .end:
                try await room.end(timeout: configuration.seekTimeout)
                return await statusWithRoom().json
            case .open:
                // Waits for the server to accept the switch, not for everyone to load it.
                try await room.request(command, seekTimeout: configuration.seekTimeout)
                return await statusWithRoom().json
            case .setReady(let ready):
                await room.setStatus(ready: ready)
                return await statusWithRoom().json
            case .setWaitForMe(let on):
                await room.setStatus(waitForMe: on)
                return await statusWithRoom().json
            case .setRole(let name, let role):
                try await room.setRole(of: name, to: role, timeout: configuration.seekTimeout)
                return await statusWithRoom().json
            case .kick(let name):
                try await room.kick(name, timeout: configuration.seekTimeout)
                return await statusWithRoom().json
            case .acceptOpen:
                try await room.acceptOpen()
                return await statusWithRoom().json
            case .getInvite(let host):
                return ["invite": .string(try await room.invite(host: host).text)]
            default:
                break
            }
        }
        switch command {
        case .play:
            try mpv { try player.setFlag("pause", false) }
        case .pause:
            try mpv { try player.setFlag("pause", true) }
        case .togglePause:
            let paused = try mpv { try player.getFlag("pause") }
            try mpv { try player.setFlag("pause", !paused) }
        case .speed(let rate):
            try mpv { try player.setDouble("speed", rate) }
        case .seek(let seconds, let mode):
            try await seek(seconds: seconds, mode: mode)
        case .getStatus:
            return currentStatus().json
        case .getProperty(let name):
            return JSONValue(try mpv { try player.getNode(name) })
        case .getParticipants, .leave, .join, .end, .setReady, .setWaitForMe, .setRole, .kick, .acceptOpen, .getInvite:
            throw CowatchError(.notInRoom, "this daemon is not in a room")
        case .open(let open):
            // Alone: just switch the media.
            try mpv { try media.load(open.url) }
        case .quit:
            // Give the reply a moment to reach the client before connections are torn down.
            if let handler = shutdownHandler {
                Task {
                    try? await Task.sleep(for: .milliseconds(100))
                    await handler()
                }
            }
            return .null
        }
        return currentStatus().json
    }

    private func seek(seconds: Double, mode: SeekMode) async throws(CowatchError) {
        var target = seconds
        if mode == .relative {
            target += (try? player.getDouble("time-pos")) ?? 0
        }
        target = max(0, target)
        if let duration = try? player.getDouble("duration"), duration > 0 {
            target = min(target, duration)
        }
        nextWaiterID += 1
        let id = nextWaiterID
        try mpv { try player.command(["seek", String(target), "absolute+exact"]) }
        let timeout = configuration.seekTimeout
        let landed = await withCheckedContinuation { continuation in
            restartWaiters[id] = continuation
            Task { [weak self] in
                try? await Task.sleep(for: .seconds(timeout))
                await self?.expireRestartWaiter(id)
            }
        }
        if !landed {
            throw CowatchError(.timeout, "the player did not finish seeking within \(timeout) s")
        }
    }

    private func expireRestartWaiter(_ id: Int) {
        seekStartedSinceRegistration.remove(id)
        restartWaiters.removeValue(forKey: id)?.resume(returning: false)
    }

    /// Runs player calls, turning `MpvError` into the control protocol's codes.
    private func mpv<T>(_ body: () throws -> T) throws(CowatchError) -> T {
        do {
            return try body()
        } catch let error as MpvError {
            if error.isPropertyUnavailable {
                throw CowatchError(.propertyUnavailable, error.description)
            }
            throw CowatchError(.playerError, error.description)
        } catch {
            throw CowatchError(.playerError, "\(error)")
        }
    }
}

extension JSONValue {
    init(_ node: MpvNode) {
        switch node {
        case .none: self = .null
        case .string(let value): self = .string(value)
        case .flag(let value): self = .bool(value)
        case .int64(let value): self = .number(Double(value))
        case .double(let value): self = .finite(value)
        case .array(let values): self = .array(values.map(JSONValue.init))
        case .map(let map): self = .object(map.mapValues(JSONValue.init))
        }
    }
}
