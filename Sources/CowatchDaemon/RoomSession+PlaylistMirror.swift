import CowatchCore
import CowatchMpv

/// mpv's own playlist as a mirror of the room's (`PlaylistMirror`), and the window's
/// next/previous keys as the group's.
///
/// The mirror is made again when the room's list or this daemon's copies of it change
/// (`playlistResolved`) and after every switch of media (a load replaces mpv's list with the one
/// file). mpv never moves through it by itself (`keep-open=always`).
///
/// Threading: actor-isolated to `RoomSession`.
extension RoomSession {
    /// Makes mpv's playlist the room's as this daemon has it, when that changed since it was
    /// last made. A player that refuses is only logged: the list is for reading.
    func mirrorPlaylist() {
        guard let state = coordinator.playlist else { return }
        let playsCurrent = state.activity == coordinator.activity.id && playerSide.media.hasRoomMedia
        let mirror = PlaylistMirror(state: state, resolved: playlistFiles.resolved, playsCurrent: playsCurrent)
        guard mirror != playlistFiles.mirrored else { return }
        do {
            try player.listPlaylist(mirror)
            playlistFiles.mirrored = mirror
        } catch {
            playlistFiles.mirrored = nil
            logger.debug("mpv's playlist not mirrored", metadata: ["cowatch.error": "\(error)"])
        }
    }

    /// The player loaded other media: its own list is that one file now.
    func playerListReplaced() {
        playlistFiles.mirrored = nil
        mirrorPlaylist()
    }

    /// mpv started a file the daemon did not order, from its own list (the OSC's arrows, mpv's
    /// console `playlist-next`, a click in the OSC's list): the room, not mpv's list, says what
    /// plays. The player goes back to the room's media at once, and the group is asked for that
    /// entry, as the window's keys ask it (a refusal is shown on the OSD).
    func playerMovedThroughItsList() {
        guard let state = coordinator.playlist, let mirrored = playlistFiles.mirrored, let playing = player.playingFile,
            mirrored.items.indices.contains(playing.index), mirrored.items[playing.index].filename == playing.path,
            state.entries.indices.contains(playing.index)
        else { return }
        logger.debug("mpv moved through its own list", metadata: ["cowatch.playlist.index": "\(playing.index)"])
        playlistFiles.mirrored = nil
        activityChanged(coordinator.activity, playerHas: playing.path)
        let number = playing.index + 1
        guard state.entries[playing.index].id != state.current else { return }
        Task {
            do throws(CowatchError) {
                _ = try await playlist(.jump(number), timeout: configuration.seekTimeout)
            } catch {
                showRefusal(error)
            }
        }
    }

    /// The window's next/previous keys (`WindowBindings.playlistMessage`): the group's next or
    /// previous entry. A refusal (no playlist, not permitted) is shown on the OSD.
    func windowPlaylistMessage(_ arguments: [String]) {
        let command: PlaylistCommand
        switch arguments.dropFirst().first {
        case "next": command = .next
        case "prev": command = .previous
        default: return
        }
        Task {
            do throws(CowatchError) {
                _ = try await playlist(command, timeout: configuration.seekTimeout)
            } catch {
                showRefusal(error)
            }
        }
    }
}
