import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// Issue 22 item 12 with real daemons: a fetched attachment never overwrites a file without
/// --force, and never writes through a link another user planted as its partial file.
@Suite("Fetch and the user's files", .serialized)
struct FetchSafetyTests {
    @Test("fetch refuses a file already there (already-exists) and leaves it; --force replaces it; a planted .part link is refused")
    func noOverwrite() throws {
        let directory = try makeTemporaryDirectory("cowatch-fetch")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let shared = try makeTemporaryDirectory("cowatch-share")
        defer { try? FileManager.default.removeItem(atPath: shared) }
        try "the stranger's notes".write(toFile: shared + "/notes.txt", atomically: true, encoding: .utf8)
        try "my own notes".write(toFile: directory + "/notes.txt", atomically: true, encoding: .utf8)

        let room = try DaemonRoom(names: ["alice", "bob"], media: try TestMedia.audioVideo(), room: "files")
        defer { room.stop() }
        let attached = try runCowatch(["attach", shared + "/notes.txt", "--socket", room.daemons[0].controlPath])
        #expect(attached.status == 0, "\(attached)")
        let id = try #require(try room.clients[1].request(.getAttachments).arrayValue?.first?["id"]?.stringValue)

        let refused = try runCowatch(["fetch", String(id.prefix(8)), "-o", directory, "--socket", room.daemons[1].controlPath])
        #expect(refused.status != 0 && refused.stderr.contains("already exists; cowatch fetch --force replaces it"), "\(refused)")
        #expect(try String(contentsOfFile: directory + "/notes.txt", encoding: .utf8) == "my own notes")

        let forced = try runCowatch(["fetch", String(id.prefix(8)), "-o", directory, "--force", "--socket", room.daemons[1].controlPath])
        #expect(forced.status == 0, "\(forced)")
        #expect(try String(contentsOfFile: directory + "/notes.txt", encoding: .utf8) == "the stranger's notes")

        // Another user's link where the partial file goes: refused, its target untouched.
        let victim = directory + "/victim.txt"
        try "keep me".write(toFile: victim, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: directory + "/movie.srt.part", withDestinationPath: victim)
        let planted = room.failure(1, .fetch(id: id, path: directory + "/movie.srt"), timeout: 30)
        #expect(planted?.code == .unsafePath, "\(String(describing: planted))")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep me")
        #expect(!FileManager.default.fileExists(atPath: directory + "/movie.srt"))
    }
}
