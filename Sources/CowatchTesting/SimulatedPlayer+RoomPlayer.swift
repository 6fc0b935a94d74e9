import CowatchCore
import CowatchMpv

/// The simulated player as the room session drives it: typed calls, the same changes and
/// events as its `MediaPlayer` face (a fence comes back behind every event sent before it, as
/// mpv's `script-message-to` does).
///
/// Threading: any thread. Errors: none; a read is nil where libmpv's would fail (no file loaded).
extension SimulatedPlayer: RoomPlayer {
    public func setPaused(_ paused: Bool) { changePause(paused) }
    public func setSpeed(_ speed: Double) { changeSpeed(speed) }
    public func seek(to position: Double) { startSeek(to: position) }
    public func fence(_ number: Int) { send(.clientMessage(PlayerFence.arguments(number))) }
    public func load(_ url: String) -> Int64? { startLoad(url) }
    public func showText(_ text: String, milliseconds: Int) { showOSD(text) }
    public func listPlaylist(_ mirror: PlaylistMirror) { listPlaylist(Optional(mirror)) }

    public var paused: Bool? { isPaused }
    public var speed: Double? { state.withLock { $0.speed } }
    public var shownPosition: Double? { loadedPosition }
    public var audioPosition: Double? { loadedPosition }
    public var duration: Double? { state.withLock { $0.loaded?.duration } }
    public var hasAudio: Bool { state.withLock { $0.loaded?.hasAudio ?? false } }
    public var hasVideo: Bool { state.withLock { $0.loaded != nil } }
    public var mediaTitle: String? { Self.title }
    public var cachedAhead: Double? { nil }
    /// Nil: the simulated player never moves through a list by itself.
    public var playingFile: (path: String, index: Int)? { nil }
}
