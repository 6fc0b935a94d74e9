import CowatchClient
import CowatchCore
import CowatchMpv
import Foundation

/// The player side of the room session: reading it, commanding it, and feeding what it reports
/// to the core's pure machines — `PlayerEchoTracker` (our changes or the person's),
/// `UserSeekCoalescer` (a drag is one group seek), `StallTracker` (what we report as a stall) and
/// `MediaLoad` (switching media with a fallback and a deadline).
///
/// Threading: actor-isolated to `RoomSession`.
extension RoomSession {
    // MARK: Reading

    /// Reads the player: audio-pts while playing with audio, the frame clock while playing without,
    /// the shown frame (time-pos) while paused.
    func sample() -> RoomCoordinator.PlayerSample? {
        guard let paused = try? player.getFlag("pause"), let speed = try? player.getDouble("speed") else { return nil }
        // Without the room's media (refused, offered, or failed), the player is left alone.
        let stalled = load != nil || stalls.buffering || cannotPlay
        // A person's seek gesture not yet sent to the room is not drift to correct, nor is their
        // pause or speed read before mpv reported it (correcting it would hide it for good).
        let seeking = stalls.seeking || userSeeks.isActive || !echoes.explains(paused: paused, speed: speed)
        let before = monotonicNow()
        var position: Double?
        if !paused && !seeking && !stalled {
            position = hasAudio ? try? player.getDouble("audio-pts") : frameClock.position(at: before)
        }
        if position == nil { position = try? player.getDouble("time-pos") }
        let after = monotonicNow()
        guard let position else { return nil }
        return .init(
            position: position, at: (before + after) / 2, paused: paused, speed: speed, seeking: seeking, stalled: stalled)
    }

    /// Which fine clock this media offers.
    func probeTracks() {
        hasAudio = (try? player.getNode("current-tracks/audio")).map { $0 != .none } ?? false
        frameClock.reset()
    }

    // MARK: Stalls

    /// Tells the room when our stall (or whether to wait for us) changes.
    func updateStatus(now: Double) {
        var status = coordinator.status
        status.stall = stalls.stall(now: now)
        status.waitForMe = userWaitForMe && !cannotPlay
        perform(coordinator.setStatus(status))
    }

    /// Forgets seeks in flight (a new file, or a session that ended): their events must not
    /// become group actions later.
    func forgetSeeks() {
        heldSeek = nil
        userSeeks.reset()
        echoes.reset()
        stalls.seekEnded()
    }

    /// Deadlines of the player side, run by the session's tick: a load that takes too long,
    /// a person's seek gesture that has gone quiet.
    func playerTick(now: Double) {
        // The fence always comes back unless mpv stalls; then seek without it rather than never.
        if let held = heldSeek, now - held.at > 1 { releaseHeldSeek() }
        if var running = load {
            let actions = running.tick(now: now)
            load = running
            carryOut(actions)
        }
        if let gesture = userSeeks.poll(now: now), isJoined, load == nil, !cannotPlay {
            perform(coordinator.request(.seek, position: gesture.to, from: gesture.from, now: now).actions)
        }
    }

    // MARK: Commanding

    func apply(_ command: RoomCoordinator.PlayerCommand) {
        let now = monotonicNow()
        do {
            switch command {
            case .setPaused(let paused):
                // Only a real change produces an mpv event to recognise as ours later. A start on
                // its instant was decided from a read of a paused player a moment ago: no second
                // read, which would wait for mpv's core on the instant itself.
                let current = transitionInstant != nil && !paused ? true : (try? player.getFlag("pause"))
                guard current != paused else { return }
                echoes.orderedPause(paused, now: now)
                try player.setFlag("pause", paused)
                if !paused, let instant = transitionInstant { startLateness = monotonicNow() - instant }
                frameClock.reset()
            case .setSpeed(let speed):
                guard (try? player.getDouble("speed")) != speed else { return }
                // Without audio, mpv shows a frame due within about 10 ms at once when the speed
                // changes: that frame comes early by what was left (measured with mpv 0.35:
                // every change with the next frame 0–10.3 ms away, none from 10.7 ms on). A
                // correction waits for a tick further from a frame (the controller asks again
                // every tick); a change the group scheduled is made on its instant regardless.
                if !hasAudio, transitionInstant == nil, let next = frameClock.nextFrame(after: now),
                    next - now < Self.frameGuard
                {
                    return
                }
                echoes.orderedSpeed(speed)
                try player.setDouble("speed", speed)
            case .seek(let target):
                stalls.seekStarted(ours: true, now: now)
                frameClock.reset()
                holdSeek(to: max(0, target), now: now)
            }
        } catch {
            logger.debug("player command failed", metadata: ["cowatch.room.error": "\(error)"])
        }
    }

    /// Seconds before a frame is due within which a video-only player's speed is left alone
    /// (mpv's 10.5 ms, and the frame clock's notification latency).
    static let frameGuard = 0.012

    /// The message `fence` sends itself through mpv.
    static let fenceMessage = "cowatch-fence"

    /// Our seeks wait behind a fence. A person's seek that mpv has already carried out shows in
    /// the position we read before its `seek` event reaches us; a correction computed from that
    /// read would send the player back, and its event would then pass for ours: the person's
    /// seek lost. A `script-message-to` ourselves comes back behind every event mpv queued
    /// before it, so when it arrives with no person's seek ahead of it, the seek is ours to make.
    /// It costs one pass through the event thread (well under a millisecond).
    private func holdSeek(to target: Double, now: Double) {
        fences += 1
        heldSeek = (fences, target, now)
        do {
            try player.command(["script-message-to", player.clientName, Self.fenceMessage, String(fences)])
        } catch {
            releaseHeldSeek()  // no fence to be had: seek at once, as before
        }
    }

    /// Carries out the seek held behind the fence.
    func releaseHeldSeek() {
        guard let held = heldSeek else { return }
        heldSeek = nil
        echoes.orderedSeek(to: held.target, now: monotonicNow())
        do {
            try player.command(["seek", String(held.target), "absolute+exact"])
        } catch {
            logger.debug("player command failed", metadata: ["cowatch.room.error": "\(error)"])
            stalls.seekEnded()
        }
    }

    // MARK: Player events

    /// Sees every mpv event; changes we did not order come from the person at this player
    /// (keyboard or mouse in the mpv window) and become group actions.
    func playerEvent(_ event: MpvEvent) {
        let now = monotonicNow()
        switch event {
        case .startFile:
            if load != nil { loadLog.reset() }
        case .log(let level, let prefix, let text):
            let line = LoadFailureReason.Line(level: level, prefix: prefix, text: text)
            if load != nil { loadLog.logged(line) }
            if prefix.hasPrefix("ffmpeg") {
                recentLibavLog.append((now, line))
                if recentLibavLog.count > 16 { recentLibavLog.removeFirst() }
            }
        case .seek:
            let ours = echoes.seekReported(now: now)
            // A person's seek came first: the held correction was computed from it; drop it.
            if !ours { heldSeek = nil }
            stalls.seekStarted(ours: ours, now: now)
            // Without the room's media, the person's seeks are theirs alone.
            if !ours, load == nil, !cannotPlay {
                userSeeks.seekStarted(groupPosition: coordinator.expectedPosition(atLocal: now), now: now)
            }
        case .fileLoaded:
            load?.fileWasLoaded()
        case .endFile(let reason, let error, _):
            guard reason == .error else { break }
            let failure = loadLog.explain(url: media.current, mpvReason: error?.reason, failedOutput: error?.failedOutput)
            if var running = load {
                let actions = running.endedWithError(failure, now: now)
                load = running
                carryOut(actions)
            } else {
                publishError(CowatchError(failure.code, "playing \(media.current) failed: \(failure.message)"))
            }
        case .playbackRestart:
            stalls.seekEnded()
            frameClock.reset()
            if var running = load {
                let actions = running.playbackRestarted()
                load = running
                carryOut(actions)
                return
            }
            let landed = (try? player.getDouble("time-pos")) ?? 0
            if echoes.seekLanded(at: landed, duration: try? player.getDouble("duration")), isJoined, !cannotPlay {
                // A person's seek merged into ours by mpv: theirs, from where the group is.
                userSeeks.seekStarted(groupPosition: coordinator.expectedPosition(atLocal: now), now: now)
            }
            if userSeeks.isActive {
                userSeeks.landed(at: landed, now: now)
            }
            updateStatus(now: now)
        case .propertyChange(name: "paused-for-cache", let value, _):
            stalls.buffering = value?.boolValue ?? false
            updateStatus(now: now)
        case .propertyChange(name: "time-pos", let value, let at):
            // Without audio, the instants at which frames change are the fine clock.
            guard !hasAudio, !stalls.seeking, load == nil, let position = value?.doubleValue,
                (try? player.getFlag("pause")) == false, let speed = try? player.getDouble("speed")
            else { return }
            frameClock.shown(position: position, at: at, rate: speed)
        case .propertyChange(name: "pause", let value, _):
            guard let paused = value?.boolValue, !echoes.pauseReported(paused, now: now) else { return }
            guard isJoined, load == nil, !cannotPlay else { return }
            let position = try? player.getDouble("time-pos")
            perform(coordinator.request(paused ? .pause : .play, position: position, now: now).actions)
        case .propertyChange(name: "speed", let value, _):
            guard let speed = value?.doubleValue, !echoes.speedReported(speed) else { return }
            guard isJoined, !cannotPlay else { return }
            perform(coordinator.request(.speed, position: nil, rate: speed, now: now).actions)
        case .clientMessage(let arguments) where arguments.first == Self.fenceMessage:
            if arguments.count == 2, Int(arguments[1]) == heldSeek?.fence { releaseHeldSeek() }
        case .clientMessage(let arguments):
            windowMessage(arguments)
        default:
            break
        }
    }

    // MARK: Switching media

    /// Loads `url` for `activity` (its fallback tried once if this fails); the player is held
    /// until the group starts together.
    func startLoading(_ activity: Activity, url: String) {
        let fallback = activity.fallbackURL.flatMap { room.openPolicy.allows($0) ? $0 : nil }
        var running = MediaLoad(
            url: url, fallback: url == activity.url ? fallback : nil, timeout: configuration.openTimeout)
        loadActivity = activity
        forgetSeeks()
        // Held until the group starts together; the room's timeline says when.
        apply(.setPaused(true))
        let actions = running.start(now: monotonicNow())
        load = running
        stalls.loading = true
        carryOut(actions)
        updateStatus(now: monotonicNow())
    }

    /// Gives up a switch still loading (another replaced it).
    func abandonLoading() {
        load = nil
        loadActivity = nil
        stalls.loading = false
    }

    private func carryOut(_ actions: [MediaLoad.Action]) {
        for action in actions {
            switch action {
            case .load(let url):
                loadLog.reset()
                guard var running = load else { return }
                let next = media.carryOut(load: url, for: &running)
                load = running
                carryOut(next)
            case .tryingFallback(let error, let fallback):
                publishError(CowatchError(error.code, "\(error.message); trying the fallback \(fallback)"))
            case .finished:
                finishLoading()
            case .failed(let error):
                let title = loadActivity?.displayTitle ?? media.current
                abandonLoading()
                cannotPlay = true
                publishError(CowatchError(error.code, "\(error.message) (\(title)); the group goes on without this player"))
                updateStatus(now: monotonicNow())
            }
        }
    }

    private func finishLoading() {
        abandonLoading()
        probeTracks()
        logger.debug("switched media", metadata: ["cowatch.media": "\(media.current)"])
        updateStatus(now: monotonicNow())
        reportMedia()
    }

    /// Tells the room what our copy of the media looks like, so different files get noticed.
    func reportMedia() {
        let url = media.current
        let activityID = coordinator.activity.id
        let player = self.player
        // Reading 4 MiB may be slow on a network filesystem: not on the actor, whose tick keeps time.
        Task.detached { [weak self] in
            let info = Self.mediaInfo(url: url, player: player)
            await self?.mediaMeasured(info, activityID: activityID)
        }
    }

    private func mediaMeasured(_ info: MediaInfo, activityID: Int) {
        guard coordinator.activity.id == activityID else { return }  // switched meanwhile
        perform(coordinator.mediaLoaded(info))
    }

    /// Duration from the player; size and a fingerprint of the first megabytes for local files.
    static func mediaInfo(url: String, player: any MediaPlayer) -> MediaInfo {
        var info = MediaInfo(duration: try? player.getDouble("duration"))
        guard let path = MediaFingerprint.localPath(of: url),
            (try? FileManager.default.attributesOfItem(atPath: path))?[.type] as? FileAttributeType == .typeRegular,
            let handle = FileHandle(forReadingAtPath: path)
        else {
            return info
        }
        defer { try? handle.close() }
        if let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let size = attributes[.size] as? NSNumber
        {
            info.size = size.intValue
        }
        if let prefix = try? handle.read(upToCount: MediaFingerprint.prefixBytes) {
            info.hash = MediaFingerprint.digest(prefix)
        }
        return info
    }
}

extension RoomSession {
    /// Sets how long a person's seeking must be quiet before it becomes one group seek (tests
    /// on a loaded machine lengthen it, so a stalled test thread does not split one drag in two).
    ///
    /// Threading: actor-isolated.
    func setSeekGestureQuietPeriod(_ seconds: Double) {
        userSeeks.quietPeriod = seconds
    }
}
