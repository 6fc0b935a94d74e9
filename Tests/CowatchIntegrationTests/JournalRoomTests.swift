import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// The journal (attachments) with real daemons, a real server, real mpv and the CLI.
@Suite("Attachments in a room of real daemons", .serialized, .realProcesses)
struct JournalRoomTests {
    /// A private temporary directory, removed by the caller.
    static func scratch() -> String {
        let path = NSTemporaryDirectory() + "cowatch-journal-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// `sha256sum` of a file: an independent check of what the transfer verified.
    static func sha256(_ path: String) async throws -> String {
        let result = try await run(executable: "/usr/bin/sha256sum", [path])
        guard let digest = result.stdout.split(separator: " ").first else { throw TestFailure("sha256sum: \(result.stderr)") }
        return String(digest)
    }

    static func randomFile(_ path: String, megabytes: Int) async throws {
        let made = try await run(executable: "/bin/dd", ["if=/dev/urandom", "of=\(path)", "bs=1M", "count=\(megabytes)", "status=none"])
        guard made.status == 0 else { throw TestFailure("dd: \(made.stderr)") }
    }

    @Test("a 100 MB attachment added by a viewer who then leaves reaches a late joiner, verified by hash")
    func largeAttachmentOutlivesItsUploader() async throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/big.bin"
        try await Self.randomFile(file, megabytes: 100)
        let expected = try await Self.sha256(file)

        let room = try await DaemonRoom(names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "share")
        defer { room.stopInBackground() }
        let attached = try await runCowatch(["attach", file, "--meta", #"{"kind":"data"}"#, "--socket", room.daemons[1].controlPath])
        #expect(attached.status == 0, "\(attached.stderr)")
        #expect(attached.stdout.contains(String(expected.prefix(12))), "\(attached.stdout)")
        let announced = try await room.listeners[0].waitForEvent(named: "attachment-added", timeout: 10)
        #expect(announced?.fields["id"]?.stringValue == expected)
        #expect(announced?.fields["participant"] == "bob")
        #expect(announced?.fields["size"]?.numberValue == 104_857_600)

        // The uploader leaves: the attachment stays in the room.
        _ = await room.daemons[1].terminate()
        let left = try await room.listeners[0].waitForEvent(named: "notice", timeout: 10) { $0.fields["action"] == "leave" }
        #expect(left?.fields["participant"] == "bob")
        let carol = try await room.add("carol")
        let listed = try await runCowatch(["attachments", "--socket", room.daemons[carol].controlPath])
        #expect(listed.stdout.contains("big.bin") && listed.stdout.contains("from bob"), "\(listed.stdout) \(listed.stderr)")

        let output = directory + "/fetched"
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let fetched = try await runCowatch(["fetch", String(expected.prefix(10)), "-o", output, "--socket", room.daemons[carol].controlPath])
        #expect(fetched.status == 0, "\(fetched.stderr) \(fetched.stdout)")
        #expect(try await Self.sha256(output + "/big.bin") == expected)
        #expect(!FileManager.default.fileExists(atPath: output + "/big.bin.part"))
        // The room played on meanwhile.
        #expect(try await room.roomStatus(0)["session"] == "joined")
    }

    @Test("a .srt attachment becomes a selected subtitle track in every player, late joiners too; --auto-subtitles no opts out")
    func subtitlesInEveryPlayer() async throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let srt = directory + "/night.en.srt"
        try "1\n00:00:00,000 --> 00:00:30,000\nHello from the journal\n\n".write(toFile: srt, atomically: true, encoding: .utf8)

        let room = try await DaemonRoom(names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "subs")
        defer { room.stopInBackground() }
        let opted = try await room.add("dave", arguments: ["--auto-subtitles", "no"])
        let attached = try await runCowatch(["attach", srt, "--socket", room.daemons[0].controlPath])
        #expect(attached.status == 0, "\(attached.stderr)")
        let carol = try await room.add("carol")
        for index in [0, 1, carol] {
            let track = try await room.clients[index].subtitleTrack(titled: "night.en.srt", within: 15)
            #expect(track?["selected"] == true, "\(room.names[index]): \(String(describing: track))")
        }
        #expect(try await room.clients[opted].subtitleTracks().isEmpty)

        // Detached for everyone: the track leaves every player.
        let id = try await room.clients[0].request(.getAttachments).arrayValue?.first?["id"]?.stringValue ?? ""
        _ = try await room.clients[1].request(.detach(id))
        for index in [0, 1, carol] {
            let deadline = monotonicNow() + 10
            while monotonicNow() < deadline, try await !room.clients[index].subtitleTracks().isEmpty { await pause(0.1) }
            #expect(try await room.clients[index].subtitleTracks().isEmpty, "\(room.names[index])")
        }
    }

    @Test("size and quota limits give clear errors with stable codes, and the room carries on")
    func limits() async throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.randomFile(directory + "/two.bin", megabytes: 2)
        try await Self.randomFile(directory + "/one.bin", megabytes: 1)
        try await Self.randomFile(directory + "/other.bin", megabytes: 1)

        let room = try await DaemonRoom(
            names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "small",
            venue: .server(arguments: ["--attachment-max-size", "1M", "--room-quota", "1536K"]))
        defer { room.stopInBackground() }
        let socket = room.daemons[0].controlPath
        let tooLarge = try await runCowatch(["attach", directory + "/two.bin", "--socket", socket])
        #expect(tooLarge.status != 0)
        #expect(tooLarge.stderr.contains("at most 1.0 MiB"), "\(tooLarge.stderr)")
        #expect(await room.failure(0, .attach(path: directory + "/two.bin", name: nil, meta: nil))?.code.rawValue == "too-large")

        #expect(try await runCowatch(["attach", directory + "/one.bin", "--socket", socket]).status == 0)
        let overQuota = await room.failure(1, .attach(path: directory + "/other.bin", name: nil, meta: nil), timeout: 30)
        #expect(overQuota?.code.rawValue == "quota-exceeded", "\(String(describing: overQuota))")
        #expect(overQuota?.message.contains("quota") == true)
        let missing = await room.failure(1, .detach("00000000"))
        #expect(missing?.code.rawValue == "not-found")

        // Nothing else was lost: the first attachment is listed, and playback and chat go on.
        #expect(try await room.clients[1].request(.getAttachments).arrayValue?.count == 1)
        _ = try await room.clients[1].request(.pause)
        #expect(try await room.clients[0].waitForStatus(timeout: 5) { $0.paused }.paused)
        _ = try await room.clients[1].request(.chat("still here"))
        // Detaching frees the quota.
        let id = try await room.clients[0].request(.getAttachments).arrayValue?.first?["id"]?.stringValue ?? ""
        _ = try await room.clients[0].request(.detach(id))
        #expect(try await room.listeners[1].waitForEvent(named: "attachment-removed", timeout: 5) != nil)
        #expect(await room.failure(1, .attach(path: directory + "/other.bin", name: nil, meta: nil), timeout: 30) == nil)
    }

    @Test("an upload and a download dropped midway resume from where they broke off, checked by hash")
    func resume() async throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/part.bin"
        try await Self.randomFile(file, megabytes: 4)
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: file)))
        let id = try await Self.sha256(file)

        let server = try await ServerProcess.start(extraArguments: ["--no-tls"])
        defer { server.terminateInBackground() }
        let member = try RawRoomClient(port: server.port)
        await member.send(.hello(.init(features: [WireFeature.journal], room: "r", name: "up", client: "raw-test", nonce: RoomSecret.nonce())))
        #expect(await member.read(type: "challenge") != nil)
        await member.send(.auth(.init()))
        let token = try #require(await member.read(type: "welcome")?["token"]?.stringValue)
        func request(_ kind: TransferRequest.Kind, offset: Int = 0) -> ClientMessage {
            .transfer(TransferRequest(
                room: "r", name: "up", token: token, kind: kind, id: id, size: kind == .upload ? bytes.count : nil,
                fileName: kind == .upload ? "part.bin" : nil, offset: offset))
        }

        // The first upload breaks off after 1.5 MB.
        let first = try RawRoomClient(port: server.port)
        await first.send(request(.upload))
        #expect(await first.read(type: "transfer_ready")?["offset"]?.numberValue == 0)
        await first.send(bytes: Array(bytes[..<1_500_000]))
        await pause(0.5)
        first.close()
        await pause(0.5)
        // The second is told what the server kept, and sends only the rest.
        let second = try RawRoomClient(port: server.port)
        await second.send(request(.upload))
        let ready = await second.read(type: "transfer_ready")
        #expect(ready?["offset"]?.numberValue == 1_500_000)
        await second.send(bytes: Array(bytes[1_500_000...]))
        let done = await second.read(type: "transfer_done", timeout: 10)
        #expect(done?["id"]?.stringValue == id)
        #expect(await member.read(type: "attachment_added")?["name"] == "part.bin")

        // A download asks from an offset and gets exactly the rest.
        let fetch = try RawRoomClient(port: server.port)
        await fetch.send(request(.download, offset: 3_000_000))
        #expect(await fetch.read(type: "transfer_ready")?["offset"]?.numberValue == 3_000_000)
        let tail = await fetch.readBytes(bytes.count - 3_000_000, timeout: 10)
        #expect(tail == Array(bytes[3_000_000...]))
        #expect(await fetch.isClosed(timeout: 5))

        // Bytes that do not match the announced hash are refused and not announced.
        let liar = try RawRoomClient(port: server.port)
        let fakeID = String(repeating: "ab", count: 32)
        await liar.send(.transfer(TransferRequest(room: "r", name: "up", token: token, kind: .upload, id: fakeID, size: 1000, fileName: "x")))
        #expect(await liar.read(type: "transfer_ready") != nil)
        await liar.send(bytes: [UInt8](repeating: 7, count: 1000))
        #expect(await liar.read(type: "error")?["code"] == "hash-mismatch")

        // Hostile openings: a token that is not this participant's, and bytes before the go-ahead.
        let stranger = try RawRoomClient(port: server.port)
        await stranger.send(.transfer(TransferRequest(
            room: "r", name: "up", token: String(repeating: "0", count: 32) + "." + String(repeating: "0", count: 64),
            kind: .download, id: id)))
        #expect(await stranger.read(type: "error")?["code"] == "auth-failed")
        let eager = try RawRoomClient(port: server.port)
        await eager.send(bytes: request(.download).encoded() + [1, 2, 3])
        #expect(await eager.read(type: "error")?["code"] == "protocol-violation")
        #expect(await eager.isClosed(timeout: 5))
        // The room lives on.
        await member.send(.timeRequest(id: 1, t1: 0))
        #expect(await member.read(type: "time_reply") != nil)
    }

    @Test("a daemon's fetch resumes from the partial file a broken transfer left; a corrupt one is caught by the hash")
    func daemonResumes() async throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/movie-extra.bin"
        try await Self.randomFile(file, megabytes: 24)
        let expected = try await Self.sha256(file)

        let room = try await DaemonRoom(names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "cut")
        defer { room.stopInBackground() }
        #expect(try await runCowatch(["attach", file, "--socket", room.daemons[0].controlPath]).status == 0)
        // A partial download left by an earlier attempt (as a dropped link leaves it, in the
        // daemon's private partial directory): the fetch asks only for the rest, and the result
        // is checked whole.
        let partials = room.daemons[1].directory + "/state/cowatch/partial"
        try FileManager.default.createDirectory(atPath: partials, withIntermediateDirectories: true)
        chmod(partials, 0o700)
        let target = directory + "/got.bin"
        let head = try Data(contentsOf: URL(fileURLWithPath: file)).prefix(10_000_000)
        try head.write(to: URL(fileURLWithPath: partials + "/" + PartialDownloads.fileName(id: expected, target: target)))
        let fetched = try await room.clients[1].request(.fetch(id: expected, path: target), timeout: 60)
        #expect(fetched["resumed_from"]?.numberValue == 10_000_000)
        #expect(try await Self.sha256(target) == expected)
        let progress = try await room.listeners[1].waitForEvent(named: "attachment-progress", timeout: 5) { $0.fields["state"] == "done" }
        #expect(progress?.fields["resumed_from"]?.numberValue == 10_000_000)

        // A corrupt partial file is caught by the hash and discarded, never renamed into place.
        let corrupt = directory + "/bad.bin"
        try Data(repeating: 0, count: 5_000_000).write(
            to: URL(fileURLWithPath: partials + "/" + PartialDownloads.fileName(id: expected, target: corrupt)))
        let failure = await room.failure(1, .fetch(id: expected, path: corrupt), timeout: 60)
        #expect(failure?.code.rawValue == "hash-mismatch")
        #expect(!FileManager.default.fileExists(atPath: corrupt))
    }

    @Test("a fetch whose link drops midway resumes by itself from what arrived, and arrives whole")
    func linkDropsMidway() async throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/long.bin"
        try await Self.randomFile(file, megabytes: 24)
        let expected = try await Self.sha256(file)

        let room = try await DaemonRoom(
            names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "drop",
            links: [(up: LinkImpairment(), down: LinkImpairment())])
        defer { room.stopInBackground() }
        #expect(try await runCowatch(["attach", file, "--socket", room.daemons[0].controlPath]).status == 0)
        // bob's transfer connection is cut after 8 MB; his room connection stays up.
        room.links[1].cutOnce(afterDownstreamBytes: 8_000_000)
        let target = directory + "/got.bin"
        let fetched = try await room.clients[1].request(.fetch(id: expected, path: target), timeout: 60)
        let resumedFrom = fetched["resumed_from"]?.numberValue ?? 0
        #expect(resumedFrom > 1_000_000 && resumedFrom < 9_000_000, "resumed from \(resumedFrom)")
        #expect(try await Self.sha256(target) == expected)
        #expect(try await room.roomStatus(1)["session"] == "joined")
    }
}
