import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Issue 24: Cowatch's roles as Syncplay's controllers, through a real `cowatch-server --managed
/// --syncplay-listen`. The owner is listed as a controller; a client's claim of control with a
/// password is refused, saying how control is given here; made an operator by the owner, the
/// client hears `controllerAuth`'s success and its pause counts.
@Suite("Syncplay: roles as controllers for a Syncplay client of a managed cowatch-server room", .serialized, .realProcesses)
struct SyncplayGatewayRolesTests {
    @Test("in a managed room: the owner listed as controller; a claim with a password refused with how control is given; made an operator, the client's pause counts")
    func operatorPauses() async throws {
        let room = try await DaemonRoom(
            names: ["alice"], media: try await TestMedia.file(.audioVideo), room: "club",
            venue: .server(arguments: ["--managed", "--syncplay-listen", "127.0.0.1:0"]))
        defer { room.stopInBackground() }
        let alice = room.clients[0]
        let port = try #require(room.server.syncplayPort)
        let carol = try SyncplayTestPeer(port: port, .init(username: "carol", room: "club"))
        #expect(try await carol.pump(for: 15) { $0.machine.phase == .joined && $0.machine.timeline != nil }, "\(String(describing: carol.failure))")
        _ = try await room.expectNotices("join", actor: "carol", timeout: 15)
        #expect(try await carol.pump(for: 5) { peer in peer.users.contains { $0.username == "alice" && $0.controller } }, "\(carol.users)")
        #expect(carol.users.first { $0.username == "carol" }?.controller == false)

        // Her claim of control with a password: refused, and told how control is given here.
        try carol.sendRaw([.set([.controllerAuth(SyncplayControllerAuth(room: "club", password: "AB-123-456"))])])
        #expect(try await carol.pump(for: 10) { $0.notices.contains(.controller("carol", false)) }, "\(carol.notices)")
        #expect(try await carol.pump(for: 5) { peer in peer.chats.contains { $0.from == "Cowatch" && $0.message.contains("cowatch op carol") } }, "\(carol.chats)")

        // A member's pause is not the room's: alice plays on.
        try await alice.request(.play)
        #expect(try await carol.pump(for: 10) { $0.machine.timeline?.paused == false })
        try await carol.pump(for: 1)
        try carol.change(paused: true, position: carol.player.position ?? 0)
        #expect(try await carol.pump(for: 10) { peer in peer.chats.contains { $0.from == "Cowatch" && $0.message.contains("may pause") } }, "\(carol.chats)")
        #expect(try await alice.status().paused == false)

        // alice makes her an operator: she hears it as Syncplay says it, and her pause counts.
        _ = try await alice.request(.setRole(name: "carol", role: .operator))
        #expect(try await carol.pump(for: 10) { $0.notices.contains(.controller("carol", true)) }, "\(carol.notices)")
        try await carol.pump(for: 1.5)
        try carol.change(paused: true, position: carol.player.position ?? 0)
        _ = try await room.expectNotices("pause", actor: "carol", timeout: 15)
        #expect(try await eventually(timeout: 10) { try await alice.status().paused })
        #expect(carol.failure == nil && room.daemons[0].process.isRunning)
    }
}
