import CowatchCore
import CowatchNet
import Foundation
import Testing

/// Issue 23: the room server's own file (`rooms.json`) keeps each room's playlist, and a file
/// written before there were playlists still loads.
@Suite("rooms.json and the playlist")
struct RoomServerStatePlaylistTests {
    @Test("a saved playlist loads back with its entries, settings and current entry")
    func roundTrip() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let state = RoomServerState(directory: temporary.path + "/state")
        var playlist = RoomPlaylist()
        _ = try playlist.apply(
            .init(id: 1, version: 0, current: nil, edit: .add([
                PlaylistItem(url: "https://example.org/ep1.mkv", title: "Episode 1"),
                PlaylistItem(file: MediaIdentity(size: 12, fingerprint: String(repeating: "ab", count: 32), duration: 60, name: "ep2.mkv")),
            ], next: false)),
            by: "alice", role: .owner, managed: false, seed: 1)
        _ = try playlist.apply(.init(id: 2, version: 1, current: nil, edit: .setRepeat(.all)), by: "alice", role: .owner, managed: false, seed: 1)
        playlist.started(2, activity: 3)
        try state.saveRecords(["r": RoomSequencer.RoomRecord(owner: "alice", playlist: playlist)])
        let loaded = try #require(try state.loadRecords()["r"]?.playlist)
        #expect(loaded.entries == playlist.entries && loaded.repeatMode == .all && loaded.playing == 2)
        #expect(loaded.version == playlist.version && loaded.nextID == 3)
    }

    @Test("a rooms.json without playlists loads every room with an empty one")
    func oldFile() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let state = RoomServerState(directory: temporary.path + "/state")
        try state.saveRecords(["r": RoomSequencer.RoomRecord(owner: "alice")])
        let text = try String(contentsOfFile: temporary.path + "/state/rooms.json", encoding: .utf8)
        #expect(!text.contains("playlist"))
        #expect(try state.loadRecords()["r"]?.playlist == RoomPlaylist())
    }
}
