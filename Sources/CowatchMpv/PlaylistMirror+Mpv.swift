import CowatchCore

extension PlaylistMirror {
    /// mpv commands that make its playlist this mirror around the file it has loaded:
    /// `playlist-clear` (which keeps the file being played), the other items appended from one
    /// in-memory m3u (`loadlist memory://…`, so each carries its `#EXTINF` title), and the
    /// loaded file moved into its place. With nothing of the list loaded, the items follow
    /// whatever the player has.
    public var mpvCommands: [[String]] {
        var commands: [[String]] = [["playlist-clear"]]
        guard let playing, items.indices.contains(playing) else {
            if !items.isEmpty { commands.append(["loadlist", "memory://" + Self.m3u(items), "append"]) }
            return commands
        }
        let others = items.enumerated().filter { $0.offset != playing }.map(\.element)
        if !others.isEmpty { commands.append(["loadlist", "memory://" + Self.m3u(others), "append"]) }
        // The loaded file is first now: moved before the item after its place (past the end
        // for the last).
        if playing > 0 { commands.append(["playlist-move", "0", String(playing + 1)]) }
        return commands
    }

    /// The m3u text of `items`, titles as `#EXTINF` (one that cannot be a line as "?").
    static func m3u(_ items: some Sequence<Item>) -> String {
        var text = "#EXTM3U\n"
        for item in items {
            let title = listable(item.title) ? item.title : "?"
            text += "#EXTINF:-1,\(title)\n\(item.filename)\n"
        }
        return text
    }
}
