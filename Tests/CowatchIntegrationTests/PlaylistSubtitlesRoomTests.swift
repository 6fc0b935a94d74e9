import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Subtitles for one playlist entry (`cowatch attach FILE --entry N`), with real processes: a
/// `cowatch-server`, headless `cowatchd`s and their libmpv, the playlist films, and the CLI.
/// Each player's subtitle tracks are mpv's `track-list`, read through its daemon.
@Suite("Subtitles for one playlist entry, with real daemons", .realProcesses)
struct PlaylistSubtitlesRoomTests {
    @Test("subtitles attached to #2 show only while #2 plays: at every viewer, a late joiner too, and again when #2 comes back")
    func entrySubtitles() async throws {
        let films = try await TestMedia.playlistFilms()
        let root = try makeTemporaryDirectory("cowatch-entry-subs")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (alice, bob, carol) = (0, 1, 2)
        let shelves = [
            try Shelf(films, in: root, at: "alice", names: [0: "one.mkv", 1: "two.mkv"]),
            try Shelf(films, in: root, at: "bob", names: [0: "S01E01.mkv", 1: "S01E02.mkv"]),
            try Shelf(films, in: root, at: "carol", names: [0: "first.mkv", 1: "second.mkv"]),
        ]
        let srt = root + "/two.en.srt"
        try "1\n00:00:00,000 --> 00:00:30,000\nOnly in the second film\n\n".write(toFile: srt, atomically: true, encoding: .utf8)
        let notes = root + "/notes.txt"
        try "not subtitles\n".write(toFile: notes, atomically: true, encoding: .utf8)

        let room = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: "pl-subs")
        defer { room.stopInBackground() }
        for (name, shelf) in zip(["alice", "bob"], shelves) {
            try await room.add(name, arguments: shelf.arguments, waitJoined: false)
        }
        try await room.waitForParticipants(2)
        let watch = PlaylistWatch(room)
        /// nil when each of `viewers` has loaded its own copy of `film` (paused or playing).
        func onFilm(_ film: Int, _ viewers: [Int]) async throws -> String? {
            var wrong: [String] = []
            for viewer in viewers {
                let status = try await watch.status(viewer)
                if status.media != shelves[viewer].paths[film] { wrong.append(watch.describe(status)) }
            }
            return wrong.isEmpty ? nil : wrong.joined(separator: "; ")
        }
        func titles(_ viewer: Int) async throws -> [String] {
            try await room.clients[viewer].subtitleTracks().compactMap { $0["title"]?.stringValue }
        }

        try await room.clients[alice].request(.playlist(.add(shelves[alice].sources([0, 1]), next: false)))
        try await watch.until("both viewers to have both films", within: 20) {
            let lists = [try await watch.playlist(alice), try await watch.playlist(bob)]
            return lists.allSatisfy { $0.entries.count == 2 && $0.entries.allSatisfy(\.here) } ? nil : "\(lists.map(\.shared))"
        }
        try await room.clients[alice].request(.playlist(.jump(1)))
        try await watch.until("both on the first film", within: 20) { try await onFilm(0, [alice, bob]) }
        // Held on #1 (it is 6 s long, and the room would move on by itself).
        try await room.clients[alice].request(.pause)

        // From the CLI: subtitles for #2, while #1 plays.
        let attached = try await runCowatch(["attach", srt, "--entry", "2", "--socket", room.daemons[alice].controlPath])
        #expect(attached.status == 0, "\(attached.stderr)")
        #expect(attached.stdout.contains("two.en.srt") && attached.stdout.contains("entry-subtitles"), "\(attached.stdout)")
        // No such entry, and a file that is not subtitles: refused, nothing attached.
        #expect(await room.failure(alice, .attach(path: srt, name: "x.srt", meta: nil, entry: 3))?.code.rawValue == "invalid-argument")
        #expect(await room.failure(bob, .attach(path: notes, name: nil, meta: nil, entry: 2))?.code.rawValue == "invalid-argument")
        let listed = try AttachmentsReply(json: try await room.clients[bob].request(.getAttachments)).attachments
        #expect(listed.map(\.name) == ["two.en.srt"], "\(listed.map(\.name))")
        let secondID = try await watch.playlist(alice).entries[1].id
        #expect(listed.first?.subtitlesEntry == secondID)
        // While #1 plays, no player shows them (the attachment reached bob above; a second more
        // for a fetch that should not happen).
        await pause(1)
        for viewer in [alice, bob] {
            #expect(try await titles(viewer).contains("two.en.srt") == false, "\(room.names[viewer]) shows #2's subtitles on #1")
        }

        // #2 plays: every player shows them, selected.
        try await room.clients[bob].request(.playlist(.jump(2)))
        try await watch.until("both on the second film", within: 20) { try await onFilm(1, [alice, bob]) }
        for viewer in [alice, bob] {
            let track = try await room.clients[viewer].subtitleTrack(titled: "two.en.srt", within: 15)
            #expect(track?["selected"]?.boolValue == true, "\(room.names[viewer]): \(track?.jsonString ?? "no track")")
        }
        // A late joiner lands on #2 and gets them from the journal's history.
        try await room.add("carol", arguments: shelves[carol].arguments)
        try await watch.until("carol on the second film", within: 20) { try await onFilm(1, [carol]) }
        #expect(try await room.clients[carol].subtitleTrack(titled: "two.en.srt", within: 15) != nil, "carol has no subtitles on #2")

        // Back to #1: gone everywhere (mpv drops a file's added tracks, and nothing adds them again).
        try await room.clients[carol].request(.playlist(.jump(1)))
        try await watch.until("everyone on the first film", within: 20) { try await onFilm(0, [alice, bob, carol]) }
        await pause(1)
        for viewer in [alice, bob, carol] {
            #expect(try await titles(viewer).contains("two.en.srt") == false, "\(room.names[viewer]) shows #2's subtitles on #1")
        }
        // And #2 again: back, from each daemon's cache.
        try await room.clients[alice].request(.playlist(.jump(2)))
        try await watch.until("everyone on the second film", within: 20) { try await onFilm(1, [alice, bob, carol]) }
        for viewer in [alice, bob, carol] {
            #expect(try await room.clients[viewer].subtitleTrack(titled: "two.en.srt", within: 15) != nil, "\(room.names[viewer]) on #2 again")
        }
    }
}
