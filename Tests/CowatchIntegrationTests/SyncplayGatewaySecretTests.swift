import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Issue 24: `cowatch-server --syncplay-listen` lets Syncplay clients (here Cowatch's own Syncplay
/// protocol code, `SyncplayTestPeer`) into a room with a secret only when told to
/// (`--syncplay-secret-rooms`, beside `--syncplay-password-file`), proving the room's secret for a
/// client that gave the Syncplay password with the verifier key it keeps for the room.
@Suite("Syncplay: clients in rooms with a secret of cowatch-server (--syncplay-secret-rooms)", .serialized, .realProcesses)
struct SyncplayGatewaySecretTests {
    @Test("the rooms named: the right Syncplay password joins a room a daemon made with a secret, and plays; a wrong one, a room not named, and a server not told are refused")
    func secretRooms() async throws {
        let directory = try makeTemporaryDirectory("cowatch-syncplay-secret")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func secretFile(_ name: String, _ text: String) -> String {
            let path = directory + "/" + name
            FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
            return path
        }
        let syncplayPassword = secretFile("syncplay", "friends only")
        let room = try await DaemonRoom(
            media: try await TestMedia.file(.audioVideo), room: "home",
            venue: .server(arguments: [
                "--syncplay-listen", "127.0.0.1:0", "--syncplay-password-file", syncplayPassword, "--syncplay-secret-rooms", "home",
            ]))
        defer { room.stopInBackground() }
        // alice makes "home" with a secret; dave makes "other" with another, which the flag does not name.
        try await room.add("alice", arguments: ["--room-secret-file", secretFile("secret", "correct horse battery staple")])
        let fingerprint = try #require(room.server.fingerprint)
        try await room.add("dave", arguments: [
            "--join", room.address, "--room", "other", "--server-key", fingerprint,
            "--room-secret-file", secretFile("other-secret", "another long secret"),
        ], roomFlags: false)
        let alice = room.clients[0]
        let port = try #require(room.server.syncplayPort)
        let serverLog = (try? String(contentsOfFile: room.server.logPath, encoding: .utf8)) ?? ""
        #expect(serverLog.contains("WARNING: --syncplay-secret-rooms"), "the server warns about what the flag opens: \(serverLog)")

        let carol = try SyncplayTestPeer(port: port, .init(username: "carol", room: "home", passwordHash: SyncplayPassword.hash("friends only")))
        #expect(try await carol.pump(for: 15) { $0.machine.phase == .joined && $0.machine.timeline != nil }, "\(String(describing: carol.failure))")
        _ = try await room.expectNotices("join", actor: "carol", timeout: 15, from: [0])
        try await carol.pump(for: 1.5)
        try carol.change(paused: false, position: 0)
        _ = try await room.expectNotices("play", actor: "carol", timeout: 15, from: [0])
        #expect(try await eventually(timeout: 10) { try await alice.status().paused == false })

        let mallory = try SyncplayTestPeer(port: port, .init(username: "mallory", room: "home", passwordHash: SyncplayPassword.hash("guess")))
        try await mallory.pump(for: 15) { $0.failure != nil }
        #expect(mallory.failure?.code == .authFailed, "\(String(describing: mallory.failure))")

        let erin = try SyncplayTestPeer(port: port, .init(username: "erin", room: "other", passwordHash: SyncplayPassword.hash("friends only")))
        try await erin.pump(for: 15) { $0.failure != nil }
        #expect(erin.failure?.message.contains("has a secret") == true, "a room the flag does not name: \(String(describing: erin.failure))")
        #expect(carol.failure == nil && room.daemons.allSatisfy { $0.process.isRunning })

        // The same rooms (the state directory), a server not told: "home" turns Syncplay clients away as before.
        let state = room.server.stateDirectory
        _ = await room.server.stop()
        let plain = try await ServerProcess.start(
            extraArguments: ["--syncplay-listen", "127.0.0.1:0", "--syncplay-password-file", syncplayPassword], stateDirectory: state)
        defer { plain.terminateInBackground() }
        let frank = try SyncplayTestPeer(
            port: try #require(plain.syncplayPort), .init(username: "frank", room: "home", passwordHash: SyncplayPassword.hash("friends only")))
        try await frank.pump(for: 15) { $0.failure != nil }
        #expect(frank.failure?.message.contains("has a secret") == true, "without the flag: \(String(describing: frank.failure))")
    }

    @Test("--syncplay-secret-rooms needs --syncplay-password-file, and takes all or room names")
    func flags() async throws {
        let alone = try await runBinary("cowatch-server", ["--listen", "127.0.0.1:0", "--no-tls", "--syncplay-listen", "127.0.0.1:0", "--syncplay-secret-rooms", "all"])
        #expect(alone.status == 2 && alone.stderr.contains("--syncplay-password-file"), "\(alone.stderr)")
        let directory = try makeTemporaryDirectory("cowatch-syncplay-secret-flags")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/syncplay"
        FileManager.default.createFile(atPath: path, contents: Data("pw".utf8), attributes: [.posixPermissions: 0o600])
        let bad = try await runBinary("cowatch-server", [
            "--listen", "127.0.0.1:0", "--no-tls", "--syncplay-listen", "127.0.0.1:0", "--syncplay-password-file", path,
            "--syncplay-secret-rooms", "movie night",
        ])
        #expect(bad.status == 2 && bad.stderr.contains("not a room name"), "\(bad.stderr)")
    }
}
