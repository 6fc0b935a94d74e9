import CowatchClient
import CowatchCore
import CowatchMpv
import Foundation

/// The player side of the room session: reading it, commanding it, telling our own changes from
/// the user's, noticing stalls, and switching media when the activity changes.
extension RoomSession {
    // MARK: Reading

    /// Reads the player: audio-pts while playing with audio, the frame clock while playing without,
    /// the shown frame (time-pos) while paused.
    func sample() -> RoomCoordinator.PlayerSample? {
        guard let paused = try? player.getFlag("pause"), let speed = try? player.getDouble("speed") else { return nil }
        // Without the room's media (refused, offered, or failed), the player is left alone.
        let stalled = loading != nil || buffering || cannotPlay
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

    /// Why this player cannot keep up right now, if it cannot.
    func currentStall(now: Double) -> StallReason? {
        if loading != nil { return .loading }
        if buffering { return .buffering }
        if seeking, !seekIsOurs, let started = seekStartedAt, now - started > Self.slowSeek { return .seeking }
        return nil
    }

    /// Tells the room when our stall (or whether to wait for us) changes.
    func updateStatus(now: Double) {
        var status = coordinator.status
        status.stall = currentStall(now: now)
        status.waitForMe = userWaitForMe && !cannotPlay
        perform(coordinator.setStatus(status))
    }

    /// Forgets seeks in flight (a new file, or a session that ended): their events must not
    /// become group actions later.
    func forgetSeeks() {
        userSeekFrom = nil
        ourSeeks = []
        seeking = false
        seekStartedAt = nil
        seekIsOurs = false
    }

    // MARK: Commanding

    func apply(_ command: RoomCoordinator.PlayerCommand) {
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
                seekIsOurs = true
                seekStartedAt = now
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
            seekStartedAt = seekStartedAt ?? now
            if ourSeeks.isEmpty {
                seeking = true
                seekIsOurs = false
                // Without the room's media, the person's seeks are theirs alone.
                if loading == nil && !cannotPlay { userSeekFrom = userSeekFrom ?? coordinator.expectedPosition(atLocal: now) }
            } else {
                ourSeeks.removeFirst()
                seeking = true
            }
        case .fileLoaded:
            if loading != nil { loadingFileLoaded = true }
        case .endFile(let reason, _, _):
            guard reason == .error else { break }
            if loading != nil {
                loadFailed()
            } else {
                publishError(CowatchError(.mediaUnavailable, "playing \(media.current) failed"))
            }
        case .playbackRestart:
            seeking = false
            seekStartedAt = nil
            frameClock.reset()
            if loading != nil {
                if loadingFileLoaded { finishLoading() }
                return
            }
            if let from = userSeekFrom, ourSeeks.isEmpty, coordinator.isJoined {
                userSeekFrom = nil
                let target = (try? player.getDouble("time-pos")) ?? from
                perform(coordinator.request(.seek, position: target, from: from, now: now).actions)
            }
            updateStatus(now: now)
        case .propertyChange(name: "paused-for-cache", let value, _):
            buffering = value?.boolValue ?? false
            updateStatus(now: now)
        case .propertyChange(name: "time-pos", let value, let at):
            // Without audio, the instants at which frames change are the fine clock.
            guard !hasAudio, !seeking, loading == nil, let position = value?.doubleValue,
                (try? player.getFlag("pause")) == false, let speed = try? player.getDouble("speed")
            else { return }
            frameClock.shown(position: position, at: at, rate: speed)
        case .propertyChange(name: "pause", let value, _):
            guard let paused = value?.boolValue, coordinator.isJoined else { return }
            if let index = recentPaused.firstIndex(where: { $0.value == paused }) {
                recentPaused.remove(at: index)
                return
            }
            guard loading == nil, !cannotPlay else { return }
            let position = try? player.getDouble("time-pos")
            perform(coordinator.request(paused ? .pause : .play, position: position, now: now).actions)
        case .propertyChange(name: "speed", let value, _):
            guard let speed = value?.doubleValue, coordinator.isJoined, !cannotPlay else { return }
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

    // MARK: Switching media

    /// Loads `url` for `activity`; the player is held until the group starts together.
    func startLoading(_ activity: Activity, url: String) {
        loading = activity
        loadingFileLoaded = false
        loadGeneration += 1
        let generation = loadGeneration
        forgetSeeks()
        // Held until the group starts together; the room's timeline says when.
        apply(.setPaused(true))
        do {
            try media.load(url)
        } catch {
            loadFailed()
            return
        }
        updateStatus(now: monotonicNow())
        // A source that never answers (an unreachable host) fails like one that refuses.
        let timeout = configuration.openTimeout
        Task { [weak self] in
            try? await Task.sleep(for: .seconds(timeout))
            await self?.loadTimedOut(generation)
        }
    }

    private func loadTimedOut(_ generation: Int) {
        guard generation == loadGeneration, loading != nil else { return }
        publishError(CowatchError(.timeout, "\(media.current) did not open within \(Int(configuration.openTimeout)) s"))
        loadFailed()
    }

    /// The new media cannot be opened: try the activity's fallback once, else give up and let
    /// the group carry on without us (it stops waiting after its bound).
    private func loadFailed() {
        guard let activity = loading else { return }
        let tried = media.current
        if !loadingTriedFallback, let fallback = activity.fallbackURL, fallback != tried, room.openPolicy.allows(fallback) {
            loadingTriedFallback = true
            publishError(CowatchError(.mediaUnavailable, "cannot open \(tried); trying the fallback \(fallback)"))
            startLoading(activity, url: fallback)
            return
        }
        loading = nil
        loadingTriedFallback = false
        loadGeneration += 1
        cannotPlay = true
        publishError(CowatchError(.mediaUnavailable, "cannot open \(tried) (\(activity.displayTitle)); the group goes on without this player"))
        updateStatus(now: monotonicNow())
    }

    private func finishLoading() {
        loading = nil
        loadingTriedFallback = false
        loadGeneration += 1
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
    static func mediaInfo(url: String, player: MpvPlayer) -> MediaInfo {
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
