import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// `cowatchd a.mkv b.mkv c.mkv` in a new room: real processes (a `cowatch-server`, headless
/// daemons, ffmpeg-made films). The first daemon's films fill the room's empty playlist with its
/// first film current; a joiner with films of its own leaves the list alone and says so.
@Suite("Seeding a new room's playlist", .realProcesses)
struct PlaylistSeedRoomTests {
    /// Daemon `index`'s playlist, once `predicate` holds (polled every 100 ms, suspended).
    func playlist(
        _ room: DaemonRoom, _ index: Int, timeout: Double = 15, until predicate: (PlaylistReply) -> Bool
    ) async throws -> PlaylistReply {
        let deadline = monotonicNow() + timeout
        var reply = PlaylistReply()
        while monotonicNow() < deadline {
            reply = try PlaylistReply(json: try await room.clients[index].request(.getPlaylist))
            if predicate(reply) { return reply }
            await pause(0.1)
        }
        throw TestFailure("\(room.names[index])'s playlist never became as expected: \(reply.json.jsonString)\n\(room.daemons[index].stderr)")
    }

    @Test("three films seed a new room's list, #1 current; a joiner's own films leave it as it is")
    func seeds() async throws {
        let first = try await TestMedia.file(.audioVideo)
        let second = try await TestMedia.file(.videoOnly)
        let directory = try makeTemporaryDirectory("cowatch-seed")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let third = directory + "/third.mkv"
        try FileManager.default.copyItem(atPath: first, toPath: third)

        let room = try await DaemonRoom(media: first, room: "seeded")
        defer { room.stopInBackground() }
        try await room.add("alice", arguments: [first, second, third])
        // alice plays her own copies (`here`), found by identity.
        let seeded = try await playlist(room, 0) { $0.entries.count == 3 && $0.current == 1 && $0.entries.allSatisfy(\.here) }
        #expect(seeded.entries.map(\.kind) == [.file, .file, .file])
        #expect(seeded.entries.map(\.addedBy) == ["alice", "alice", "alice"])
        #expect(seeded.entries.map(\.name) == ["av-75s.mkv", "v-75s.mkv", "third.mkv"])
        // The jump that made #1 current is followed by a pause: the new room waits, as new rooms do.
        // (Its notice may come before this test's event listener has connected: the room's state
        // says it, past the countdown the room would otherwise have started after.)
        await pause(RoomPlaylist.defaultCountdown + 1)
        let status = try await room.clients[0].status()
        #expect(status.paused, "the seeded room started by itself")
        #expect((status.position ?? -1) < 1, "at \(status.position ?? -1)")

        // bob comes with films of his own: the list stays alice's, and bob hears why.
        try await room.add("bob", media: second, arguments: [second, first, "--log-level", "notice"])
        try await room.waitForParticipants(2)
        let deadline = monotonicNow() + 10
        while !room.daemons[1].stderr.contains("the room's playlist already has 3 entries: left as it is"), monotonicNow() < deadline {
            await pause(0.1)
        }
        #expect(room.daemons[1].stderr.contains("the room's playlist already has 3 entries: left as it is"), "\(room.daemons[1].stderr)")
        let bobs = try await playlist(room, 1) { $0.entries.count == 3 }
        #expect(bobs.entries.map(\.id) == seeded.entries.map(\.id))
        #expect(bobs.entries.map(\.addedBy) == ["alice", "alice", "alice"])
        let alices = try PlaylistReply(json: try await room.clients[0].request(.getPlaylist))
        #expect(alices.entries.map(\.id) == seeded.entries.map(\.id))
        #expect(alices.current == 1)
    }

    @Test("a missing film among several stops start-up with its name; several need a room")
    func missingFilm() async throws {
        let film = try await TestMedia.file(.videoOnly)
        let directory = try makeTemporaryDirectory("cowatch-seed-missing")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let common = ["--name", "x", "--control", directory + "/x.sock", "--mpv", "vo=null", "--mpv", "ao=null"]
        let missing = try await runBinary("cowatchd", [film, "/nonexistent/b.mkv", "--join", "127.0.0.1:9", "--no-tls"] + common)
        #expect(missing.status == 2)
        #expect(missing.stderr == "cowatchd: cannot open /nonexistent/b.mkv: no such file\n", "\(missing.stderr)")
        let alone = try await runBinary("cowatchd", [film, film] + common)
        #expect(alone.status == 2)
        #expect(alone.stderr.contains("give --host or --join too"), "\(alone.stderr)")
    }
}
