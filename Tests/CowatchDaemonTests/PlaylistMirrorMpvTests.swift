import CowatchCore
import CowatchMpv
import Foundation
import Testing

/// Issue 23: the playlist mirror's commands on a real libmpv: what mpv's `playlist` property then
/// says (filenames, `#EXTINF` titles, the loaded file in its place), and that mpv moves nowhere.
@Suite("Playlist: the mirror on a real libmpv")
struct PlaylistMirrorMpvTests {
    static let state = PlaylistState(
        version: 4,
        entries: [
            PlaylistEntry(
                id: 1, media: .file(.init(size: 10, fingerprint: String(repeating: "ab", count: 32), name: "ep1.mkv")),
                addedBy: "ann"),
            PlaylistEntry(id: 2, media: .url("https://example.org/ep2.mkv"), title: "Episode 2", addedBy: "bob"),
            PlaylistEntry(
                id: 5, media: .file(.init(size: 30, fingerprint: String(repeating: "cd", count: 32), name: "ep3.mkv")),
                title: "Episode 3", addedBy: "ann"),
        ],
        current: 2)

    static let items = [
        PlaylistMirror.Item(filename: "/films/one.mkv", title: "Episode 1"),
        PlaylistMirror.Item(filename: "playing", title: "Episode 2"),
        PlaylistMirror.Item(filename: PlaylistMirror.lackingName(7), title: "Episode 3, the end (not here)"),
    ]

    /// mpv's list as (filename, title, current) triples.
    static func listed(_ mpv: MpvPlayer) throws -> [(String, String?, Bool)] {
        guard case .array(let entries) = try mpv.getNode("playlist") else { return [] }
        return entries.map { entry in
            guard case .map(let fields) = entry else { return ("?", nil, false) }
            let filename = if case .string(let name)? = fields["filename"] { name } else { "?" }
            let title: String? = if case .string(let title)? = fields["title"] { title } else { nil }
            let current = if case .flag(true)? = fields["current"] { true } else { false }
            return (filename, title, current)
        }
    }

    @Test("the others come from one in-memory m3u with titles, and the loaded file is moved into its place")
    func commands() {
        let mirror = PlaylistMirror(state: Self.state, resolved: [1: "/films/mine/one.mkv", 2: nil] as [PlaylistEntry.ID: String?], playsCurrent: true)
        let commands = mirror.mpvCommands
        #expect(commands.count == 3)
        #expect(commands[0] == ["playlist-clear"])
        #expect(
            commands[1] == [
                "loadlist",
                "memory://#EXTM3U\n#EXTINF:-1,ep1.mkv\n/films/mine/one.mkv\n#EXTINF:-1,Episode 3 (not here)\ncowatch-lacking://entry/5\n",
                "append",
            ])
        // [loaded, one, lacking] → [one, loaded, lacking]: moved before the entry at index 2.
        #expect(commands[2] == ["playlist-move", "0", "2"])
        // The first entry playing needs no move; the last is moved past the end.
        #expect(PlaylistMirror(items: mirror.items, playing: 0).mpvCommands.count == 2)
        #expect(PlaylistMirror(items: mirror.items, playing: 2).mpvCommands.last == ["playlist-move", "0", "3"])
    }

    @Test("nothing of the list loaded: the whole list follows what the player has; an empty list only clears")
    func notPlaying() {
        let mirror = PlaylistMirror(items: [.init(filename: "/a.mkv", title: "A")], playing: nil)
        #expect(mirror.mpvCommands == [["playlist-clear"], ["loadlist", "memory://#EXTM3U\n#EXTINF:-1,A\n/a.mkv\n", "append"]])
        #expect(PlaylistMirror(items: [], playing: nil).mpvCommands == [["playlist-clear"]])
    }

    @Test("around a loaded file, with the room's titles; then with nothing of the list loaded")
    func onLibmpv() async throws {
        let mpv = try MpvPlayer(options: [("vo", "null"), ("ao", "null"), ("idle", "yes"), ("keep-open", "always")])
        let source = "av://lavfi:testsrc=duration=30:size=64x48:rate=5"
        try mpv.command(["loadfile", source, "replace"])
        let deadline = Date().addingTimeInterval(10)
        while (try? mpv.getDouble("duration")) == nil, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }

        var items = Self.items
        items[1].filename = source
        try MpvRoomPlayer(mpv).listPlaylist(PlaylistMirror(items: items, playing: 1))
        let listed = try Self.listed(mpv)
        #expect(listed.map(\.0) == items.map(\.filename), "\(listed)")
        // The loaded file keeps its own entry (no title); the others carry the room's.
        #expect(listed.map(\.1) == ["Episode 1", nil, "Episode 3, the end (not here)"], "\(listed)")
        #expect(listed.map(\.2) == [false, true, false], "\(listed)")
        #expect(try mpv.getDouble("playlist-pos") == 1)

        // Made again (the list changed): the same file stays loaded, now last.
        try MpvRoomPlayer(mpv).listPlaylist(PlaylistMirror(items: [items[0], items[2], items[1]], playing: 2))
        #expect(try Self.listed(mpv).map(\.0) == [items[0].filename, items[2].filename, source])
        #expect(try mpv.getDouble("playlist-pos") == 2)

        // Nothing of the list loaded: the loaded file first, the list after it.
        try MpvRoomPlayer(mpv).listPlaylist(PlaylistMirror(items: [items[0], items[2]], playing: nil))
        #expect(try Self.listed(mpv).map(\.0) == [source, items[0].filename, items[2].filename])
        #expect(try mpv.getString("path") == source)
        await mpv.shutdown()
    }
}
