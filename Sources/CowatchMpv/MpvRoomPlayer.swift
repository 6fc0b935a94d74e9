import CowatchCore

/// The room session's player seam (`RoomPlayer`) over a `MediaPlayer`: each typed call as the
/// mpv command or property it is. The only place on the room's side that knows these strings.
///
/// Threading: any thread (it only calls the player, whose methods are thread-safe). Errors: the
/// player's, unchanged.
public struct MpvRoomPlayer: RoomPlayer {
    public let player: any MediaPlayer

    public init(_ player: any MediaPlayer) {
        self.player = player
    }

    // MARK: Commands

    public func setPaused(_ paused: Bool) throws(MpvError) {
        try player.setFlag("pause", paused)
    }

    public func setSpeed(_ speed: Double) throws(MpvError) {
        try player.setDouble("speed", speed)
    }

    public func seek(to position: Double) throws(MpvError) {
        try player.command(["seek", String(position), "absolute+exact"])
    }

    /// `script-message-to` this client: mpv queues it as an event behind those already queued.
    public func fence(_ number: Int) throws(MpvError) {
        try player.command(["script-message-to", player.clientName] + PlayerFence.arguments(number))
    }

    /// `loadfile URL replace` (`loadGuarded`: a network URL with mpv's safety on); the entry id is
    /// its result's `playlist_entry_id`.
    public func load(_ url: String) throws(MpvError) -> Int64? {
        let result = try player.loadGuarded(url)
        guard case .map(let fields) = result, case .int64(let entry)? = fields["playlist_entry_id"] else { return nil }
        return entry
    }

    /// `show-text` as an argument list: mpv expands `${…}` in commands given as one string,
    /// never in an argument list, so a chat line or a name is shown as sent.
    public func showText(_ text: String, milliseconds: Int) throws(MpvError) {
        try player.command(["show-text", text, String(milliseconds)])
    }

    /// `PlaylistMirror.mpvCommands`, in order.
    public func listPlaylist(_ mirror: PlaylistMirror) throws(MpvError) {
        for command in mirror.mpvCommands { try player.command(command) }
    }

    // MARK: Reads

    public var paused: Bool? { try? player.getFlag("pause") }
    public var speed: Double? { try? player.getDouble("speed") }
    public var shownPosition: Double? { try? player.getDouble("time-pos") }
    public var audioPosition: Double? { try? player.getDouble("audio-pts") }
    public var duration: Double? { try? player.getDouble("duration") }
    public var hasAudio: Bool { Self.hasTrack(player, "audio") }
    public var hasVideo: Bool { Self.hasTrack(player, "video") }
    public var mediaTitle: String? { try? player.getString("media-title") }
    public var cachedAhead: Double? { try? player.getDouble("demuxer-cache-duration") }
    public var playingFile: (path: String, index: Int)? {
        guard let path = try? player.getString("path"), let index = try? player.getDouble("playlist-playing-pos"), index >= 0
        else { return nil }
        return (path, Int(index))
    }

    private static func hasTrack(_ player: any MediaPlayer, _ type: String) -> Bool {
        (try? player.getNode("current-tracks/\(type)")).map { $0 != .none } ?? false
    }
}
