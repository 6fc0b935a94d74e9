/// mpv's own playlist as a mirror of the room's, so that mpv's OSD (`show-text ${playlist}`, the
/// OSC's list) shows what the group will play, with this player's file in its place.
///
/// mpv only ever plays what the daemon loads (`keep-open=always`: it never moves on by itself;
/// its next/previous keys are the group's, and a move through it by other means — the OSC's
/// arrows — is taken back and asked of the group): the mirror is for reading. Each item carries the
/// room's title; an entry this daemon has no copy of is listed by its title under a name no file
/// has, so nothing local is opened should a person pick it in mpv's own list.
///
/// Threading: a value type. Pure: the player seam (`RoomPlayer.listPlaylist`) carries it out.
public struct PlaylistMirror: Sendable, Hashable {
    /// One entry of the room's list as mpv should list it.
    public struct Item: Sendable, Hashable {
        /// What mpv lists as the file: this daemon's own path, the URL, or `lackingName`.
        public var filename: String
        public var title: String

        public init(filename: String, title: String) {
            self.filename = filename
            self.title = title
        }
    }

    /// The room's entries in order.
    public var items: [Item]
    /// The position in `items` of the file the player has loaded, when it is the room's current
    /// entry; nil when the player shows something else (the room's first media, an `open`) or
    /// nothing: the list then follows the loaded file.
    public var playing: Int?

    public init(items: [Item], playing: Int?) {
        self.items = items
        self.playing = playing
    }

    /// The mirror of `state` for a daemon whose copies are `resolved` (entry → its path, nil
    /// for a URL entry, absent when this daemon has none). `playsCurrent`: the player has the
    /// room's current entry loaded.
    public init(state: PlaylistState, resolved: [PlaylistEntry.ID: String?], playsCurrent: Bool) {
        items = state.entries.map { entry in
            let title = entry.displayTitle
            switch (entry.media, resolved[entry.id]) {
            case (.url(let url), .some) where Self.listable(url):
                return Item(filename: url, title: title)
            case (_, .some(.some(let path))) where path.hasPrefix("/") && Self.listable(path):
                return Item(filename: path, title: title)
            default:
                return Item(filename: Self.lackingName(entry.id), title: title + " (not here)")
            }
        }
        playing = playsCurrent ? state.entries.firstIndex { $0.id == state.current } : nil
    }

    /// A name no file has, for an entry this daemon lacks (an m3u line must be a name).
    public static func lackingName(_ id: PlaylistEntry.ID) -> String {
        "cowatch-lacking://entry/\(id)"
    }

    /// A path or title that fits on one m3u line.
    public static func listable(_ text: String) -> Bool {
        !text.isEmpty && !text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
}
