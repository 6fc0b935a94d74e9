import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Issue 24, part 2, from home: `cowatchd --host … --syncplay-port PORT` takes Syncplay clients
/// (here Cowatch's own Syncplay protocol code, `SyncplayTestPeer`) into the room it hosts. A room
/// with a secret takes them only with the Syncplay password the host set.
@Suite("Syncplay: clients in a room a daemon hosts (--syncplay-port)", .serialized, .realProcesses)
struct SyncplayHostedTests {
    @Test("a room with a secret: a Syncplay client with the host's Syncplay password joins (the host proves the secret for it) and plays; one with a wrong password is refused")
    func secretRoom() async throws {
        let directory = try makeTemporaryDirectory("cowatch-syncplay-hosted")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func secretFile(_ name: String, _ text: String) -> String {
            let path = directory + "/" + name
            FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
            return path
        }
        let syncplayPort = freeLoopbackPort()
        let room = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: "home", venue: .hostedByFirst)
        defer { room.stopInBackground() }
        try await room.add("alice", arguments: [
            "--room-secret-file", secretFile("secret", "correct horse battery staple"),
            "--syncplay-port", "\(syncplayPort)", "--syncplay-password-file", secretFile("syncplay", "friends only"),
        ])
        let alice = room.clients[0]

        let carol = try SyncplayTestPeer(port: syncplayPort, .init(username: "carol", room: "home", passwordHash: SyncplayPassword.hash("friends only")))
        #expect(try await carol.pump(for: 15) { $0.machine.phase == .joined && $0.machine.timeline != nil }, "\(String(describing: carol.failure))")
        _ = try await room.expectNotices("join", actor: "carol", timeout: 15)

        // carol plays: alice's player plays, and she hears who.
        try await carol.pump(for: 1.5)
        try carol.change(paused: false, position: 0)
        _ = try await room.expectNotices("play", actor: "carol", timeout: 15)
        #expect(try await eventually(timeout: 10) { try await alice.status().paused == false })

        let mallory = try SyncplayTestPeer(port: syncplayPort, .init(username: "mallory", room: "home", passwordHash: SyncplayPassword.hash("guess")))
        try await mallory.pump(for: 15) { $0.failure != nil }
        #expect(mallory.failure?.code == .authFailed, "\(String(describing: mallory.failure))")
        #expect(carol.failure == nil && room.daemons[0].process.isRunning)
    }
}

/// Issue 24, part 2, TLS: a `cowatch-server` with a certificate an authority signed answers
/// Syncplay's STARTTLS with yes; a daemon joining its rooms as a Syncplay client (trusting the
/// test's authority) verifies it and plays with a Cowatch daemon there.
extension SyncplayHostedTests {
    @Test("STARTTLS with --tls-cert: a daemon joining by syncplay:// (TLS required, the test's authority trusted) plays with a Cowatch daemon in the room")
    func startTLS() async throws {
        let directory = try makeTemporaryDirectory("cowatch-syncplay-tls")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await SyncplayServerProcess.makeCertificates(in: directory)
        let film = try await TestMedia.file(.audioVideo)
        let room = try await DaemonRoom(
            names: ["alice"], media: film, room: "tls",
            venue: .server(arguments: [
                "--tls-cert", directory + "/cert.pem", "--tls-key", directory + "/privkey.pem", "--syncplay-listen", "127.0.0.1:0",
            ]))
        defer { room.stopInBackground() }
        let port = try #require(room.server.syncplayPort)
        try await room.add(
            "bob",
            arguments: ["--join", "syncplay://localhost:\(port)/tls", "--syncplay-ca-file", directory + "/authority.pem", "--syncplay-require-tls"],
            roomFlags: false)
        _ = try await room.expectNotices("join", actor: "bob", timeout: 20, from: [0])
        #expect(!room.daemons[1].stderr.contains("offers no TLS"), "\(room.daemons[1].stderr)")

        try await room.clients[0].request(.play)
        #expect(try await eventually(timeout: 15) { try await room.clients[1].status().paused == false }, "\(room.daemons[1].stderr)")
        #expect(room.daemons.allSatisfy { $0.process.isRunning })
    }
}
