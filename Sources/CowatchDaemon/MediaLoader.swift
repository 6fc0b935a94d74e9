import CowatchCore
import CowatchMpv

/// Switches the player's media, and tells the events of a replaced file from the new one's.
///
/// mpv still reports `end-file`, `file-loaded` and `playback-restart` for a file that a later
/// `loadfile` has already replaced: until that `loadfile`'s START_FILE arrives, those events are
/// stale. `PlayerController`, the first reader of the event stream, asks `isStale` for every event
/// and drops stale ones before anyone (itself, the room session) acts on them.
///
/// Threading: any thread; the state is under locks.
final class MediaLoader: Sendable {
    private let player: MpvPlayer
    private let url: Locked<String>
    /// `loadfile`s whose START_FILE has not arrived yet.
    private let pendingStarts = Locked(0)

    init(player: MpvPlayer, url: String) {
        self.player = player
        self.url = Locked(url)
    }

    /// The media the player has, or is loading.
    var current: String { url.withLock { $0 } }

    /// `loadfile URL replace`. Throws mpv's refusal (loading errors arrive later, as events).
    func load(_ url: String) throws(MpvError) {
        self.url.withLock { $0 = url }
        pendingStarts.withLock { $0 += 1 }
        do {
            try player.command(["loadfile", url, "replace"])
        } catch {
            pendingStarts.withLock { $0 -= 1 }
            throw error
        }
    }

    /// Call for every event, in order: true when it belongs to a file already replaced.
    func isStale(_ event: MpvEvent) -> Bool {
        switch event {
        case .startFile:
            pendingStarts.withLock { $0 = max(0, $0 - 1) }
            return false
        case .fileLoaded, .endFile, .playbackRestart:
            return pendingStarts.withLock { $0 } > 0
        default:
            return false
        }
    }
}
