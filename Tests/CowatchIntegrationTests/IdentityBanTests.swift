import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// A household (or a dormitory) behind one address, with real processes, all on 127.0.0.1: a
/// kick keeps out the one removed (its session and its name), never the address; `end` lets
/// everyone start again at once; wrong secrets lock out only the name that typed them; and a
/// daemon the server keeps refusing hears why, not that the room did not answer.
@Suite("Bans hold identities, not a shared address", .serialized, .realProcesses)
struct IdentityBanTests {
    static let secret = "correct horse battery staple"

    /// alice hosts (owner), bob and cat join; all on one address.
    func hostedRoom(_ room: String) async throws -> DaemonRoom {
        let viewers = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: room, venue: .hostedByFirst)
        for name in ["alice", "bob", "cat"] { try await viewers.add(name) }
        try await viewers.waitForParticipants(3)
        return viewers
    }

    /// Kicks `name` (daemon `index`) as alice and waits until it is out.
    func kick(_ viewers: DaemonRoom, _ name: String, index: Int) async throws {
        let kick = try await runCowatch(["kick", name, "--socket", viewers.daemons[0].controlPath])
        #expect(kick.status == 0 && kick.stdout.contains("removed \(name)"), "\(kick)")
        let session = try await viewers.listeners[index].waitForEvent(named: "session", timeout: 5) { $0.fields["state"] == "invalidated" }
        #expect(session?.fields["reason"] == "removed" && session?.fields["code"] == "kicked", "\(String(describing: session))")
    }

    @Test("a kick removes bob only: cat on his address stays, dan from it joins at once; only bob hears he was removed")
    func kickHoldsTheIdentity() async throws {
        let viewers = try await hostedRoom("household")
        defer { viewers.stopInBackground() }
        try await kick(viewers, "bob", index: 1)
        #expect(viewers.daemons[1].stderr.contains("alice removed you from room household"), "\(viewers.daemons[1].stderr)")
        try await viewers.waitJoined(0, participants: 2)
        #expect(try await viewers.roomStatus(2)["session"] == "joined")

        // dan, new, from the same address: in at once.
        try await viewers.add("dan")
        try await viewers.waitJoined(3, participants: 3)
        for index in [0, 2, 3] {
            #expect(!viewers.daemons[index].stderr.contains("removed you"), "\(viewers.daemons[index].name): \(viewers.daemons[index].stderr)")
        }

        // bob, asking to come back at once: refused, told it was his removal and for how long.
        let again = await viewers.failure(1, .join)
        #expect(again?.code == .kicked, "\(String(describing: again))")
        #expect(again?.message.contains("you were removed from room household; try again in") == true, "\(String(describing: again))")
        #expect(viewers.daemons[1].process.isRunning)

        // Someone else under bob's name (no session of bob's): the name stays out, said as such.
        let namesake = try await DaemonProcess(
            name: "bob", media: try await TestMedia.file(.audioVideo),
            extraArguments: ["--join", viewers.address, "--room", "household", "--no-osd"])
        defer { namesake.terminateInBackground() }
        try await Self.keptOut(namesake)
        #expect(namesake.stderr.contains("the name bob was removed from room household"), "\(namesake.stderr)")
        #expect(!namesake.stderr.contains("you were removed"), "\(namesake.stderr)")
        try await viewers.waitJoined(0, participants: 3)
    }

    @Test("after end the owner starts the evening again at once, and a kick from before holds nobody back")
    func endForgetsKicks() async throws {
        let viewers = try await hostedRoom("evening")
        defer { viewers.stopInBackground() }
        try await kick(viewers, "bob", index: 1)
        try await viewers.waitJoined(0, participants: 2)

        try await viewers.clients[0].request(.end)
        let ended = try await viewers.listeners[2].waitForEvent(named: "session", timeout: 5) { $0.fields["reason"] == "ended-by" }
        #expect(ended?.fields["by"] == "alice")
        _ = try await viewers.listeners[0].waitForEvent(named: "session", timeout: 5) { $0.fields["reason"] == "ended-by" }

        // Within the kick's 300 s: the owner is back, as the owner, and so are the others.
        let started = monotonicNow()
        try await viewers.clients[0].request(.join, timeout: 15)
        let status0 = try await viewers.roomStatus(0)
        #expect(status0["session"] == "joined" && status0["role"] == "owner")
        for index in [2, 1] { try await viewers.clients[index].request(.join, timeout: 15) }
        try await viewers.waitForParticipants(3)
        #expect(monotonicNow() - started < 60)
    }

    @Test("five wrong secrets lock out eve alone, and say so; fay on the same address joins with the right one")
    func wrongSecretsLockOutOnlyTheirName() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let viewers = try await DaemonRoom(media: media, room: "vault")
        defer { viewers.stopInBackground() }
        let directory = DaemonProcess.makeDirectory()
        let secretFile = try writeSecretFile(Self.secret, in: directory)
        let wrongFile = try writeSecretFile("not the right one", in: directory, name: "wrong.secret")
        try await viewers.add("alice", arguments: ["--room-secret-file", secretFile])
        let room = ["--join", viewers.address, "--room", "vault", "--no-osd", "--server-key", viewers.server.fingerprint ?? ""]

        // Four wrong proofs as eve, from 127.0.0.1, each refused a moment later.
        for attempt in 1...4 {
            let raw = try RawRoomClient(tlsPort: viewers.port)
            defer { raw.close() }
            await raw.send(.rawHello(room: "vault", name: "eve"))
            #expect(await raw.read(type: "challenge") != nil, "attempt \(attempt)")
            await raw.send(.auth(.init(proof: String(repeating: "0", count: 64))))
            let refusal = await raw.read(type: "error")
            #expect(refusal?["code"]?.stringValue == "auth-failed", "attempt \(attempt): \(String(describing: refusal))")
        }
        // The fifth, eve's own daemon: the refusal says what now holds.
        let eve = try await DaemonProcess(name: "eve", media: media, extraArguments: room + ["--room-secret-file", wrongFile])
        try await Self.keptOut(eve)
        await eve.terminate()
        #expect(eve.stderr.contains("wrong secret for room vault"), "\(eve.stderr)")
        #expect(eve.stderr.contains("too many wrong secrets for eve in room vault from this address"), "\(eve.stderr)")
        // Once more as eve: refused at once and told why (never "did not answer in time").
        let again = try await DaemonProcess(name: "eve", media: media, extraArguments: room + ["--room-secret-file", wrongFile])
        defer { again.terminateInBackground() }
        try await Self.keptOut(again)
        #expect(again.stderr.contains("too many wrong secrets for eve in room vault from this address; try again in"), "\(again.stderr)")
        #expect(!again.stderr.contains("did not answer"), "\(again.stderr)")

        // fay, same address, right secret: in.
        try await viewers.add("fay", arguments: ["--room-secret-file", secretFile])
        try await viewers.waitJoined(0, participants: 2)
    }

    @Test("a daemon the server keeps refusing for now (server-busy) hears the server's words from join, not a timeout")
    func busyRefusalIsSaid() async throws {
        let viewers = try await DaemonRoom(
            media: try await TestMedia.file(.audioVideo), room: "small", venue: .server(arguments: ["--max-connections-per-address", "1"]))
        defer { viewers.stopInBackground() }
        try await viewers.add("alice")
        try await viewers.add("bob", waitJoined: false)
        let refusal = await viewers.failure(1, .join, timeout: 15)
        #expect(refusal?.code == .serverBusy, "\(String(describing: refusal))")
        #expect(refusal?.message.contains("too many connections from 127.0.0.1") == true, "\(String(describing: refusal))")
        #expect(refusal?.message.contains("did not answer") == false)
        #expect(try await viewers.roomStatus(1)["session"] == "waiting")  // still trying
    }
}

extension IdentityBanTests {
    /// A refused daemon stays up, out of the room with its player open (issue 22): waits until its
    /// session says it was refused.
    static func keptOut(_ daemon: DaemonProcess) async throws {
        let status = try await daemon.client().waitForStatus(timeout: 30) { $0.room?.session == "invalidated" }
        #expect(status.room?.reason != nil && daemon.process.isRunning, "\(daemon.stderr)")
    }
}
