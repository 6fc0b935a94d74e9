import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 21 items 2 and 3 with real processes: a person who restarts their daemon comes back as
/// themself (name and role), a host that changes its secret keeps its room, and a refusal
/// mid-film never closes a player.
@Suite("Restarts: nobody locked out", .serialized, .realProcesses)
struct RestartResumeTests {
    /// The same daemon again: its directory (so its state: kept tokens, known hosts) and flags.
    private func restart(_ old: DaemonProcess, media: String, arguments: [String]) async throws -> DaemonProcess {
        try await DaemonProcess(name: old.name, media: media, extraArguments: arguments, directory: old.directory)
    }

    private func role(_ daemon: DaemonProcess, timeout: Double = 15) async throws -> String? {
        let client = try daemon.client()
        let status = try await client.waitForStatus(timeout: timeout) { $0.room?.session == "joined" }
        return status.room?.role
    }

    @Test("the owner and an operator, killed and started again while a friend stays, get their names and roles back; forget drops them")
    func ownerAndOperatorResume() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let room = try await DaemonRoom(media: media, room: "club")
        // By address alone (an open room: the server's key is trusted on first use).
        let flags = ["--join", room.address, "--room", "club", "--no-osd"]
        try await room.add("alice", arguments: flags, roomFlags: false)
        try await room.add("bob", arguments: flags, roomFlags: false)
        try await room.add("cat", arguments: flags, roomFlags: false)
        try await room.waitJoined(0, participants: 3)
        try await room.clients[0].request(.setRole(name: "cat", role: .operator))
        try await room.waitRole(1, of: "cat", is: "operator")

        for index in [0, 2] {
            let old = room.daemons[index]
            kill(old.pid, SIGKILL)
            _ = await old.waitForExit(timeout: 10)
            // The first trust of the server's key was said once, with the key; not again after.
            let firstTrust = "first connection to 127.0.0.1:\(room.port): its key sha256:"
            #expect(old.stderr.components(separatedBy: firstTrust).count == 2, "\(old.stderr)")
            let again = try await restart(old, media: media, arguments: flags)
            defer { again.terminateInBackground() }
            let expected = index == 0 ? "owner" : "operator"
            #expect(try await role(again) == expected, "\(old.name): \(again.stderr)")
            #expect(!again.stderr.contains("first connection"), "\(again.stderr)")
            try await room.waitRole(1, of: old.name, is: expected)
            #expect(await again.terminate() == 0)
        }

        // `cowatch forget` drops alice's token: started again, she is a newcomer to her own
        // name, which the owner's role still holds; refused, said plainly with how to get in,
        // and the daemon stays up (issue 22 item 1).
        let alice = room.daemons[0]
        let forgot = try await runBinary("cowatch", ["forget", "club", "--name", "alice"], environment: ["XDG_STATE_HOME": alice.directory + "/state"])
        #expect(forgot.status == 0 && forgot.stdout.contains("forgot 1 session token"), "\(forgot)")
        let stranger = try await DaemonProcess(name: "alice", media: media, extraArguments: flags, directory: alice.directory)
        defer { stranger.terminateInBackground() }
        let out = try await stranger.client().waitForStatus(timeout: 20) { $0.room?.reason == "name-taken" }
        #expect(out.room?.session == "invalidated")
        #expect(stranger.stderr.contains("name-taken") && stranger.stderr.contains("--name OTHER"), "\(stranger.stderr)")
        #expect(stranger.process.isRunning)
    }

    @Test("a host restarted with a new secret keeps its room (and says so); a friend with the old invite is refused mid-film and keeps playing")
    func hostChangesSecret() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let directory = DaemonProcess.makeDirectory()
        let oldSecret = try writeSecretFile("orange juice 42", in: directory, name: "old.secret")
        let newSecret = try writeSecretFile("grapefruit 1977", in: directory, name: "new.secret")
        let room = try await DaemonRoom(media: media, room: "movie", venue: .hostedByFirst, listeners: false)
        try await room.add("hana", arguments: ["--room-secret-file", oldSecret], waitJoined: false)
        try await room.waitForParticipants(1)
        let invite = try #require(try await room.clients[0].request(.getInvite(host: nil))["invite"]?.stringValue)
        try await room.add("finn", arguments: ["--join", invite], roomFlags: false, waitJoined: false)
        try await room.waitForParticipants(2)
        try await room.clients[0].request(.play)
        _ = try await room.clients[1].waitForStatus(timeout: 5) { !$0.paused }

        let host = room.daemons[0]
        #expect(await host.terminate() == 0)
        let again = try await restart(
            host, media: media,
            arguments: ["--host", room.address, "--room", "movie", "--no-osd", "--room-secret-file", newSecret])
        defer { again.terminateInBackground() }
        #expect(try await role(again) == "owner", "\(again.stderr)")
        #expect(again.stderr.contains("room movie has a new secret: invites with the old one no longer work"), "\(again.stderr)")

        // finn's daemon reconnects with the old secret: refused, told why, still running, player open.
        let finn = room.clients[1]
        let out = try await finn.waitForStatus(timeout: 30) { $0.room?.reason == "auth-failed" }
        #expect(out.room?.session == "invalidated", "\(String(describing: out.room))")
        #expect(room.daemons[1].process.isRunning)
        #expect(room.daemons[1].stderr.contains("ask for the new invite"), "\(room.daemons[1].stderr)")
        #expect(try await finn.status().duration != nil)
    }

    @Test("a host restarted mid-film carries on where the group is, playing, not from 0:00 paused")
    func hostRestartKeepsPlace() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let room = try await DaemonRoom(media: media, room: "series", venue: .hostedByFirst)
        try await room.add("alice")
        try await room.add("bob")
        try await room.waitJoined(0, participants: 2)
        try await room.clients[0].request(.play)
        _ = try await room.clients[1].waitForStatus(timeout: 10) { !$0.paused && ($0.position ?? 0) > 4 }

        let host = room.daemons[0]
        #expect(await host.terminate() == 0)
        let again = try await restart(host, media: media, arguments: ["--host", room.address, "--room", "series", "--no-osd"])
        defer { again.terminateInBackground() }
        #expect(try await role(again) == "owner", "\(again.stderr)")
        let alice = try await again.client().waitForStatus(timeout: 10) { !$0.paused && ($0.position ?? 0) > 4 }
        let bob = try await room.clients[1].status()
        #expect(!bob.paused && (bob.position ?? 0) > 4, "bob: \(bob)")
        #expect(abs((alice.position ?? 0) - (bob.position ?? 0)) < 1.5, "alice \(String(describing: alice.position)), bob \(String(describing: bob.position))")
    }
}

