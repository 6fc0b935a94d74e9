extension PlayerSide {
    /// What the player has relative to the room's media: the one place that says it.
    ///
    /// Every switch the room makes ends in one of these: the player has the media (or opens
    /// it), the policy refused it, it waits for the person's `accept_open`, or it could not be
    /// opened. A player without the room's media is left alone by the coordinator and the
    /// person's changes at it stay theirs; one that cannot play tells the room not to wait.
    public enum Media: Sendable, Hashable {
        /// The player has the room's media (at first each participant's own copy, then a switch
        /// it finished opening): it follows the group, and the person's changes are the group's.
        case roomMedia
        /// Opening the media of the room's switch to `activity`; the player is held paused.
        case loading(MediaLoad, for: Activity)
        /// The room's media could not be opened (nor its fallback), or an offer went stale: the
        /// group goes on without this player until the next switch.
        case failed
        /// The switch to this activity was refused by `--allow-scheme` or `--accept-open operators`.
        case refused(Activity)
        /// The switch to this activity waits for `accept_open`, to open `url`.
        case offered(Activity, url: String)

        /// The player shows the room's media: the coordinator steers it, and the person's
        /// pause, play and seek at it become group requests.
        public var hasRoomMedia: Bool {
            if case .roomMedia = self { return true }
            return false
        }

        /// The player has, or is opening, the room's media (`can_play`; else the group need not
        /// wait for us).
        public var canPlay: Bool {
            switch self {
            case .roomMedia, .loading: return true
            case .failed, .refused, .offered: return false
            }
        }

        /// True while a switch is being opened.
        public var isLoading: Bool {
            if case .loading = self { return true }
            return false
        }

        /// The URL being opened (`room.activity.loading` in `get_status`), while loading.
        public var loadingURL: String? {
            if case .loading(let load, _) = self { return load.current }
            return nil
        }

        /// True when the player stood aside from a switch (refused or offered): the room going
        /// back to media it has brings it back.
        public var stoodAside: Bool {
            switch self {
            case .refused, .offered: return true
            case .roomMedia, .loading, .failed: return false
            }
        }
    }
}
