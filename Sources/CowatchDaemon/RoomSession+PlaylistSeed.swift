import CowatchCore
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Seeding a new room's playlist with this daemon's media (`cowatchd a.mkv b.mkv c.mkv`,
/// `cowatchd --playlist FILE.m3u`: `DaemonConfiguration.playlistSeeds`).
///
/// The rule. Once this daemon is in the room (welcomed, with the room's playlist state known)
/// and the room's playlist is EMPTY, it proposes one `add` edit with the seeds, in order: local
/// files by identity (`MediaDirectoryIndexer.identity(ofFile:)`, each remembered at its path with
/// `playlistFiles.remember`, so this daemon plays its own copies), URLs as URL entries. Then, when
/// the room still plays its first media, that media is this daemon's own (the room this daemon
/// just made) and the group has not started (paused at its start), it jumps to the seed that is
/// that media (`playlistSeedCurrent`, normally #1) so that it is the current entry and the list
/// plays on from it. No edit makes an entry current without switching to it, and a switch starts
/// the group after the playlist's countdown; so the jump is followed by a pause, and the new room
/// waits paused at the start of #1, as a new room waits until someone plays (should the pause
/// fail, the room starts #1 after the countdown). Otherwise (the room plays other media, or has
/// started) there is no jump: the list plays from #1 after what the room plays now.
///
/// A room whose playlist already has entries is NOT touched (a joiner with seeds never overwrites
/// its friends' list): said once, in the log at notice level and on the terminal when a person
/// looks. A refusal ends it without a retry: `stale-playlist` means someone else edited first,
/// `not-permitted` a managed room where only the owner and operators edit, `unsupported` an older
/// server. It happens at most once per run: a reconnect, or the room's own changes, never seed
/// again. A seed file that cannot be read by then (it was checked at start-up) is left out, with
/// a warning.
///
/// Threading: actor-isolated to `RoomSession`; files are identified off the actor, on a
/// low-priority thread.
extension RoomSession {
    /// Called whenever the room's list arrives or changes: moves the seeding on when it is due.
    func seedPlaylistIfDue() {
        guard !configuration.playlistSeeds.isEmpty, isJoined, let state = coordinator.playlist else { return }
        switch playlistSeeding.phase {
        case .waiting:
            guard state.entries.isEmpty else { return leaveRoomsPlaylist(state) }
            playlistSeeding.phase = .reading
            let seeds = configuration.playlistSeeds
            let current = configuration.playlistSeedCurrent
            Task { [weak self] in
                let read = await Self.items(for: seeds, current: current)
                await self?.seedsRead(read)
            }
        case .read(let items, let current):
            guard state.entries.isEmpty else { return leaveRoomsPlaylist(state) }
            playlistSeeding.phase = .proposing
            Task { [weak self] in await self?.propose(items, current: current) }
        case .reading, .proposing, .finished:
            return
        }
    }

    /// The seeds are identified: remembers our files, says which could not be read, and proposes
    /// them once the room's list is known.
    private func seedsRead(_ read: SeedItems) {
        for (identity, path) in read.files { playlistFiles.remember(identity, at: path) }
        for failure in read.failures {
            logger.warning("left out of the room's playlist: \(failure.message) (\(failure.code.rawValue))")
        }
        guard !read.items.isEmpty else {
            playlistSeeding.phase = .finished
            return
        }
        playlistSeeding.phase = .read(read.items, current: read.current)
        seedPlaylistIfDue()
    }

    /// Sends the `add` and, once the room took it, the jump to our media's entry when due, and
    /// the pause that keeps the new room waiting.
    private func propose(_ items: [PlaylistItem], current: Int?) async {
        let timeout = max(configuration.seekTimeout, 10)
        let add = coordinator.playlistEdit(.add(items, next: false))
        do {
            try await awaitAnswer(
                add.id, kind: .action, sending: add.actions, timeout: timeout,
                timedOut: CowatchError(.timeout, "the room server did not answer the playlist's seeding in time"))
        } catch {
            playlistSeeding.phase = .finished
            return seedRefused(error, count: items.count)
        }
        playlistSeeding.phase = .finished
        logger.info("filled the room's empty playlist with \(PlaylistSeeding.entries(items.count))")
        guard let entry = entryToStart(items, current: current) else { return }
        let jump = coordinator.playlistEdit(.jump(entry))
        do {
            try await awaitAnswer(
                jump.id, kind: .action, sending: jump.actions, timeout: timeout,
                timedOut: CowatchError(.timeout, "the room server did not answer the playlist's first jump in time"))
        } catch {
            logger.notice("the playlist's first entry was not made the current one: \(error.message) (\(error.code.rawValue))")
            return
        }
        // A group action needs the room's clock, which the first probes bring (a moment at most).
        let deadline = clock.now() + PlaylistSeeding.clockWait
        while coordinator.referenceTime(atLocal: clock.now()) == nil, clock.now() < deadline {
            try? await clock.sleep(seconds: 0.05)
        }
        do {
            try await request(.pause, seekTimeout: timeout)
        } catch {
            logger.notice("the room starts the playlist's first entry after its countdown: \(error.message) (\(error.code.rawValue))")
        }
    }

    /// The id of the entry our seed #`current` became, when the room should switch to it now:
    /// the room plays its first media, which is ours, paused at its start, and the list is the
    /// one we seeded (nobody changed it since).
    private func entryToStart(_ items: [PlaylistItem], current: Int?) -> PlaylistEntry.ID? {
        guard let current, let state = coordinator.playlist, state.entries.count == items.count,
            state.entries.indices.contains(current), state.current == nil
        else { return nil }
        let entry = state.entries[current]
        guard entry.addedBy == configuration.name else { return nil }
        let activity = coordinator.activity
        guard activity.id == 0, activity.url == Activity.ownMediaURL(configuration.media),
            let timeline = coordinator.timelines?.current, !timeline.playing, !timeline.holding,
            timeline.position < PlaylistSeeding.startSlack
        else { return nil }
        return entry.id
    }

    /// The room's list has entries: it stays as it is. Said once.
    private func leaveRoomsPlaylist(_ state: PlaylistState) {
        playlistSeeding.phase = .finished
        let count = configuration.playlistSeeds.count
        tellPerson(
            "the room's playlist already has \(PlaylistSeeding.entries(state.entries.count)): left as it is "
                + "(your \(count) media were not added; cowatch add adds them)")
    }

    /// The room refused the seeding edit: no retry.
    private func seedRefused(_ error: CowatchError, count: Int) {
        let why = switch error.code {
        case .stalePlaylist: "someone else edited it first"
        case .notPermitted: "only the owner and operators edit it in this room"
        default: "\(error.message) (\(error.code.rawValue))"
        }
        tellPerson("the room's playlist was left as it is (\(why)): your \(count) media were not added")
    }

    /// One sentence for the person running the daemon: in the log (notice), on the terminal when
    /// one looks (standard output or error a terminal), and on the player's OSD.
    func tellPerson(_ sentence: String) {
        logger.notice("\(sentence)")
        if isatty(STDOUT_FILENO) == 1 || isatty(STDERR_FILENO) == 1 {
            FileHandle.standardOutput.write(Data("cowatchd: \(sentence)\n".utf8))
        }
        showOnScreen(sentence)
    }

    /// The seeds as the room's items (files by identity, read off the actor), the identities with
    /// their paths, the index among the items of seed #`current`, and the files that could not
    /// be read.
    private static func items(for seeds: [PlaylistSeed], current: Int?) async -> SeedItems {
        var read = SeedItems()
        for (index, seed) in seeds.enumerated() {
            if index == current { read.current = read.items.count }
            switch seed.source {
            case .url(let url):
                read.items.append(PlaylistItem(url: url, title: seed.title))
            case .file(let path):
                do {
                    let identity = try await MediaDirectoryIndexer.identity(ofFile: path)
                    read.files.append((identity, path))
                    read.items.append(PlaylistItem(file: identity, title: seed.title))
                } catch {
                    if index == current { read.current = nil }
                    read.failures.append(error)
                }
            }
        }
        return read
    }
}

/// What identifying the seeds gave (`RoomSession.items(for:current:)`).
struct SeedItems: Sendable {
    var items: [PlaylistItem] = []
    var files: [(MediaIdentity, String)] = []
    var current: Int?
    var failures: [CowatchError] = []
}

/// Where seeding the room's playlist stands (kept by `RoomSession`; see
/// `RoomSession+PlaylistSeed.swift`).
///
/// Threading: a value type, kept by the room session's actor.
struct PlaylistSeeding: Sendable {
    enum Phase: Sendable {
        /// Nothing done yet: waiting to be in the room with its list known.
        case waiting
        /// Identifying the seed files.
        case reading
        /// Identified; proposed as soon as the room's list is known and empty.
        case read([PlaylistItem], current: Int?)
        /// The edit is on its way.
        case proposing
        /// Done, whatever the outcome: never again this run.
        case finished
    }

    var phase = Phase.waiting

    /// The group counts as not started while paused within this many seconds of the start.
    static let startSlack = 1.0
    /// Seconds the pause after the first jump waits for the room's clock, at most.
    static let clockWait = 2.0

    /// "1 entry", "3 entries".
    static func entries(_ count: Int) -> String {
        count == 1 ? "1 entry" : "\(count) entries"
    }
}
