import Testing

@testable import CowatchCore

/// Issue 23: mpv's own playlist as a mirror of the room's: what it lists (`PlaylistMirrorMpvTests`
/// checks the commands, on a real libmpv too).
@Suite("Playlist: mpv's list mirrors the room's")
struct PlaylistMirrorTests {
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

    @Test("own copies by path, URLs as they are, what this daemon lacks under a name no file has")
    func items() {
        let mirror = PlaylistMirror(state: Self.state, resolved: [1: "/films/mine/one.mkv", 2: nil] as [PlaylistEntry.ID: String?], playsCurrent: true)
        #expect(mirror.items.map(\.filename) == ["/films/mine/one.mkv", "https://example.org/ep2.mkv", "cowatch-lacking://entry/5"])
        #expect(mirror.items.map(\.title) == ["ep1.mkv", "Episode 2", "Episode 3 (not here)"])
        #expect(mirror.playing == 1)
        // Not playing the current entry (the room's first media, an open): no place for the loaded file.
        #expect(PlaylistMirror(state: Self.state, resolved: [:], playsCurrent: false).playing == nil)
    }

    @Test("a path that cannot be one m3u line, or is not absolute, is listed as lacking, never split into two")
    func hostilePath() {
        let mirror = PlaylistMirror(state: Self.state, resolved: [1: "/films/a\nb.mkv", 5: "#films/c.mkv"], playsCurrent: false)
        #expect(mirror.items[0].filename == "cowatch-lacking://entry/1")
        #expect(mirror.items[2].filename == "cowatch-lacking://entry/5")
    }
}
