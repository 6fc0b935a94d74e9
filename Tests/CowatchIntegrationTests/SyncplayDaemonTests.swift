import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Issue 24, part 1: real `cowatchd` processes (headless libmpv, a real film) in a room of the
/// real `syncplay-server` from Debian, beside a Syncplay participant made of the protocol code
/// (`SyncplayTestPeer`). Bounds are generous for a noisy 2-core machine.
@Suite(
    "Syncplay: Cowatch daemons in a real Syncplay server's room", .serialized, .realProcesses,
    .enabled(if: SyncplayServerProcess.binary != nil, "syncplay-server is not installed: `make test-deps` installs it"))
struct SyncplayDaemonTests {
    /// Pairwise skew allowed between the two daemons once settled (two Syncplay clients measured
    /// 54–113 ms apart on this machine; Cowatch daemons in a Cowatch room, well under 1 ms).
    static let skewBound = 0.050

    @Test("two daemons play, seek and pause together with who did it; a Syncplay member's pause and chat reach them; speed is refused")
    func evening() async throws {
        let server = try await SyncplayServerProcess.start()
        let film = try await TestMedia.file(.audioVideo)
        let room = try await DaemonRoom(names: ["alice", "bob"], media: film, room: "evening", venue: .syncplay(port: server.port), probes: true)
        defer { room.stopInBackground() }
        let (alice, bob) = (room.clients[0], room.clients[1])
        #expect(room.daemons[0].stderr.contains("offers no TLS"), "plaintext must be said:\n\(room.daemons[0].stderr)")

        // alice plays: bob hears who, and the two players run together.
        try await alice.request(.play)
        let play = try await room.expectNotices("play", actor: "alice", timeout: 10, from: [1])
        #expect(play[0].fields["text"]?.stringValue?.hasPrefix("alice played") == true, "\(play)")
        let afterPlay = await room.settledSkew(after: 3)
        #expect(afterPlay < Self.skewBound, "skew after play \(afterPlay)\n\(server.log)")

        // bob seeks to 40 s: alice goes there, and hears who.
        try await bob.request(.seek(seconds: 40, mode: .absolute))
        let seek = try await room.expectNotices("seek", actor: "bob", timeout: 10, from: [0])
        #expect(abs((seek[0].fields["to"]?.numberValue ?? -1) - 40) < 1, "\(seek)")
        let afterSeek = await room.settledSkew(after: 3)
        #expect(afterSeek < Self.skewBound, "skew after seek \(afterSeek)")
        let position = try await alice.status().position ?? -1
        #expect(position > 40 && position < 50, "alice at \(position)")

        // alice pauses: bob stops on her frame.
        try await alice.request(.pause)
        let pauses = try await room.expectNotices("pause", actor: "alice", timeout: 10, from: [1])
        let pausedAt = try #require(pauses[0].fields["position"]?.numberValue)
        await pause(1)
        for client in room.clients {
            let status = try await client.status()
            #expect(status.paused)
            #expect(abs((status.position ?? -1) - pausedAt) < 0.1, "\(status.name) at \(status.position ?? -1), alice paused at \(pausedAt)")
        }

        // Syncplay has no speed: refused, saying so; nothing moved.
        let refused = await room.failure(0, .speed(1.5))
        #expect(refused?.code == .unsupported, "\(String(describing: refused))")
        #expect(refused?.message.contains("Syncplay") == true)

        // carol, a Syncplay participant, joins: the daemons hear it and list her as a Syncplay member.
        let carol = try SyncplayTestPeer(port: server.port, .init(username: "carol", room: "evening"))
        #expect(try await carol.pump(for: 15) { $0.machine.phase == .joined && $0.machine.timeline != nil }, "\(String(describing: carol.failure))")
        _ = try await room.expectNotices("join", actor: "carol", timeout: 10)
        #expect(try await carol.pump(for: 10) { Set($0.users.map(\.username)).isSuperset(of: ["alice", "bob", "carol"]) }, "\(carol.users)")
        let listed = try await bob.request(.getParticipants)
        let entries = try ParticipantsReply(json: listed).participants
        #expect(entries.contains { $0.name == "carol" && $0.state == "syncplay" }, "\(entries)")
        #expect(carol.machine.timeline?.paused == true)
        #expect(abs((carol.machine.roomPosition(at: monotonicNow()) ?? -1) - pausedAt) < 0.5, "carol's room is where alice paused")

        // carol plays: both daemons hear who, and play.
        try carol.change(paused: false, position: carol.machine.roomPosition(at: monotonicNow()) ?? pausedAt)
        try await carol.pump(for: 1)
        _ = try await room.expectNotices("play", actor: "carol", timeout: 10)
        try await carol.pump(for: 1)
        for client in room.clients { #expect(try await client.status().paused == false) }

        // Chat, both ways: alice's line reaches carol; carol's reaches bob.
        _ = try await alice.request(.chat("hello from Cowatch"))
        #expect(try await carol.pump(for: 10) { $0.chats.contains { $0.from == "alice" && $0.message == "hello from Cowatch" } })
        try carol.chat("hi from Syncplay")
        try await carol.pump(for: 0.5)
        let line = try #require(try await room.listeners[1].waitForEvent(named: "chat", timeout: 10) { $0.fields["text"]?.stringValue == "hi from Syncplay" })
        #expect(line.fields["participant"]?.stringValue == "carol" || line.fields["from"]?.stringValue == "carol", "\(line)")

        // carol leaves: said.
        _ = consume carol
        _ = try await room.expectNotices("leave", actor: "carol", timeout: 20)
    }

    @Test("a wrong server password and a server without TLS when TLS is required keep the daemon out, saying why")
    func refusals() async throws {
        let server = try await SyncplayServerProcess.start(password: "right horse")
        let film = try await TestMedia.file(.audioVideo)
        let directory = NSTemporaryDirectory() + "cowatch-syncplay-pw-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let wrong = directory + "/wrong"
        try "wrong horse\n".write(toFile: wrong, atomically: true, encoding: .utf8)
        chmod(wrong, 0o600)
        let right = directory + "/right"
        try "right horse\n".write(toFile: right, atomically: true, encoding: .utf8)
        chmod(right, 0o600)
        let link = "syncplay://127.0.0.1:\(server.port)/evening"

        // Refused: the daemon stays up, out of the room, saying the server's words (as after a
        // Cowatch server's refusal; `cowatch join` tries again), and does not knock again by itself.
        for (name, arguments, said) in [
            ("mallory", ["--syncplay-password-file", wrong], "Wrong password"),
            ("strict", ["--syncplay-password-file", right, "--syncplay-require-tls"], "TLS is required"),
        ] {
            let daemon = try await DaemonProcess(name: name, media: film, extraArguments: ["--join", link] + arguments)
            defer { daemon.terminateInBackground() }
            let client = try daemon.client()
            #expect(await eventually(timeout: 20) { daemon.stderr.contains(said) }, "\(daemon.stderr)")
            // The server says each refused password ("Client drop: … Wrong password supplied").
            let drops = server.log.components(separatedBy: "Client drop").count
            await pause(3)
            #expect(daemon.process.isRunning, "\(daemon.stderr)")
            let session = try await client.request(.getStatus)["room"]?["session"]?.stringValue
            #expect(session != "joined", "\(name): \(String(describing: session))")
            #expect(server.log.components(separatedBy: "Client drop").count == drops, "\(name) knocked again:\n\(server.log)")
        }

        let admitted = try await DaemonProcess(name: "alice", media: film, extraArguments: ["--join", link, "--syncplay-password-file", right])
        defer { admitted.terminateInBackground() }
        let client = try admitted.client()
        #expect(try await eventually(timeout: 20) { try await client.request(.getStatus)["room"]?["session"] == "joined" }, "\(admitted.stderr)")
    }

    @Test("STARTTLS: joined over TLS with the server's authority trusted; a certificate nobody vouches for stops the daemon")
    func tls() async throws {
        let server = try await SyncplayServerProcess.start(tls: true)
        #expect(server.log.contains("TLS support is enabled"), "\(server.log)")
        let film = try await TestMedia.file(.audioVideo)
        let link = "syncplay://localhost:\(server.port)/evening"
        // The test authority is trusted through the environment, not the system's store.
        let alice = try await DaemonProcess(
            name: "alice", media: film, extraArguments: ["--join", link, "--syncplay-require-tls"],
            environment: ["COWATCH_SYNCPLAY_CA_FILE": try #require(server.authorityFile)])
        defer { alice.terminateInBackground() }
        let client = try alice.client()
        #expect(try await eventually(timeout: 20) { try await client.request(.getStatus)["room"]?["session"] == "joined" }, "\(alice.stderr)")
        #expect(!alice.stderr.contains("offers no TLS"), "\(alice.stderr)")

        let untrusting = try await DaemonProcess(name: "bob", media: film, extraArguments: ["--join", link])
        defer { untrusting.terminateInBackground() }
        #expect(await untrusting.exit.wait(timeout: 30), "an unverifiable certificate must stop the daemon")
        #expect(untrusting.stderr.contains("certificate"), "\(untrusting.stderr)")
    }
}
