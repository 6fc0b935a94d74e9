import CowatchCore
import CowatchMpv
import Foundation

/// The player side of the room session, as a shell over the core's `PlayerSide` machine: this
/// reads the player (through the `RoomPlayer` seam), feeds the machine what it read (mpv's
/// events, the coordinator's orders, the tick), and carries out the machine's actions — player
/// commands, group requests, status updates, errors and notices. The machine holds every state
/// and guard (what media the player has relative to the room's, the seek fence, stalls, echoes,
/// the person's seek gestures).
///
/// Threading: actor-isolated to `RoomSession`.
extension RoomSession {
    // MARK: Reading

    /// Reads the player: audio-pts while playing with audio, the frame clock while playing without,
    /// the shown frame (time-pos) while paused (`PlayerSide.reading` says which).
    func sample() -> RoomCoordinator.PlayerSample? {
        guard let paused = player.paused, let speed = player.speed else { return nil }
        let reading = playerSide.reading(paused: paused, speed: speed)
        let before = clock.now()
        var position: Double?
        switch reading.source {
        case .audioPTS?: position = player.audioPosition
        case .frameClock?: position = playerSide.framePosition(at: before)
        case nil: break
        }
        if position == nil { position = player.shownPosition }
        let after = clock.now()
        guard let position else { return nil }
        return .init(
            position: position, at: (before + after) / 2, paused: paused, speed: speed, seeking: reading.seeking,
            stalled: reading.stalled)
    }

    /// Which fine clock this media offers.
    func probeTracks() {
        playerSide.tracksProbed(hasAudio: player.hasAudio)
    }

    // MARK: Stalls

    /// Tells the room our stall and whether to wait for us, as the player side has them now.
    func updateStatus(now: Double) {
        var status = coordinator.status
        status.stall = playerSide.stall(now: now)
        status.waitForMe = playerSide.waitForMe
        perform(coordinator.setStatus(status))
    }

    /// Deadlines of the player side, run by the session's tick: a held seek whose fence did not
    /// come, a load that takes too long, a person's seek gesture that has gone quiet.
    func playerTick(now: Double) {
        carryOut(playerSide.tick(joined: isJoined, now: now), now: now)
    }

    // MARK: Commanding

    /// Carries out the coordinator's order, read against the player.
    func apply(_ command: RoomCoordinator.PlayerCommand) {
        let now = clock.now()
        switch command {
        case .setPaused(let paused):
            // A change on its instant (a start, a pause the room scheduled) was decided from a
            // read of the player a moment ago, which is what made it a change: no second read,
            // which would wait for mpv's core on the instant itself.
            let current = playerSide.transitionInstant != nil ? !paused : player.paused
            carryOut(playerSide.orderPause(paused, playerPaused: current, now: now), now: now)
        case .setSpeed(let speed):
            carryOut(playerSide.orderSpeed(speed, playerSpeed: player.speed, now: now), now: now)
        case .seek(let target):
            carryOut(playerSide.orderSeek(to: target, now: now), now: now)
        }
    }

    /// Carries out the player side's actions in order; `now` is the instant they were decided at.
    func carryOut(_ actions: [PlayerSide.Action], now: Double) {
        for action in actions {
            switch action {
            case .setPause(let paused):
                do {
                    try player.setPaused(paused)
                    playerSide.pauseSet(paused, at: clock.now())
                } catch {
                    commandFailed(error)
                }
            case .setSpeed(let speed):
                setSpeedMeasuringOutput(speed)
            case .fence(let fence):
                do {
                    // Comes back behind every event before it (see `PlayerSide+Orders.swift`).
                    try player.fence(fence)
                } catch {
                    // No fence to be had: seek at once.
                    let at = clock.now()
                    carryOut(playerSide.fenceFailed(now: at), now: at)
                }
            case .seek(let target):
                do {
                    try player.seek(to: target)
                } catch {
                    commandFailed(error)
                    playerSide.seekFailed()
                }
            case .load(let url):
                do {
                    try media.load(url)
                } catch {
                    let at = clock.now()
                    carryOut(playerSide.loadRefused(error.reason, now: at), now: at)
                }
            case .holdPaused:
                apply(.setPaused(true))
            case .request(let request):
                groupRequest(request, now: now)
            case .statusChanged:
                updateStatus(now: now)
            case .reportMedia:
                reportMedia()
            case .switched(let url):
                probeTracks()
                playerListReplaced()
                queueEntrySubtitles(mediaChanged: true)
                logger.debug("switched media", metadata: ["cowatch.media": "\(url)"])
            case .error(let error):
                publishError(error)
            case .warning(let message):
                logger.warning("\(message)")
            case .show(let text, let milliseconds):
                showOnScreen(text, milliseconds: milliseconds)
            case .offered(let activity, let url):
                let by = activity.openedBy ?? "someone"
                events.publish(.openOffer(OpenOffer(id: activity.id, url: url, title: activity.displayTitle, by: by)))
            }
        }
    }

    /// Sets the player's speed; while audio plays, audio-pts read just before and just after
    /// shows the output's delay (mpv scales the delay by the current speed: a change of Δ steps
    /// audio-pts by −delay·Δ at once), which the coordinator keeps (`outputDelayMeasured`).
    private func setSpeedMeasuringOutput(_ speed: Double) {
        let measure = playerSide.hasAudio && player.paused == false
        let old = measure ? player.speed : nil
        let before = measure ? player.audioPosition : nil
        let start = clock.now()
        do {
            try player.setSpeed(speed)
        } catch {
            commandFailed(error)
            return
        }
        guard let old, let before, abs(speed - old) >= Self.speedChangeMeasured, let after = player.audioPosition else { return }
        let step = after - before - (clock.now() - start) * old
        coordinator.outputDelayMeasured(-step / (speed - old))
    }

    /// The smallest speed change that measures the output's delay: 0.2 % steps a 50 ms delay by
    /// 0.1 ms, far above audio-pts' noise.
    static let speedChangeMeasured = 0.002

    private func commandFailed(_ error: any Error) {
        logger.debug("player command failed", metadata: ["cowatch.room.error": "\(error)"])
    }

    /// A person's change at the player, asked of the group (a pause or play at the position the
    /// player shows now).
    private func groupRequest(_ request: PlayerSide.GroupRequest, now: Double) {
        let asked: (id: Int, actions: [RoomCoordinator.Action])
        switch request {
        case .pause:
            asked = coordinator.request(.pause, position: player.shownPosition, now: now)
        case .play:
            asked = coordinator.request(.play, position: player.shownPosition, now: now)
        case .speed(let rate):
            asked = coordinator.request(.speed, position: nil, rate: rate, now: now)
        case .seek(let from, let to):
            asked = coordinator.request(.seek, position: to, from: from, now: now)
        }
        perform(asked.actions)
    }

    // MARK: Player events

    /// Sees every mpv event, reads what the player side needs with it, and feeds it.
    ///
    /// Threading: `PlayerController`, the player's one event consumer, awaits this for each event
    /// in order; it never suspends, so the controller waits only for the actor's turn.
    func playerEvent(_ event: MpvEvent) {
        playerEventsSeen += 1
        let now = clock.now()
        switch event {
        case .startFile:
            let ordered = playerSide.media.isLoading
            playerSide.fileStarted()
            if !ordered { playerMovedThroughItsList() }
        case .log(let level, let prefix, let text):
            playerSide.logged(.init(level: level, prefix: prefix, text: text), now: now)
        case .seek:
            playerSide.seekStarted(groupPosition: coordinator.expectedPosition(atLocal: now), now: now)
        case .fileLoaded:
            playerSide.fileLoaded()
        case .endFile(let reason, let error, _):
            guard reason == .error else { break }
            let actions = playerSide.fileFailed(
                url: media.current, mpvReason: error?.reason, failedOutput: error?.failedOutput, now: now)
            carryOut(actions, now: now)
        case .playbackRestart:
            let actions = playerSide.playbackRestarted(
                position: player.shownPosition, duration: player.duration, joined: isJoined,
                groupPosition: coordinator.expectedPosition(atLocal: now), now: now)
            carryOut(actions, now: now)
        case .propertyChange(name: "eof-reached", let value, _):
            if value?.boolValue == true { mediaEnded() }
        case .propertyChange(name: "paused-for-cache", let value, _):
            carryOut(playerSide.bufferingChanged(value?.boolValue ?? false), now: now)
            if value?.boolValue == true { streamBuffering() }
        case .propertyChange(name: "time-pos", let value, let at):
            // Read the player only when the frame clock takes the frame.
            guard playerSide.wantsFrames, let position = value?.doubleValue else { return }
            let paused = player.paused
            let speed = paused == false ? player.speed : nil
            playerSide.frameShown(position: position, at: at, paused: paused, speed: speed)
        case .propertyChange(name: "pause", let value, _):
            guard let paused = value?.boolValue else { return }
            carryOut(playerSide.pauseChanged(paused, joined: isJoined, now: now), now: now)
        case .propertyChange(name: "speed", let value, _):
            guard let speed = value?.doubleValue else { return }
            carryOut(playerSide.speedChanged(speed, joined: isJoined), now: now)
        case .clientMessage(let arguments) where arguments.first == PlayerFence.message:
            if let fence = PlayerFence.number(in: arguments) {
                carryOut(playerSide.fenceReturned(fence, now: now), now: now)
            }
        case .clientMessage(let arguments):
            windowMessage(arguments)
        default:
            break
        }
    }

    // MARK: Reporting media

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
    static func mediaInfo(url: String, player: any RoomPlayer) -> MediaInfo {
        var info = MediaInfo(duration: player.duration)
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
