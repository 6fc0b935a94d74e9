import CowatchCore
import Foundation

/// The room's playlist on this daemon (`playlist` feature): the control commands, what this
/// player can play of the list, loading an entry's own copy, and the end of an entry.
///
/// The server sequences every edit and decides every advance; the daemon proposes edits, tells
/// the room which entries it has (its own copies, found by identity through `--media-dir`, its
/// own `--media`, what it added, what a person picked), and says when its player reached the
/// end of the current entry.
///
/// Threading: actor-isolated to `RoomSession`.
extension RoomSession {
    /// `get_playlist`: the list as this daemon has it, with what it has of it.
    func playlistReply() -> PlaylistReply {
        PlaylistReply(
            state: coordinator.playlist ?? PlaylistState(), local: playlistFiles.local, here: playlistFiles.here,
            members: coordinator.participants.map(\.name), me: configuration.name)
    }

    /// A playlist command: an edit sent to the room (answered once the room's new list names it),
    /// or `pick`, this daemon's own choice of file for an entry.
    /// Errors: the room's refusal (`not-permitted`, `stale-playlist`, `playlist-full`, …),
    /// `invalid-argument` (no such entry), `not-found`/`media-unavailable` for a file that cannot
    /// be read, `not-in-room`, `unsupported` (an older server), `timeout`.
    func playlist(_ command: PlaylistCommand, timeout: Double) async throws(CowatchError) -> PlaylistReply {
        if case .pick(let number, let path, let force) = command {
            try await pick(number, path: path, force: force)
            return playlistReply()
        }
        var items: [PlaylistItem] = []
        for source in command.sources {
            switch source {
            case .url(let url): items.append(PlaylistItem(url: url))
            case .file(let path):
                let identity = try await MediaDirectoryIndexer.identity(ofFile: path)
                playlistFiles.remember(identity, at: path)
                items.append(PlaylistItem(file: identity))
            }
        }
        guard let edit = try command.edit(against: coordinator.playlist ?? PlaylistState(), items: items) else {
            return playlistReply()
        }
        let request = coordinator.playlistEdit(edit)
        try await awaitAnswer(
            request.id, kind: .action, sending: request.actions, timeout: timeout,
            timedOut: CowatchError(.timeout, "the room server did not answer the playlist edit in time"))
        return playlistReply()
    }

    /// `playlist_pick`: this daemon plays `path` for entry #`number`. A file whose identity
    /// differs from the entry's needs `force`. Errors: `invalid-argument`, the file's read errors.
    private func pick(_ number: Int, path: String, force: Bool) async throws(CowatchError) {
        let entry = try PlaylistCommand.entry(number, in: coordinator.playlist ?? PlaylistState())
        let identity = try await MediaDirectoryIndexer.identity(ofFile: path)
        if case .file(let wanted) = entry.media, !wanted.matches(identity), !force {
            throw CowatchError(
                .invalidArgument,
                "\(identity.name) is not the file #\(number) names (\(wanted.name), \(wanted.size) bytes; this one has \(identity.size) bytes or other content): pick it with force to play it anyway")
        }
        playlistFiles.picks[entry.id] = path
        resolvePlaylist()
    }

    /// The room's list changed (or arrived): say so, and find what this player has of it.
    func playlistChanged(_ state: PlaylistState, change: PlaylistChange?) {
        let reply = PlaylistReply(
            state: state, local: playlistFiles.local, here: playlistFiles.here,
            members: coordinator.participants.map(\.name), me: configuration.name)
        events.publish(.playlist(PlaylistEvent(state: reply, change: change?.text, actor: change?.actor)))
        if let change { showOnScreen(change.text, milliseconds: 4000) }
        if playlistFiles.resolvedVersion != state.version { resolvePlaylist() }
        seedPlaylistIfDue()
        queueEntrySubtitles(mediaChanged: false)
    }

    /// Finds this daemon's copy of each entry of the list (off the actor for the index's part),
    /// then tells the room which it has. When an entry was not found and the media folders have
    /// not been scanned yet (a daemon just started, or joined late), it looks again once the
    /// first scan is done (`firstScanWait` at most) — nothing else would until the list changed.
    func resolvePlaylist(again: Bool = true) {
        guard let state = coordinator.playlist else { return }
        let files = playlistFiles
        let index = mediaIndex
        let policy = room.openPolicy
        let clock = clock
        Task { [weak self] in
            var resolved: [PlaylistEntry.ID: String?] = [:]
            for entry in state.entries {
                if let picked = files.picks[entry.id] {
                    resolved[entry.id] = .some(picked)
                    continue
                }
                switch entry.media {
                case .url(let url):
                    if policy.allows(url) { resolved[entry.id] = .some(nil) }
                case .file(let identity):
                    if let path = files.known[identity.key], FileManager.default.isReadableFile(atPath: path) {
                        resolved[entry.id] = .some(path)
                    } else if let path = await index?.resolveVerified(identity) {
                        resolved[entry.id] = .some(path)
                    }
                }
            }
            await self?.playlistResolved(resolved, version: state.version)
            let lacking = state.entries.contains { resolved[$0.id] == nil }
            if again, lacking, let index, await index.scansCompleted == 0 {
                guard await Self.firstScan(of: index, clock: clock) else { return }
                await self?.resolvePlaylist(again: false)
            }
        }
    }

    /// Waits (`firstScanWait` at most) until `index` has completed a scan; false when cancelled.
    private static func firstScan(of index: MediaDirectoryIndexer, clock: any MonotonicClock) async -> Bool {
        let deadline = clock.now() + firstScanWait
        while await index.scansCompleted == 0, clock.now() < deadline {
            do { try await clock.sleep(seconds: 0.25) } catch { return false }
        }
        return true
    }

    /// Seconds a resolution that found an entry missing waits for the media folders' first scan
    /// before looking again.
    static let firstScanWait = 120.0

    private func playlistResolved(_ resolved: [PlaylistEntry.ID: String?], version: Int) {
        // A newer list asked again; its own resolution answers.
        guard coordinator.playlist?.version == version else { return }
        playlistFiles.resolved = resolved
        playlistFiles.resolvedVersion = version
        let order = coordinator.playlist?.entries.map(\.id) ?? []
        perform(coordinator.playlistHave(order.filter { resolved[$0] != nil }, version: version))
        mirrorPlaylist()
        // The room may have switched to an entry before this resolution found our copy of it.
        if case .refused(let activity) = playerSide.media, activity.id == coordinator.activity.id,
            case .have = playlistFile(for: activity)
        {
            activityChanged(activity)
            return
        }
        // Or, restarted, it plays an entry as its first media (id 0), which this daemon took for
        // its own `--media` when the welcome came before the list: it loads its copy of the entry.
        let activity = coordinator.activity
        if activity.id == 0, coordinator.playlist?.activity == 0, case .have(let path) = playlistFile(for: activity),
            playerSide.media.hasRoomMedia, !Self.sameFile(path, media.current)
        {
            activityChanged(activity)
        }
    }

    /// True when both paths name one file (its device and inode), however spelt.
    static func sameFile(_ a: String, _ b: String) -> Bool {
        var first = stat()
        var second = stat()
        guard stat(a, &first) == 0, stat(b, &second) == 0 else { return a == b }
        return first.st_dev == second.st_dev && first.st_ino == second.st_ino
    }

    /// The room switched to `activity`: when it is a playlist entry that is a file, this
    /// daemon's own copy of it (its path), or nil when this daemon has none; `.notAFile` when
    /// the activity is no file entry (a URL, or no playlist).
    func playlistFile(for activity: Activity) -> PlaylistFileForActivity {
        guard let entry = coordinator.playlist?.entry(forActivity: activity.id), case .file(let identity) = entry.media else {
            return .notAFile
        }
        if let path = playlistFiles.path(for: entry.id) { return .have(path) }
        if let path = playlistFiles.known[identity.key] { return .have(path) }
        return .lack(identity.name)
    }

    /// Our own `--media`, when it is a local file: a playlist entry with its identity is ours.
    func rememberOwnMedia() async {
        guard var path = MediaFingerprint.localPath(of: configuration.media), !path.isEmpty else { return }
        if !path.hasPrefix("/") { path = FileManager.default.currentDirectoryPath + "/" + path }
        guard let identity = try? await MediaDirectoryIndexer.identity(ofFile: path) else { return }
        playlistFiles.remember(identity, at: path)
        streams.ownMedia = identity
        if coordinator.playlist != nil { resolvePlaylist() }
    }

    /// The player reached the end of the media: the room hears it when it is the playlist's entry.
    func mediaEnded() {
        let position = player.shownPosition ?? player.duration ?? 0
        perform(coordinator.playlistMediaEnded(position: position))
    }
}

/// What this daemon has for the room's activity, when it is a playlist entry.
enum PlaylistFileForActivity: Equatable {
    case notAFile
    case have(String)
    case lack(String)
}
