import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// `cowatch manage`: a daemon in a room of the real `syncplay-server` makes it managed, as
/// Syncplay's "Create managed room" does; a Cowatch room refuses it.
extension SyncplayDaemonTests {
    @Test("cowatch manage: the managed room and its password in the answer (never in the log), playback goes on there; a daemon joining it without the password is refused while the maker's pause counts; a reconnect goes back to it, in control")
    func manageFromCowatch() async throws {
        let server = try await SyncplayServerProcess.start(salt: "COWATCHTESTSALT")
        let film = try await TestMedia.file(.audioVideo)
        // At level notice: the log says the managed room's name (never its password).
        let room = try await DaemonRoom(names: ["alice"], media: film, room: "film", venue: .syncplay(port: server.port), arguments: ["--log-level", "notice"])
        defer { room.stopInBackground() }
        let alice = room.clients[0]
        try await alice.request(.play)
        #expect(try await eventually(timeout: 10) {
            let status = try await alice.status()
            return !status.paused && (status.position ?? 0) > 1
        })

        // Through the CLI, as a person would.
        let cli = try await runCowatch(["manage", "--socket", room.daemons[0].controlPath])
        #expect(cli.status == 0, "\(cli.stderr)")
        // Asked again (through the socket): the same room and password, made before.
        let reply = try ManagedRoomReply(json: try await alice.request(.manage, timeout: 20))
        #expect(!reply.created && reply.room.hasPrefix("+film:") && SyncplayManagedRoom.parse(reply.room)?.room == reply.room, "\(reply)")
        #expect(SyncplayManagedRoom.isPassword(reply.password))
        #expect(cli.stdout.contains("made the managed Syncplay room \(reply.room)") && cli.stdout.contains(reply.password), "\(cli.stdout)")
        #expect(reply.link == "syncplay://127.0.0.1:\(server.port)/\(reply.room)")
        let log = room.daemons[0].stderr
        #expect(log.contains(reply.room), "the room's name is said in the log:\n\(log)")
        #expect(!log.contains(reply.password), "the password never is")
        // The new room took alice's timeline: she plays on, not sent back to a new room's paused 0.
        let position = try #require(try await alice.status().position)
        #expect(try await alice.status().paused == false && position > 1, "\(position)")
        try await Task.sleep(for: .seconds(1.5))
        let later = try await alice.status()
        #expect(!later.paused && (later.position ?? 0) > position + 1, "\(later)\n\(room.daemons[0].stderr)")

        // bob joins the managed room by its link, without its password.
        try await room.add("bob", arguments: ["--join", reply.link], roomFlags: false)
        let bob = room.clients[1]
        #expect(try await eventually(timeout: 10) {
            try ParticipantsReply(json: try await bob.request(.getParticipants)).participants.contains { $0.name == "alice" && $0.role == "operator" }
        }, "alice is the room's controller")
        let refused = await room.failure(1, .pause)
        #expect(refused?.code == .notPermitted, "\(String(describing: refused))")
        #expect(try await eventually(timeout: 10) { try await bob.status().paused == false }, "bob follows alice, playing")
        try await alice.request(.pause)
        _ = try await room.expectNotices("pause", actor: "alice", timeout: 10, from: [1])
        #expect(try await eventually(timeout: 10) { try await bob.status().paused })

        // alice's link goes down and up again: back in the managed room, claiming it.
        try await alice.request(.leave)
        #expect(try await eventually(timeout: 10) {
            !(try ParticipantsReply(json: try await bob.request(.getParticipants)).participants.contains { $0.name == "alice" })
        }, "alice's link is down")
        try await alice.request(.join, timeout: 20)
        #expect(try await eventually(timeout: 15) {
            try ParticipantsReply(json: try await bob.request(.getParticipants)).participants.contains { $0.name == "alice" && $0.role == "operator" }
        }, "alice rejoined the managed room in control")
        try await alice.request(.play)
        _ = try await room.expectNotices("play", actor: "alice", timeout: 10, from: [1])
        #expect(try await eventually(timeout: 10) { try await bob.status().paused == false })
        #expect(!room.daemons[0].stderr.contains(reply.password))
        #expect(room.daemons.allSatisfy { $0.process.isRunning })
    }
}

@Suite("cowatch manage in a Cowatch room", .realProcesses)
struct ManageCowatchRoomTests {
    @Test("a Cowatch room is managed or not from its start: manage is refused unsupported, saying how")
    func refusedInCowatchRoom() async throws {
        let film = try await TestMedia.file(.audioVideo)
        let room = try await DaemonRoom(names: ["alice"], media: film)
        defer { room.stopInBackground() }
        let refused = await room.failure(0, .manage)
        #expect(refused?.code == .unsupported && refused?.message.contains("--managed") == true, "\(String(describing: refused))")
        let cli = try await runCowatch(["manage", "--socket", room.daemons[0].controlPath])
        #expect(cli.status != 0 && cli.stderr.contains("cowatch-server --managed"), "\(cli.stderr)")
    }
}
