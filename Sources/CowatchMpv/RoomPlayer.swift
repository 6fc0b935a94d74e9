import CowatchCore
/// The player as a room session drives it: the playback commands the session's actions need
/// and typed reads of the player's state — not mpv's command strings or property names.
///
/// `MpvRoomPlayer` is the one implementation over a `MediaPlayer` (the only place that knows
/// which mpv command or property each of these is); the daemon's unit tests pass a simulated
/// player that implements it directly. Events still come as `MpvEvent`s, from the player's
/// one consumer (`PlayerController`).
///
/// Threading: every member may be called from any thread. Errors: commands throw the
/// `MpvError` the player reported (their effects — a seek landing, a file loading — arrive
/// later as events); reads never throw and are nil when the player cannot say now (no file
/// loaded, the property unavailable, the player shut down).
public protocol RoomPlayer: Sendable {
    // MARK: Commands

    /// Pauses or plays.
    func setPaused(_ paused: Bool) throws(MpvError)
    /// Sets the playback rate (1 is normal speed).
    func setSpeed(_ speed: Double) throws(MpvError)
    /// Seeks to `position` seconds from the start, exactly (to that frame, not a keyframe near it).
    func seek(to position: Double) throws(MpvError)
    /// Sends fence `number` through the player: it comes back as a `clientMessage` event (see
    /// `PlayerFence`) behind every event the player queued before it.
    func fence(_ number: Int) throws(MpvError)
    /// Replaces the media with `url`. Returns the playlist entry id the new file's events carry
    /// (nil from a player without entry ids). Loading errors arrive later, as events.
    func load(_ url: String) throws(MpvError) -> Int64?
    /// Shows `text` on the player's OSD for `milliseconds`, exactly as written (nothing in it is
    /// expanded).
    func showText(_ text: String, milliseconds: Int) throws(MpvError)
    /// Makes the player's own playlist list `mirror`'s items, with the loaded file in its place
    /// (for reading: the player never moves through it by itself). Errors: the first command the
    /// player refused (the list is then partly made; listing it again starts afresh).
    func listPlaylist(_ mirror: PlaylistMirror) throws(MpvError)

    // MARK: Reads (each asks the player now; ~10 µs with libmpv)

    var paused: Bool? { get }
    var speed: Double? { get }
    /// The shown frame's position in seconds (mpv's `time-pos`: moves in whole frames).
    var shownPosition: Double? { get }
    /// The audio clock's position in seconds (mpv's `audio-pts`: smooth, only with audio).
    var audioPosition: Double? { get }
    /// The media's length in seconds.
    var duration: Double? { get }
    /// The file the player is opening or plays (mpv's `path`), and its place in the player's own
    /// playlist (`playlist-playing-pos`, from 0); nil when the player cannot say.
    var playingFile: (path: String, index: Int)? { get }
    /// Whether the media has an audio track playing (false when the player cannot say).
    var hasAudio: Bool { get }
    /// Whether the media has a video track showing (false when the player cannot say).
    var hasVideo: Bool { get }
    var mediaTitle: String? { get }
    /// Seconds of media the player's demuxer holds ahead of its position (nil when it cannot
    /// say, as for most local files).
    var cachedAhead: Double? { get }
}

/// The message a fence sends itself through the player, and how it is recognised when it comes
/// back as a `clientMessage` event.
///
/// Threading: constants and pure functions.
public enum PlayerFence {
    /// The message's first argument.
    public static let message = "cowatch-fence"

    /// The arguments fence `number` comes back with.
    public static func arguments(_ number: Int) -> [String] { [message, String(number)] }

    /// The fence number in a `clientMessage`'s arguments; nil for any other message (or a
    /// malformed fence).
    public static func number(in arguments: [String]) -> Int? {
        guard arguments.count == 2, arguments[0] == message else { return nil }
        return Int(arguments[1])
    }
}
