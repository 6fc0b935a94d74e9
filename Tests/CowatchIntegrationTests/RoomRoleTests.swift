import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Roles with real processes: `cowatchd --host --managed` makes a managed room owned by the host; members
/// watch, the owner names operators (`op`), owners and operators remove people (`kick`).
@Suite("Managed rooms and roles", .serialized)
struct RoomRoleTests {
    /// alice hosts (owner), bob and cat join as members; everyone plays.
    func hostedRoom(_ room: String) throws -> DaemonRoom {
        let viewers = try DaemonRoom(media: try TestMedia.audioVideo(), room: room, venue: .hostedByFirst)
        // Hosted rooms let everyone control playback unless the host says --managed.
        for name in ["alice", "bob", "cat"] { try viewers.add(name, arguments: name == "alice" ? ["--managed"] : []) }
        try viewers.waitJoined(0, participants: 3)
        try viewers.clients[0].request(.play)
        for client in viewers.clients { _ = try client.waitForStatus(timeout: 5) { !$0.paused && ($0.position ?? 0) > 0.3 } }
        return viewers
    }

    @Test("a member's pause is refused (not-permitted) and the group plays on; once op'd, the same pause works")
    func managedRoom() throws {
        let viewers = try hostedRoom("managed")
        #expect(try viewers.roomStatus(0)["role"] == "owner" && viewers.roomStatus(0)["managed"] == true)
        #expect(try viewers.roomStatus(1)["role"] == "member" && viewers.roomStatus(1)["managed"] == true)
        try viewers.waitRole(1, of: "alice", is: "owner")

        let refused = viewers.failure(1, .pause)
        #expect(refused?.code == .notPermitted, "\(String(describing: refused))")
        #expect(refused?.message.contains("managed room") == true)
        let event = try viewers.listeners[1].waitForEvent(named: "error", timeout: 2) { $0.fields["code"] == "not-permitted" }
        #expect(event != nil)
        // Nobody paused: not the others, and bob's own player follows the group again.
        sleepSeconds(0.7)
        for client in viewers.clients { #expect(try client.status().paused == false) }
        let notice = try viewers.listeners[0].waitForEvent(named: "notice", timeout: 0.5) { $0.fields["action"] == "pause" }
        #expect(notice == nil)
        // The CLI says so in one line and exits 1.
        let cli = try runCowatch(["seek", "+10", "--socket", viewers.daemons[1].controlPath])
        #expect(cli.status == 1 && cli.stderr.contains("managed room"), "\(cli)")

        // Only the owner names operators.
        #expect(viewers.failure(2, .setRole(name: "cat", role: .operator))?.code == .notPermitted)
        try viewers.clients[0].request(.setRole(name: "bob", role: .operator))
        let op = try viewers.listeners[2].waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "op" }
        #expect(op?.fields["text"] == "alice made bob an operator")
        #expect(try viewers.roomStatus(1)["role"] == "operator")
        try viewers.waitRole(2, of: "bob", is: "operator")

        try viewers.clients[1].request(.pause)
        for client in viewers.clients { _ = try client.waitForStatus(timeout: 5) { $0.paused } }
        _ = try viewers.listeners[2].waitForEvent(named: "notice", timeout: 5) {
            $0.fields["action"] == "pause" && $0.fields["participant"] == "bob"
        }
        // deop: a member again, refused again.
        let deop = try runCowatch(["deop", "bob", "--socket", viewers.daemons[0].controlPath])
        #expect(deop.status == 0 && deop.stdout.contains("bob is now a member"), "\(deop)")
        #expect(try viewers.roomStatus(1)["role"] == "member")
        #expect(viewers.failure(1, .play)?.code == .notPermitted)
    }

    @Test("kick removes a member, who cannot come back at once (kicked) and keeps running; end needs the owner")
    func kickAndEnd() throws {
        let viewers = try hostedRoom("kicks")
        // A member may neither remove someone nor end the room: refused at once.
        #expect(viewers.failure(1, .kick(name: "cat"))?.code == .notPermitted)
        let started = monotonicNow()
        #expect(viewers.failure(1, .end)?.code == .notPermitted)
        #expect(monotonicNow() - started < 2, "end waited for the session instead of failing at once")
        #expect(try viewers.roomStatus(1)["session"] == "joined")
        #expect(viewers.failure(0, .kick(name: "nobody"))?.code == .invalidArgument)

        let kick = try runCowatch(["kick", "cat", "--socket", viewers.daemons[0].controlPath])
        #expect(kick.status == 0 && kick.stdout.contains("removed cat"), "\(kick)")
        let session = try viewers.listeners[2].waitForEvent(named: "session", timeout: 5) { $0.fields["state"] == "invalidated" }
        #expect(session?.fields["reason"] == "removed" && session?.fields["code"] == "kicked", "\(String(describing: session))")
        let notice = try viewers.listeners[1].waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "kick" }
        #expect(notice?.fields["text"] == "alice removed cat from the room")
        #expect(viewers.daemons[2].stderr.contains("alice removed you from room kicks"), "\(viewers.daemons[2].stderr)")
        try viewers.waitJoined(0, participants: 2)

        // cat's daemon keeps running, out of the room; joining again is refused for now.
        let again = viewers.failure(2, .join)
        #expect(again?.code == .kicked, "\(String(describing: again))")
        #expect(viewers.daemons[2].process.isRunning)
        #expect(try viewers.roomStatus(2)["session"] == "invalidated" && viewers.roomStatus(2)["reason"] == "removed")
        try viewers.clients[2].request(.pause)  // its player is its own now
        #expect(try viewers.clients[2].status().paused)

        // The owner ends the room, at once.
        try viewers.clients[0].request(.end)
        let ended = try viewers.listeners[1].waitForEvent(named: "session", timeout: 5) { $0.fields["reason"] == "ended-by" }
        #expect(ended?.fields["by"] == "alice")
    }
}
