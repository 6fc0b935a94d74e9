extension PlayerSide {
    /// What the shell carries out for the machine, in the order given.
    ///
    /// Player commands first come back through mpv as events (fed to the machine as facts);
    /// those that can fail are reported back (`fenceFailed`, `seekFailed`, `loadRefused`).
    public enum Action: Sendable, Hashable {
        // MARK: The player

        /// Set `pause`; then report `pauseSet` (a failure is only logged).
        case setPause(Bool)
        /// Set `speed` (a failure is only logged).
        case setSpeed(Double)
        /// Send fence `n` to ourselves through mpv (a `script-message-to` our own client); when
        /// it comes back, feed `fenceReturned(n)`; when it cannot be sent, `fenceFailed`.
        case fence(Int)
        /// Seek exactly to `target` (absolute); report a failure with `seekFailed`.
        case seek(to: Double)
        /// `loadfile url replace`; report mpv's refusal with `loadRefused`.
        case load(url: String)
        /// Hold the player paused: carried out as the coordinator's `setPaused(true)` is (read
        /// `pause`, then `orderPause`), so that only a real change is ordered.
        case holdPaused

        // MARK: The room

        /// Ask the group for this change (the person's, at the player).
        case request(GroupRequest)
        /// Tell the room our status again: `stall(now:)` and `waitForMe` as they are now.
        case statusChanged
        /// Tell the room what our copy of the current media looks like.
        case reportMedia

        // MARK: The daemon and the person

        /// The switch to `url` finished: read which tracks it has (`tracksProbed`).
        case switched(url: String)
        /// Publish this error event.
        case error(CowatchError)
        /// Write this warning to the daemon's log.
        case warning(String)
        /// Show this sentence on the player's OSD for `milliseconds`.
        case show(String, milliseconds: Int)
        /// Offer the room's switch to `url` for `activity` (an `open-offer` event); `accept_open`
        /// answers it (`acceptOffer`).
        case offered(Activity, url: String)
    }

    /// A change a person made at the player, for the whole group.
    public enum GroupRequest: Sendable, Hashable {
        /// Pause, at the player's position (the shell reads `time-pos` when it asks).
        case pause
        /// Play, from the player's position (read likewise).
        case play
        /// Play at this speed.
        case speed(Double)
        /// Seek from where the group was when the gesture began to where the player settled.
        case seek(from: Double, to: Double)
    }
}
