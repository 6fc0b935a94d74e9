import CowatchCore
import CowatchMpv
import CowatchNet
import Logging

/// Owns the player for the daemon: opens the media, turns mpv events into control events, and
/// carries out control requests.
///
/// Threading: an actor; `runEvents()` is its event loop and must be running for `open()` and
/// seeks to complete. It is the only reader of the player's events, and hands each one to the
/// room session (when attached) before taking the next: nothing is queued between them. The
/// session never awaits this actor, so the two cannot wait on each other.
public actor PlayerController: ControlRequestHandler {
    let player: any MediaPlayer
    let configuration: DaemonConfiguration
    let events: EventHub
    let logger: Logger
    private var shutdownHandler: (@Sendable () async -> Void)?

    /// mpv's recent warnings and errors, to say why a load failed.
    private var loadLog = LoadFailureReason()
    /// The start-up load; why it failed; and the wake-up of `open()` waiting for it.
    private var startup: MediaLoad?
    private var startupFailure: CowatchError?
    private var startupChanged: Reply<Void>?
    /// Seeks of this player alone waiting to land: resolved at the first playback restart after
    /// their own seek started (an earlier seek's restart does not count).
    private var restartWaiters: [(reply: Reply<Bool>, seekStarted: Bool)] = []
    private var lastPublished: PlayerStatus?
    private var eof = false
    private var playerEnded = false
    private var stopWaiting = false
    private var endWaiters: [CheckedContinuation<Void, Never>] = []
    private var room: RoomSession?
    /// Player events taken in (counted once handled here and, when passed on, by the room
    /// session too), and those passed on: a test on a manual clock waits for the daemon to catch
    /// up with its player before it moves time on.
    private(set) var eventsHandled = 0
    private(set) var eventsForwarded = 0
    /// Loads media and knows which file the player has: `--media`, until switched (`open`).
    nonisolated let media: MediaLoader
    /// The same player as the room session commands and reads it (`MpvRoomPlayer` over `player`
    /// unless given): media loads go through it too.
    nonisolated let roomPlayer: any RoomPlayer

    /// The daemon's one clock: deadlines and stamps (a manual one in tests).
    nonisolated let clock: any MonotonicClock

    /// - Parameter roomPlayer: the room's seam to `player`; nil: `MpvRoomPlayer(player)` (a
    ///   simulated player passes itself).
    public init(
        player: any MediaPlayer, roomPlayer: (any RoomPlayer)? = nil, configuration: DaemonConfiguration,
        events: EventHub, logger: Logger, clock: any MonotonicClock = SystemClock()
    ) {
        self.player = player
        let roomPlayer = roomPlayer ?? MpvRoomPlayer(player)
        self.roomPlayer = roomPlayer
        self.clock = clock
        self.configuration = configuration
        self.events = events
        self.logger = logger
        self.media = MediaLoader(player: roomPlayer, url: configuration.media, clock: clock)
    }

    /// Puts the player under a room's control: playback commands become group actions, and the
    /// session is handed every player event from now on (in order, by `runEvents`) to tell its own
    /// changes from the user's.
    func attach(room: RoomSession) {
        self.room = room
    }

    /// Called for the `quit` command and when mpv goes away.
    public func setShutdownHandler(_ handler: @escaping @Sendable () async -> Void) {
        shutdownHandler = handler
    }

    // MARK: Opening

    /// Loads the media and waits until its first frame is decoded (so a room joins only with a
    /// player that is ready), or loading has failed; the fallback URL, offered to the others,
    /// serves this daemon too.
    /// Throws `media-unavailable` with mpv's reason, `player-error` when an output (`--vo`,
    /// `--ao`) cannot start, or `timeout`.
    public func open() async throws(CowatchError) {
        for property in ["pause", "speed", "eof-reached", "media-title", "duration", "time-pos", "paused-for-cache"] {
            try? player.observe(property)
        }
        // Joining without media: the player idles until the room's media streams from a sharer.
        guard !configuration.media.isEmpty else { return }
        var load = MediaLoad(url: configuration.media, fallback: configuration.fallbackURL, timeout: configuration.openTimeout)
        startupFailure = nil
        let actions = load.start(now: clock.now())
        startup = load
        carryOut(actions)
        // Until finished or failed; at each attempt's deadline the machine times it out (or
        // moves on to the fallback).
        while let deadline = startup?.deadline {
            let changed = Reply<Void>()
            startupChanged = changed
            await changed.wait(timeout: max(0, deadline - clock.now()), orElse: ())
            startupChanged = nil
            guard var running = startup else { break }
            let actions = running.tick(now: clock.now())
            startup = running
            carryOut(actions)
        }
        if let startupFailure { throw startupFailure }
    }

    private func carryOut(_ actions: [MediaLoad.Action]) {
        for action in actions {
            switch action {
            case .load(let url):
                loadLog.reset()
                guard var running = startup else { return }
                let next = media.carryOut(load: url, for: &running)
                startup = running
                carryOut(next)
            case .tryingFallback(let error, let fallback):
                logger.warning("\(error.message); trying the fallback \(fallback)")
            case .finished:
                startup = nil
                startupChanged?.resume(())
            case .failed(let error):
                startup = nil
                startupFailure = error
                startupChanged?.resume(())
            }
        }
    }

    // MARK: Events

    /// Consumes player events until the player shuts down.
    public func runEvents() async {
        for await event in player.events {
            await handle(event)
        }
        playerEnded = true
        if var running = startup {
            let actions = running.playerGone()
            startup = running
            carryOut(actions)
        }
        for waiter in restartWaiters { waiter.reply.resume(false) }
        restartWaiters = []
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

    /// Passes `event` to the room session first (its reactions are the time-critical ones), then
    /// takes it in here. Stale events (of a replaced file) reach neither.
    private func handle(_ event: MpvEvent) async {
        defer { eventsHandled += 1 }
        if media.isStale(event) { return }
        if let room {
            eventsForwarded += 1
            // Synchronous on the session: it waits at most for the actor's turn.
            await room.playerEvent(event)
        }
        take(event)
    }

    private func take(_ event: MpvEvent) {
        switch event {
        case .fileLoaded:
            startup?.fileWasLoaded()
        case .endFile(let reason, let error, _):
            if reason == .error {
                let failure = loadLog.explain(
                    url: media.current, mpvReason: error?.reason, failedOutput: error?.failedOutput)
                if var running = startup {
                    let actions = running.endedWithError(failure, now: clock.now())
                    startup = running
                    carryOut(actions)
                } else if room == nil {
                    // In a room, the session reports it (and tries the activity's fallback).
                    events.publish(.error(failure))
                }
            }
        case .seek:
            for index in restartWaiters.indices { restartWaiters[index].seekStarted = true }
        case .playbackRestart:
            if var running = startup {
                let actions = running.playbackRestarted()
                startup = running
                carryOut(actions)
            }
            for waiter in restartWaiters where waiter.seekStarted { waiter.reply.resume(true) }
            restartWaiters.removeAll { $0.seekStarted }
            publishState(force: true)
        case .propertyChange("time-pos", _, _):
            break  // every frame; only the room's frame clock wants it
        case .propertyChange(let name, let value, _):
            if name == "eof-reached" {
                let reached = value?.boolValue ?? false
                if reached && !eof {
                    eof = true
                    events.publish(.endOfFile(position: try? player.getDouble("time-pos")))
                }
                eof = reached
            }
            publishState(force: false)
        case .startFile:
            loadLog.reset()
        case .log(let level, let prefix, let text):
            loadLog.logged(.init(level: level, prefix: prefix, text: text))
            logger.debug("mpv: \(text)", metadata: ["cowatch.mpv.level": "\(level)", "cowatch.mpv.module": "\(prefix)"])
        case .clientMessage:
            break  // the room session reads the window's script messages
        case .shutdown:
            logger.debug("mpv shut down", metadata: ["cowatch.player": "shutdown"])
            if let handler = shutdownHandler { Task { await handler() } }
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
        events.publish(.state(status))
    }

    // MARK: Status

    private func statusWithRoom() async -> PlayerStatus {
        var status = currentStatus()
        if let room {
            let sections = await room.statusSections()
            status.room = sections.room
            status.clock = sections.clock
            status.drift = sections.drift
        }
        return status
    }

    /// The reply to a group action: the group's state as the action left it (the player
    /// follows at the scheduled instant, a moment later), with the room sections.
    private func statusAfterGroupAction() async -> PlayerStatus {
        var status = await statusWithRoom()
        if let room, let group = await room.groupState() {
            status.position = group.position
            status.paused = group.paused
            status.speed = group.rate
        }
        return status
    }

    /// A fresh read of the player's state (each property read is ~10 µs).
    public func currentStatus() -> PlayerStatus {
        PlayerStatus(
            position: try? player.getDouble("time-pos"),
            paused: (try? player.getFlag("pause")) ?? true,
            speed: room?.view.withLock({ $0.following ? $0.groupRate : nil })
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
        if let room, let route = command.roomRoute,
            !route.onlyWhileFollowing || room.view.withLock({ $0.following })
        {
            // After `leave`, playback commands act on this player alone (below).
            switch try await route.run(room, configuration.seekTimeout) {
            case .status: return await statusWithRoom().json
            case .groupStatus: return await statusAfterGroupAction().json
            case .data(let data): return data
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
        default:
            // The room's commands (`ControlCommand.roomRoute`), with no room to carry them out.
            throw CowatchError(.notInRoom, "this daemon is not in a room")
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
        let landing = Reply<Bool>()
        restartWaiters.append((landing, false))
        try mpv { try player.command(["seek", String(target), "absolute+exact"]) }
        let timeout = configuration.seekTimeout
        let landed = await landing.wait(timeout: timeout, orElse: false)
        restartWaiters.removeAll { $0.reply === landing }
        if !landed {
            throw CowatchError(.timeout, "the player did not finish seeking within \(timeout) s")
        }
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
