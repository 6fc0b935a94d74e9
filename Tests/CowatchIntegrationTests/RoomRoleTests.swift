import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Roles with real processes: `cowatchd --host --managed` makes a managed room owned by the host; members
/// watch, the owner names operators (`op`), owners and operators remove people (`kick`).
@Suite("Managed rooms and roles", .serialized, .realProcesses)
struct RoomRoleTests {
    /// alice hosts (owner), bob and cat join as members; everyone plays.
    func hostedRoom(_ room: String) async throws -> DaemonRoom {
        let viewers = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: room, venue: .hostedByFirst)
        // Hosted rooms let everyone control playback unless the host says --managed.
        for name in ["alice", "bob", "cat"] { try await viewers.add(name, arguments: name == "alice" ? ["--managed"] : []) }
        try await viewers.waitJoined(0, participants: 3)
        try await viewers.clients[0].request(.play)
        for client in viewers.clients { _ = try await client.waitForStatus(timeout: 5) { !$0.paused && ($0.position ?? 0) > 0.3 } }
        return viewers
    }

    @Test("a member's pause is refused (not-permitted) and the group plays on; once op'd, the same pause works")
    func managedRoom() async throws {
        let viewers = try await hostedRoom("managed")
        let status0 = try await viewers.roomStatus(0)
        #expect(status0["role"] == "owner" && status0["managed"] == true)
        let status1 = try await viewers.roomStatus(1)
        #expect(status1["role"] == "member" && status1["managed"] == true)
        try await viewers.waitRole(1, of: "alice", is: "owner")

        let refused = await viewers.failure(1, .pause)
        #expect(refused?.code == .notPermitted, "\(String(describing: refused))")
        #expect(refused?.message.contains("managed room") == true)
        let event = try await viewers.listeners[1].waitForEvent(named: "error", timeout: 2) { $0.fields["code"] == "not-permitted" }
        #expect(event != nil)
        // Nobody paused: not the others, and bob's own player follows the group again.
        await pause(0.7)
        for client in viewers.clients { #expect(try await client.status().paused == false) }
        let notice = try await viewers.listeners[0].waitForEvent(named: "notice", timeout: 0.5) { $0.fields["action"] == "pause" }
        #expect(notice == nil)
        // The CLI says so in one line and exits 1.
        let cli = try await runCowatch(["seek", "+10", "--socket", viewers.daemons[1].controlPath])
        #expect(cli.status == 1 && cli.stderr.contains("managed room"), "\(cli)")

        // Only the owner names operators.
        #expect(await viewers.failure(2, .setRole(name: "cat", role: .operator))?.code == .notPermitted)
        try await viewers.clients[0].request(.setRole(name: "bob", role: .operator))
        let op = try await viewers.listeners[2].waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "op" }
        #expect(op?.fields["text"] == "alice made bob an operator")
        #expect(try await viewers.roomStatus(1)["role"] == "operator")
        try await viewers.waitRole(2, of: "bob", is: "operator")

        try await viewers.clients[1].request(.pause)
        for client in viewers.clients { _ = try await client.waitForStatus(timeout: 5) { $0.paused } }
        _ = try await viewers.listeners[2].waitForEvent(named: "notice", timeout: 5) {
            $0.fields["action"] == "pause" && $0.fields["participant"] == "bob"
        }
        // deop: a member again, refused again.
        let deop = try await runCowatch(["deop", "bob", "--socket", viewers.daemons[0].controlPath])
        #expect(deop.status == 0 && deop.stdout.contains("bob is now a member"), "\(deop)")
        #expect(try await viewers.roomStatus(1)["role"] == "member")
        #expect(await viewers.failure(1, .play)?.code == .notPermitted)
    }

    @Test("kick removes a member, who cannot come back at once (kicked) and keeps running; end needs the owner")
    func kickAndEnd() async throws {
        let viewers = try await hostedRoom("kicks")
        // A member may neither remove someone nor end the room: refused at once.
        #expect(await viewers.failure(1, .kick(name: "cat"))?.code == .notPermitted)
        let started = monotonicNow()
        #expect(await viewers.failure(1, .end)?.code == .notPermitted)
        #expect(monotonicNow() - started < 2, "end waited for the session instead of failing at once")
        #expect(try await viewers.roomStatus(1)["session"] == "joined")
        #expect(await viewers.failure(0, .kick(name: "nobody"))?.code == .invalidArgument)

        let kick = try await runCowatch(["kick", "cat", "--socket", viewers.daemons[0].controlPath])
        #expect(kick.status == 0 && kick.stdout.contains("removed cat"), "\(kick)")
        let session = try await viewers.listeners[2].waitForEvent(named: "session", timeout: 5) { $0.fields["state"] == "invalidated" }
        #expect(session?.fields["reason"] == "removed" && session?.fields["code"] == "kicked", "\(String(describing: session))")
        let notice = try await viewers.listeners[1].waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "kick" }
        #expect(notice?.fields["text"] == "alice removed cat from the room")
        #expect(viewers.daemons[2].stderr.contains("alice removed you from room kicks"), "\(viewers.daemons[2].stderr)")
        try await viewers.waitJoined(0, participants: 2)

        // cat's daemon keeps running, out of the room; joining again is refused for now.
        let again = await viewers.failure(2, .join)
        #expect(again?.code == .kicked, "\(String(describing: again))")
        #expect(viewers.daemons[2].process.isRunning)
        let status2 = try await viewers.roomStatus(2)
        #expect(status2["session"] == "invalidated" && status2["reason"] == "removed")
        try await viewers.clients[2].request(.pause)  // its player is its own now
        #expect(try await viewers.clients[2].status().paused)

        // The owner ends the room, at once.
        try await viewers.clients[0].request(.end)
        let ended = try await viewers.listeners[1].waitForEvent(named: "session", timeout: 5) { $0.fields["reason"] == "ended-by" }
        #expect(ended?.fields["by"] == "alice")
    }
}
