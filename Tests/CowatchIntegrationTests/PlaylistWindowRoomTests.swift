import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// mpv's own playlist moved by a person (the OSC's arrows send mpv `playlist-next` and
/// `playlist-prev`; here they are sent on each player's mpv IPC socket, past the daemon): the
/// group moves, every player plays its own copy of that entry, and none stays on a film the room
/// is not playing. Real processes: a `cowatch-server`, headless `cowatchd`s, the playlist films.
@Suite("mpv's own playlist arrows in a room of real daemons", .realProcesses)
struct PlaylistWindowRoomTests {
    @Test("playlist-next and playlist-prev in one player's mpv move the whole room, each on its own copy")
    func arrowsMoveTheRoom() async throws {
        let films = try await TestMedia.playlistFilms()
        let root = try makeTemporaryDirectory("cowatch-arrows")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (alice, bob) = (0, 1)
        let shelves = [
            try Shelf(films, in: root, at: "alice", names: [0: "one.mkv", 1: "two.mkv"]),
            try Shelf(films, in: root, at: "bob", names: [0: "E01.mkv", 1: "E02.mkv"]),
        ]
        let room = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: "pl-arrows")
        defer { room.stopInBackground() }
        for (name, shelf) in zip(["alice", "bob"], shelves) {
            try await room.add(name, arguments: shelf.arguments, waitJoined: false)
        }
        try await room.waitForParticipants(2)
        let watch = PlaylistWatch(room)
        /// nil when both players have loaded their own copy of `film` and the room's current is `number`.
        func everyoneOn(_ film: Int, number: Int) async throws -> String? {
            var wrong: [String] = []
            for viewer in [alice, bob] {
                let status = try await watch.status(viewer)
                if status.media != shelves[viewer].paths[film] { wrong.append(watch.describe(status)) }
                // What mpv itself has open, past the daemon.
                let mpv = try ControlClient(path: room.daemons[viewer].mpvSocket)
                defer { mpv.close() }
                let path = try await mpv.request([.string("get_property"), .string("path")]).stringValue
                if path != shelves[viewer].paths[film] { wrong.append("\(room.names[viewer])'s mpv has \(path ?? "nothing") open") }
                let current = try await watch.playlist(viewer).current
                if current != number { wrong.append("\(room.names[viewer]) lists #\(current.map(String.init) ?? "-") current") }
            }
            return wrong.isEmpty ? nil : wrong.joined(separator: "; ")
        }
        /// Sends `command` to `viewer`'s mpv on its own IPC socket, as the OSC does.
        func mpvCommand(_ viewer: Int, _ command: String) async throws {
            let client = try ControlClient(path: room.daemons[viewer].mpvSocket)
            defer { client.close() }
            _ = try await client.request([.string(command)])
        }

        try await room.clients[alice].request(.playlist(.add(shelves[alice].sources([0, 1]), next: false)))
        try await watch.until("both viewers to have both films", within: 20) {
            let lists = [try await watch.playlist(alice), try await watch.playlist(bob)]
            return lists.allSatisfy { $0.entries.count == 2 && $0.entries.allSatisfy(\.here) } ? nil : "\(lists.map(\.shared))"
        }
        try await room.clients[alice].request(.playlist(.jump(1)))
        try await watch.until("both on the first film", within: 20) { try await everyoneOn(0, number: 1) }
        try await room.clients[alice].request(.pause)
        try await watch.until("mpv's list mirrored at both", within: 10) { try await watch.mpvMirrorsList([alice, bob], playingCurrent: true) }

        // bob clicks the OSC's next arrow: the room moves to #2, everyone on their own copy.
        let mark = try await watch.mark()
        try await mpvCommand(bob, "playlist-next")
        try await watch.until("both on the second film, #2 current", within: 20) { try await everyoneOn(1, number: 2) }
        // Told to alice as bob's move (her events may come a moment after her status says #2).
        try await watch.until("alice to hear of bob's move to #2", within: 10) {
            let moves = watch.playlistEvents(alice, since: mark).filter { $0.actor == "bob" }.compactMap(\.change)
            return moves.contains { $0.contains("#2") } ? nil : "\(moves)"
        }
        // alice clicks back: #1 again, everywhere.
        try await mpvCommand(alice, "playlist-prev")
        try await watch.until("both on the first film again, #1 current", within: 20) { try await everyoneOn(0, number: 1) }
        try await watch.until("mpv's list mirrored at both", within: 10) { try await watch.mpvMirrorsList([alice, bob], playingCurrent: true) }
    }
}
