import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Issue 24: a Syncplay client whose connection to `cowatch-server --syncplay-listen` drops comes
/// back as itself. The gateway keeps the session token the room gave it, by its address, name
/// and room, and gives it back with the reconnect's room hello; without it the room held the name
/// against its own owner ("the name carol belongs to someone who was in room …").
@Suite("Syncplay: a Syncplay client reconnects to cowatch-server under its own name", .serialized, .realProcesses)
struct SyncplayGatewayReconnectTests {
    @Test("dropped while the room plays, a Syncplay client reconnects from the same address and is welcomed under the same name; another address cannot take it")
    func reconnect() async throws {
        let room = try await DaemonRoom(
            names: ["alice"], media: try await TestMedia.file(.audioVideo), room: "blip",
            venue: .server(arguments: ["--syncplay-listen", "127.0.0.1:0"]))
        defer { room.stopInBackground() }
        let alice = room.clients[0]
        let port = try #require(room.server.syncplayPort)
        func names() async throws -> [String] { try ParticipantsReply(json: try await alice.request(.getParticipants)).participants.map(\.name) }

        var carol: SyncplayTestPeer? = try SyncplayTestPeer(port: port, .init(username: "carol", room: "blip"))
        #expect(try await carol!.pump(for: 15) { $0.machine.phase == .joined && $0.machine.timeline != nil }, "\(String(describing: carol!.failure))")
        _ = try await room.expectNotices("join", actor: "carol", timeout: 15)
        try await alice.request(.play)
        #expect(try await carol!.pump(for: 10) { $0.machine.timeline?.paused == false }, "carol hears the room play")

        // Her connection drops: a reset, no goodbye.
        carol!.drop()
        carol = nil
        _ = try await room.expectNotices("leave", actor: "carol", timeout: 20)

        // Someone else under her name, from another address, cannot take it.
        let mallory = try SyncplayTestPeer(port: port, from: "127.0.0.2", .init(username: "carol", room: "blip"))
        try await mallory.pump(for: 15) { $0.failure != nil || $0.machine.phase == .joined }
        #expect(mallory.machine.phase != .joined && mallory.failure != nil, "\(String(describing: mallory.failure))")
        #expect(try await names() == ["alice"], "nobody took carol's name")

        // carol again, from her address: welcomed as carol (not refused, not renamed), in the playing room.
        let back = try SyncplayTestPeer(port: port, .init(username: "carol", room: "blip"))
        #expect(try await back.pump(for: 15) { $0.machine.phase == .joined && $0.machine.timeline != nil }, "\(String(describing: back.failure))")
        #expect(back.machine.username == "carol")
        _ = try await room.expectNotices("join", actor: "carol", timeout: 15)
        #expect(try await eventually(timeout: 5) { try await names().sorted() == ["alice", "carol"] })
        #expect(back.machine.timeline?.paused == false, "she comes back into the playing room")
        #expect(back.failure == nil && room.daemons[0].process.isRunning)
    }
}
