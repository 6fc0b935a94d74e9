/// The player's subtitle tracks, as a room's journal adds and removes them: external subtitle
/// files (`sub-add`, `sub-remove`) and which track is selected.
///
/// Not part of `RoomPlayer`: subtitles do not take part in keeping players together, and the
/// daemon's unit tests have nothing to simulate here (real subtitles are tested against real
/// mpv). Kept here so that the room session, too, names no mpv command.
///
/// Threading: any thread (it only calls the player). Errors: the player's `MpvError`.
public struct SubtitleTracks: Sendable {
    public let player: any MediaPlayer

    public init(_ player: any MediaPlayer) {
        self.player = player
    }

    /// Whether a subtitle track is selected, and the file it was added from (nil for one of the
    /// media's own tracks, or none).
    public var selected: (any: Bool, file: String?) {
        let any = (try? player.getNode("current-tracks/sub")).map { $0 != .none } ?? false
        return (any, try? player.getString("current-tracks/sub/external-filename"))
    }

    /// Adds the subtitles in `path` as a track titled `title`: selected, or (`select` false)
    /// left for mpv to pick as it would.
    public func add(_ path: String, title: String, select: Bool) throws(MpvError) {
        try player.command(["sub-add", path, select ? "select" : "auto", title])
    }

    /// Removes every track added from `file`; a player that cannot list its tracks keeps them.
    public func remove(file: String) {
        guard case .array(let tracks)? = try? player.getNode("track-list") else { return }
        for case .map(let track) in tracks where track["external-filename"] == .string(file) {
            if case .int64(let id)? = track["id"] { try? player.command(["sub-remove", String(id)]) }
        }
    }
}
