import CowatchCore
import CowatchMpv

/// Switches the player's media, and tells the events of a replaced file from the new one's.
///
/// mpv still reports `end-file`, `file-loaded` and `playback-restart` for a file that a later
/// `loadfile` has already replaced, and may skip a file replaced before it started. Every
/// `loadfile` returns a playlist entry id; START_FILE and END_FILE carry the id of their file,
/// and FILE_LOADED and PLAYBACK_RESTART belong to the file last started. An event of any other
/// entry than the one loaded last is stale. `PlayerController`, the first reader of the event
/// stream, asks `isStale` for every event and drops stale ones before anyone (itself, the room
/// session) acts on them.
///
/// Threading: any thread; the state is under a lock.
final class MediaLoader: Sendable {
    private struct State {
        var url: String
        /// The entry of the last `loadfile`, and of the last START_FILE seen.
        var requested: Int64?
        var started: Int64?
    }

    private let player: any RoomPlayer
    private let state: Locked<State>
    /// The clock load deadlines run on (the daemon's).
    let clock: any MonotonicClock

    init(player: any RoomPlayer, url: String, clock: any MonotonicClock) {
        self.player = player
        self.clock = clock
        self.state = Locked(State(url: url))
    }

    /// The media the player has, or is loading.
    var current: String { state.withLock { $0.url } }

    /// Replaces the player's media (`RoomPlayer.load`). Throws mpv's refusal (loading errors
    /// arrive later, as events).
    func load(_ url: String) throws(MpvError) {
        // Under the lock, so no event of the new entry is judged before its id is known
        // (mpv only queues the load: this is quick, and mpv never waits for our lock).
        let outcome = state.withLock { (state: inout State) -> Result<Void, MpvError> in
            state.url = url
            do throws(MpvError) {
                // nil from an mpv without entry ids: nothing is judged stale.
                state.requested = try player.load(url)
            } catch {
                return .failure(error)
            }
            return .success(())
        }
        try outcome.get()
    }

    /// Carries out `machine`'s `.load(url)`: `loadfile`, and when mpv refuses it, what the
    /// machine does next (the fallback, or failing).
    func carryOut(load url: String, for machine: inout MediaLoad) -> [MediaLoad.Action] {
        do {
            try load(url)
            return []
        } catch {
            return machine.loadRefused(error.reason, now: clock.now())
        }
    }

        /// Call for every event, in order: true when it belongs to a file already replaced.
    func isStale(_ event: MpvEvent) -> Bool {
        state.withLock { state in
            switch event {
            case .startFile(let entry):
                state.started = entry
                return false
            case .endFile(_, _, let entry):
                return state.requested.map { $0 != entry } ?? false
            case .fileLoaded, .playbackRestart:
                return state.requested.map { $0 != state.started } ?? false
            default:
                return false
            }
        }
    }
}
