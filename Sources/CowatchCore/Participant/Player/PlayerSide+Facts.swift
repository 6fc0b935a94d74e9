/// What the player reports (mpv's events, with the properties the shell read for them), and the
/// tick. Changes we did not order come from the person at this player (keyboard or mouse in the
/// mpv window) and become group requests — only while in the room and on the room's media;
/// without it, the person's changes are theirs alone.
extension PlayerSide {
    /// The deadlines: a held seek whose fence did not come, a load that takes too long, a
    /// person's seek gesture gone quiet (one group seek when `joined` and on the room's media).
    public mutating func tick(joined: Bool, now: Double) -> [Action] {
        var actions: [Action] = []
        if let held = heldSeek, now - held.at > Self.fenceTimeout { actions += releaseHeldSeek(now: now) }
        actions += advanceLoad { $0.tick(now: now) }
        if let gesture = userSeeks.poll(now: now), joined, media.hasRoomMedia {
            actions.append(.request(.seek(from: gesture.from, to: gesture.to)))
        }
        return actions
    }

    /// A file started loading (START_FILE).
    public mutating func fileStarted() {
        if media.isLoading { loadLog.reset() }
    }

    /// mpv logged `line` (levels warn and worse): kept to explain a failing load, and FFmpeg's
    /// lines to explain a probe's failure (`libavLines(since:)`).
    public mutating func logged(_ line: LoadFailureReason.Line, now: Double) {
        if media.isLoading { loadLog.logged(line) }
        if line.prefix.hasPrefix("ffmpeg") {
            libavLog.append((now, line))
            if libavLog.count > Self.libavCapacity { libavLog.removeFirst() }
        }
    }

    /// A seek started. `groupPosition`: where the group is now (nil when its timeline is
    /// unknown). A person's seek that came before our held one drops it: the held correction was
    /// computed from the person's.
    public mutating func seekStarted(groupPosition: Double?, now: Double) {
        let ours = echoes.seekReported(now: now)
        if !ours { heldSeek = nil }
        stalls.seekStarted(ours: ours, now: now)
        if !ours, media.hasRoomMedia {
            userSeeks.seekStarted(groupPosition: groupPosition, now: now)
        }
    }

    /// The file is loaded (FILE_LOADED).
    public mutating func fileLoaded() {
        guard case .loading(var load, let activity) = media else { return }
        load.fileWasLoaded()
        media = .loading(load, for: activity)
    }

    /// The file `url` ended with an error (END_FILE): `mpvReason` is mpv's wording, and
    /// `failedOutput` "audio" or "video" when an output failed to start. A load under way tries
    /// its fallback or fails; otherwise the failure is only said.
    public mutating func fileFailed(url: String, mpvReason: String?, failedOutput: String?, now: Double) -> [Action] {
        let failure = loadLog.explain(url: url, mpvReason: mpvReason, failedOutput: failedOutput)
        guard media.isLoading else {
            return [.error(CowatchError(failure.code, "playing \(url) failed: \(failure.message)"))]
        }
        return advanceLoad { $0.endedWithError(failure, now: now) }
    }

    /// Playback (re)started (PLAYBACK_RESTART) at `position` (`time-pos`, nil when unreadable)
    /// of media lasting `duration`. Ends a load under way; else a landing far from where our
    /// seek was sent is a person's seek merged into ours (a gesture, when `joined`, from
    /// `groupPosition`), and a gesture's seek landed.
    public mutating func playbackRestarted(
        position: Double?, duration: Double?, joined: Bool, groupPosition: Double?, now: Double
    ) -> [Action] {
        stalls.seekEnded()
        frameClock.reset()
        if media.isLoading { return advanceLoad { $0.playbackRestarted() } }
        let landed = position ?? 0
        if echoes.seekLanded(at: landed, duration: duration), joined, media.hasRoomMedia {
            userSeeks.seekStarted(groupPosition: groupPosition, now: now)
        }
        if userSeeks.isActive { userSeeks.landed(at: landed, now: now) }
        return [.statusChanged]
    }

    /// `paused-for-cache` changed.
    public mutating func bufferingChanged(_ buffering: Bool) -> [Action] {
        stalls.buffering = buffering
        return [.statusChanged]
    }

    /// Whether `frameShown` would use a frame now (video without audio, not seeking, not
    /// loading): the shell reads `pause` and `speed` for a `time-pos` change only then.
    public var wantsFrames: Bool { !hasAudio && !stalls.seeking && !media.isLoading }

    /// `time-pos` changed to `position` at `at` (a new frame shown), the player's `pause` and
    /// `speed` as read then: without audio, these instants are the fine clock.
    public mutating func frameShown(position: Double, at: Double, paused: Bool?, speed: Double?) {
        guard wantsFrames, paused == false, let speed else { return }
        frameClock.shown(position: position, at: at, rate: speed)
    }

    /// mpv reported `pause` = `paused`: our echo, or the person's pause or play (a group request
    /// when `joined` and on the room's media).
    public mutating func pauseChanged(_ paused: Bool, joined: Bool, now: Double) -> [Action] {
        guard !echoes.pauseReported(paused, now: now) else { return [] }
        guard joined, media.hasRoomMedia else { return [] }
        return [.request(paused ? .pause : .play)]
    }

    /// mpv reported `speed`: our echo, or the person's speed (a group request when `joined` and
    /// the player can play the room's media, loading included).
    public mutating func speedChanged(_ speed: Double, joined: Bool) -> [Action] {
        guard !echoes.speedReported(speed) else { return [] }
        guard joined, media.canPlay else { return [] }
        return [.request(.speed(speed))]
    }
}
