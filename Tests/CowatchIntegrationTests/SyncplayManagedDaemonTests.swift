import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Issue 24, part 1, managed rooms: daemons in a Syncplay room made with a password, one of them
/// given the password (from a 0600 file), one not.
extension SyncplayDaemonTests {
    @Test("a managed Syncplay room: the daemon with the room's password controls it; the one without is refused at once, saying why, and follows")
    func managedRoom() async throws {
        let server = try await SyncplayServerProcess.start(salt: "COWATCHTESTSALT")
        let maker = try SyncplayTestPeer(port: server.port, .init(username: "maker", room: "film"))
        #expect(try await maker.pump(for: 15) { $0.machine.phase == .joined })
        try maker.manage(password: "AB-123-456")
        #expect(try await maker.pump(for: 10) { $0.managed != nil })
        let managed = try #require(maker.managed?.room)

        let directory = try makeTemporaryDirectory("cowatch-syncplay-managed")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let passwordFile = directory + "/room-password"
        #expect(FileManager.default.createFile(atPath: passwordFile, contents: Data("AB-123-456\n".utf8), attributes: [.posixPermissions: 0o600]))

        let film = try await TestMedia.file(.audioVideo)
        let room = try await DaemonRoom(media: film, room: managed, venue: .syncplay(port: server.port))
        defer { room.stopInBackground() }
        try await room.add("alice", arguments: ["--syncplay-room-password-file", passwordFile])
        try await room.add("bob")
        let (alice, bob) = (room.clients[0], room.clients[1])
        _ = try await maker.pump(for: 1)

        // bob has no password: his play is refused at once, with why; nothing moved.
        #expect(try await eventually(timeout: 10) {
            try ParticipantsReply(json: try await bob.request(.getParticipants)).participants.contains { $0.name == "alice" && $0.role == "operator" }
        }, "alice is listed as the room's controller")
        let refused = await room.failure(1, .play)
        #expect(refused?.code == .notPermitted, "\(String(describing: refused))")
        #expect(refused?.message.contains("managed") == true)
        #expect(try await bob.status().paused)

        // alice controls it: her play reaches bob, and so does her pause.
        try await alice.request(.play)
        _ = try await room.expectNotices("play", actor: "alice", timeout: 10, from: [1])
        #expect(try await eventually(timeout: 10) { try await bob.status().paused == false })
        try await alice.request(.pause)
        _ = try await room.expectNotices("pause", actor: "alice", timeout: 10, from: [1])
        #expect(try await eventually(timeout: 10) { try await bob.status().paused })
        #expect(room.daemons.allSatisfy { $0.process.isRunning })
    }
}
