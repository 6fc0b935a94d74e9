import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Issue 22 item 12 with real daemons: a fetched attachment never overwrites a file without
/// --force, never writes through a link another user planted beside it, and keeps its partial
/// file in the daemon's private directory, from which it resumes.
@Suite("Fetch and the user's files", .serialized, .realProcesses)
struct FetchSafetyTests {
    @Test("fetch refuses a file already there (already-exists) and leaves it; --force replaces it")
    func noOverwrite() async throws {
        let directory = try makeTemporaryDirectory("cowatch-fetch")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let shared = try makeTemporaryDirectory("cowatch-share")
        defer { try? FileManager.default.removeItem(atPath: shared) }
        try "the stranger's notes".write(toFile: shared + "/notes.txt", atomically: true, encoding: .utf8)
        try "my own notes".write(toFile: directory + "/notes.txt", atomically: true, encoding: .utf8)

        let room = try await DaemonRoom(names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "files")
        defer { room.stopInBackground() }
        let attached = try await runCowatch(["attach", shared + "/notes.txt", "--socket", room.daemons[0].controlPath])
        #expect(attached.status == 0, "\(attached)")
        let id = try await firstAttachmentID(listedBy: room.clients[1])

        let refused = try await runCowatch(["fetch", String(id.prefix(8)), "-o", directory, "--socket", room.daemons[1].controlPath])
        #expect(refused.status != 0 && refused.stderr.contains("already exists; cowatch fetch --force replaces it"), "\(refused)")
        #expect(try String(contentsOfFile: directory + "/notes.txt", encoding: .utf8) == "my own notes")

        let forced = try await runCowatch(["fetch", String(id.prefix(8)), "-o", directory, "--force", "--socket", room.daemons[1].controlPath])
        #expect(forced.status == 0, "\(forced)")
        #expect(try String(contentsOfFile: directory + "/notes.txt", encoding: .utf8) == "the stranger's notes")

        // A link planted at the target name itself: refused without --force, replaced (never
        // followed) with it.
        let victim = directory + "/victim.txt"
        try "keep me".write(toFile: victim, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: directory + "/linked.txt", withDestinationPath: victim)
        let linked = await room.failure(1, .fetch(id: id, path: directory + "/linked.txt"), timeout: 30)
        #expect(linked?.code == .alreadyExists, "\(String(describing: linked))")
        _ = try await room.clients[1].request(.fetch(id: id, path: directory + "/linked.txt", force: true), timeout: 30)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep me")
        #expect(try String(contentsOfFile: directory + "/linked.txt", encoding: .utf8) == "the stranger's notes")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/linked.txt")) == nil)
    }

    @Test("a link planted as the old partial name (movie.srt.part) beside the target is never written through; the partial lives in the daemon's private directory")
    func plantedPartialIgnored() async throws {
        let directory = try makeTemporaryDirectory("cowatch-fetch")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let shared = try makeTemporaryDirectory("cowatch-share")
        defer { try? FileManager.default.removeItem(atPath: shared) }
        try "1\n00:00:01,000 --> 00:00:02,000\nhello\n".write(toFile: shared + "/movie.srt", atomically: true, encoding: .utf8)

        let room = try await DaemonRoom(names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "planted")
        defer { room.stopInBackground() }
        #expect(try await runCowatch(["attach", shared + "/movie.srt", "--socket", room.daemons[0].controlPath]).status == 0)
        let id = try await firstAttachmentID(listedBy: room.clients[1])

        // Another local user's link where the partial file used to go, pointing at a file of ours.
        let victim = directory + "/victim.txt"
        try "keep me".write(toFile: victim, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: directory + "/movie.srt.part", withDestinationPath: victim)
        let fetched = try await runCowatch(["fetch", String(id.prefix(8)), "-o", directory, "--socket", room.daemons[1].controlPath])
        #expect(fetched.status == 0, "\(fetched)")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep me")
        #expect(try String(contentsOfFile: directory + "/movie.srt", encoding: .utf8).contains("hello"))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: directory + "/movie.srt.part") == victim)

        // The partials' directory: the daemon's own, 0700, emptied once the download is in place.
        let partials = room.daemons[1].directory + "/state/cowatch/partial"
        var info = stat()
        #expect(lstat(partials, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR && info.st_mode & 0o777 == 0o700)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: partials)) == [])

        // Opened to others, it is refused (unsafe-path) and nothing is written.
        chmod(partials, 0o755)
        let refused = await room.failure(1, .fetch(id: id, path: directory + "/again.srt"), timeout: 30)
        #expect(refused?.code == .unsafePath, "\(String(describing: refused))")
        #expect(!FileManager.default.fileExists(atPath: directory + "/again.srt"))
    }

    @Test("a fetch resumes from the partial an earlier attempt left in the private directory, and from a dropped link, with a link planted beside the target")
    func resumesFromPrivatePartial() async throws {
        let directory = try makeTemporaryDirectory("cowatch-fetch")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/extra.bin"
        let made = try await run(executable: "/bin/dd", ["if=/dev/urandom", "of=\(file)", "bs=1M", "count=24", "status=none"])
        #expect(made.status == 0, "\(made)")
        let content = try Data(contentsOf: URL(fileURLWithPath: file))

        let room = try await DaemonRoom(
            names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "resume",
            links: [(up: LinkImpairment(), down: LinkImpairment())])
        defer { room.stopInBackground() }
        #expect(try await runCowatch(["attach", file, "--socket", room.daemons[0].controlPath]).status == 0)
        let id = try await firstAttachmentID(listedBy: room.clients[1])
        let victim = directory + "/victim.txt"
        try "keep me".write(toFile: victim, atomically: true, encoding: .utf8)

        // A dropped link: the retry resumes from what reached the private partial.
        let cut = directory + "/cut.bin"
        try FileManager.default.createSymbolicLink(atPath: cut + ".part", withDestinationPath: victim)
        room.links[1].cutOnce(afterDownstreamBytes: 8_000_000)
        let dropped = try await room.clients[1].request(.fetch(id: id, path: cut), timeout: 60)
        let resumedFrom = dropped["resumed_from"]?.numberValue ?? 0
        #expect(resumedFrom > 1_000_000 && resumedFrom < 9_000_000, "resumed from \(resumedFrom)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: cut)) == content)

        // What an earlier attempt (a daemon since restarted) left for the same target.
        let target = directory + "/got.bin"
        try FileManager.default.createSymbolicLink(atPath: target + ".part", withDestinationPath: victim)
        let partials = room.daemons[1].directory + "/state/cowatch/partial"
        try content.prefix(10_000_000).write(
            to: URL(fileURLWithPath: partials + "/" + PartialDownloads.fileName(id: id, target: target)))
        let fetched = try await room.clients[1].request(.fetch(id: id, path: target), timeout: 60)
        #expect(fetched["resumed_from"]?.numberValue == 10_000_000)
        #expect(try Data(contentsOf: URL(fileURLWithPath: target)) == content)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep me")
        #expect((try? FileManager.default.contentsOfDirectory(atPath: partials)) == [])
    }
}

/// The id of the first attachment `client`'s daemon lists, once it lists one: an attach is
/// answered when the server holds it, and the other daemons hear of it a moment later.
func firstAttachmentID(listedBy client: ControlClient, within seconds: Double = 20) async throws -> String {
    let deadline = monotonicNow() + seconds
    while true {
        let listed = try AttachmentsReply(json: try await client.request(.getAttachments))
        if let first = listed.attachments.first { return first.id }
        guard monotonicNow() < deadline else { throw TestFailure("no attachment listed in \(seconds) s") }
        await pause(0.05)
    }
}

