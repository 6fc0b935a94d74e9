import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation

/// One viewer's own copies of the playlist films (`TestMedia.playlistFilms()`): a folder of its
/// own, given to its daemon as `--media-dir`, holding the films it has under names of its own.
struct Shelf {
    let folder: String
    /// Film index (0 for the first) → this viewer's path to it; a film it lacks is absent.
    let paths: [Int: String]

    /// Copies film `i` of `films` to `root/subfolder/names[i]` for each `i` in `names`. Copies,
    /// not links: each viewer's file is its own, as on its own machine.
    init(_ films: [String], in root: String, at subfolder: String, names: [Int: String]) throws {
        folder = root + "/" + subfolder
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var paths: [Int: String] = [:]
        for (film, name) in names {
            let path = folder + "/" + name
            try FileManager.default.copyItem(atPath: films[film], toPath: path)
            paths[film] = path
        }
        self.paths = paths
    }

    var arguments: [String] { ["--media-dir", folder] }

    /// This viewer's copies of `films`, to add to the list.
    func sources(_ films: [Int]) -> [PlaylistCommand.Source] {
        films.map { .file(paths[$0]!) }
    }
}

extension PlaylistReply {
    /// What every viewer must agree on, as one line: the room's list (ids, titles, who added
    /// each, in order), its version, current entry and settings. Not what each viewer knows on
    /// its own (its paths, who lacks what).
    var shared: String {
        "v\(version) #\(current.map(String.init) ?? "-") repeat \(repeatMode.rawValue) countdown \(countdown) ["
            + entries.map { "\($0.id) \($0.title) by \($0.addedBy)" }.joined(separator: ", ") + "]"
    }
}

/// What a playlist test reads from a `DaemonRoom`: each daemon's list and player through its
/// control socket, and every event its listener received (kept, in order, so a test can look
/// back at what happened while it waited for something else).
///
/// Waits poll every 0.1 s, suspended, each with a deadline, and fail saying what they expected
/// and what they last saw. Threading: one test task uses it, as the room.
final class PlaylistWatch {
    let room: DaemonRoom
    /// Each daemon's events so far (index: the daemon's in the room).
    private(set) var events: [[ControlEvent]] = []

    init(_ room: DaemonRoom) {
        self.room = room
    }

    /// Takes in what every listener has received (daemons added since included).
    func collect() async throws {
        for (index, listener) in room.listeners.enumerated() {
            if events.count <= index { events.append([]) }
            // Whatever has arrived: a read that waits 1 ms finds a line already there.
            while let event = try await listener.nextEvent(timeout: 0.001) { events[index].append(event) }
        }
    }

    /// How many events each daemon has so far: `notices(_:since:)` and `playlistEvents` start there.
    func mark() async throws -> [Int] {
        try await collect()
        return events.map(\.count)
    }

    func notices(_ index: Int, since mark: [Int] = []) -> [Notice] {
        received(index, since: mark).compactMap { event -> Notice? in
            if case .notice(let notice) = event { return notice }
            return nil
        }
    }

    func playlistEvents(_ index: Int, since mark: [Int] = []) -> [PlaylistEvent] {
        received(index, since: mark).compactMap { event -> PlaylistEvent? in
            if case .playlist(let playlist) = event { return playlist }
            return nil
        }
    }

    /// The notices `which` picks, each with the list's last change before it (when it came).
    func happenings(_ index: Int, since mark: [Int] = [], _ which: (Notice) -> Bool) -> [String] {
        var lastChange = "before any change"
        var found: [String] = []
        for event in received(index, since: mark) {
            switch event {
            case .playlist(let playlist): if let change = playlist.change { lastChange = change }
            case .notice(let notice) where which(notice): found.append("\"\(notice.text)\" after \"\(lastChange)\"")
            default: break
            }
        }
        return found
    }

    private func received(_ index: Int, since mark: [Int]) -> ArraySlice<ControlEvent> {
        guard index < events.count else { return [] }
        return events[index].dropFirst(index < mark.count ? mark[index] : 0)
    }

    func playlist(_ index: Int) async throws -> PlaylistReply {
        try PlaylistReply(json: try await room.clients[index].request(.getPlaylist, timeout: 15))
    }

    func status(_ index: Int) async throws -> PlayerStatus {
        try await room.clients[index].status()
    }

    /// Polls `look` (after taking in the events) until it returns nil; it returns what it sees
    /// otherwise. Throws `TestFailure` with `expected` and the last thing seen after `seconds`.
    func until(_ expected: String, within seconds: Double, _ look: () async throws -> String?) async throws {
        let deadline = monotonicNow() + seconds
        while true {
            try await collect()
            guard let seen = try await look() else { return }
            guard monotonicNow() < deadline else { throw TestFailure("expected \(expected) within \(seconds) s; saw: \(seen)") }
            await pause(0.1)
        }
    }

    // MARK: Looks (nil: as expected; else what is seen)

    /// Each of `viewers` plays its own copy of film `film` (its shelf's path), not paused.
    func playingOwnCopy(of film: Int, _ viewers: [Int], shelves: [Shelf]) async throws -> String? {
        var wrong: [String] = []
        for viewer in viewers {
            let status = try await status(viewer)
            if status.media != shelves[viewer].paths[film] || status.paused || (status.position ?? 0) < 0.1 {
                wrong.append(describe(status))
            }
        }
        return wrong.isEmpty ? nil : wrong.joined(separator: "; ")
    }

    /// The players of `viewers` are within `bound` seconds of one another (read one after the other).
    func inStep(_ viewers: [Int], bound: Double) async throws -> String? {
        var positions: [(String, Double)] = []
        for viewer in viewers {
            let status = try await status(viewer)
            positions.append((status.name, status.position ?? -1))
        }
        let values = positions.map(\.1)
        guard values.max()! - values.min()! >= bound else { return nil }
        return "positions " + positions.map { "\($0.0) \(rounded($0.1))" }.joined(separator: ", ")
    }

    /// Every viewer of `viewers` lists the same `shared` state.
    func sameList(_ viewers: [Int]) async throws -> String? {
        var lists: [String] = []
        for viewer in viewers { lists.append(try await playlist(viewer).shared) }
        guard Set(lists).count > 1 else { return nil }
        return zip(viewers, lists).map { "\(room.names[$0]): \($1)" }.joined(separator: " | ")
    }

    /// mpv's own `playlist` (read on each player's mpv IPC socket, past the daemon) mirrors the
    /// room's list as each of `viewers` has it: its own copy of each entry it has, the URL of a URL
    /// entry, a name no file has for one it lacks, in the room's order; and, for a viewer playing
    /// the current entry, mpv's current entry is that one.
    func mpvMirrorsList(_ viewers: [Int], playingCurrent: Bool) async throws -> String? {
        var wrong: [String] = []
        for viewer in viewers {
            let list = try await playlist(viewer)
            let expected = list.entries.map { entry in entry.local ?? entry.url ?? "cowatch-lacking://entry/\(entry.id)" }
            let client = try ControlClient(path: room.daemons[viewer].mpvSocket)
            defer { client.close() }
            let items = try await client.request([.string("get_property"), .string("playlist")]).arrayValue ?? []
            let filenames = items.map { $0["filename"]?.stringValue ?? "?" }
            let current = items.firstIndex { $0["current"]?.boolValue == true }
            if playingCurrent {
                if filenames != expected || current != list.current.map({ $0 - 1 }) {
                    wrong.append("\(room.names[viewer])'s mpv lists \(filenames) (current \(current.map(String.init) ?? "-")), the room's \(expected) (#\(list.current.map(String.init) ?? "-"))")
                }
            } else if Array(filenames.dropFirst()) != expected {
                // Not playing the list: what the player has, then the list.
                wrong.append("\(room.names[viewer])'s mpv lists \(filenames), the room's \(expected) after what it plays")
            }
        }
        return wrong.isEmpty ? nil : wrong.joined(separator: "; ")
    }

    func describe(_ status: PlayerStatus) -> String {
        let file = status.media.split(separator: "/").last.map(String.init) ?? status.media
        return "\(status.name) \(status.paused ? "paused" : "playing") \(file) at \(rounded(status.position ?? -1))"
    }

    private func rounded(_ value: Double) -> String { String(format: "%.2f", value) }
}
