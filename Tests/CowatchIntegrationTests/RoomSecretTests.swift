import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// Room secrets with real processes: the creator's secret guards the room; the right secret
/// joins, a wrong or missing one is refused (`auth-failed`) and that daemon stays up, out of the
/// room, with one line saying it may be someone else's room (issue 22 item 2);
/// the secret never shows in status, events or logs; a secret file others may read is refused.
@Suite("Room secrets", .serialized, .realProcesses)
struct RoomSecretTests {
    static let secret = "correct horse battery staple"

    @Test("the right secret joins; a wrong or missing one gets auth-failed: up, out of the room, one line naming it and what to do")
    func guardedRoom() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let viewers = try await DaemonRoom(media: media, room: "vault")
        let room = ["--join", viewers.server.address, "--room", "vault", "--server-key", viewers.server.fingerprint ?? ""]
        let directory = DaemonProcess.makeDirectory()
        let secretFile = try writeSecretFile(Self.secret + "\n", in: directory)
        // The creator gives the room its secret (from a file, with a trailing newline).
        try await viewers.add("ann", arguments: ["--room-secret-file", secretFile, "--log-level", "debug"])
        // The same secret from the environment (systemd's EnvironmentFile=) joins.
        try await viewers.add("ben", environment: ["COWATCH_ROOM_SECRET": Self.secret])
        try await viewers.waitJoined(0, participants: 2)

        let wrongFile = try writeSecretFile("not the right one", in: directory, name: "wrong.secret")
        let wrong = try await DaemonProcess(
            name: "eve", media: media, extraArguments: room + ["--room-secret-file", wrongFile])
        let none = try await DaemonProcess(name: "mal", media: media, extraArguments: room)
        defer {
            wrong.terminateInBackground()
            none.terminateInBackground()
        }
        for (daemon, words) in [(wrong, "wrong secret"), (none, "needs its secret")] {
            // Refused, still up with its player: out of the room, and `join` may try again.
            let out = try await daemon.client().waitForStatus(timeout: 30) { $0.room?.reason == "auth-failed" }
            #expect(out.room?.session == "invalidated")
            #expect(out.duration != nil, "\(daemon.name)'s player has its film")
            // Besides the one line of the refusal: the first trust of the server's key, said once.
            let lines = stderrLines(daemon).filter { !$0.contains("first connection to") }
            #expect(lines.count == 1, "\(daemon.name): \(lines)")
            #expect(lines.first?.contains("auth-failed") == true && lines.first?.contains(words) == true, "\(lines)")
            #expect(lines.first?.contains("someone else's room") == true, "\(lines)")
            await #expect(throws: CowatchError(.authFailed, "")) { try await daemon.client().request(.join) }
            #expect(daemon.process.isRunning)
        }
        #expect(try await viewers.clients[0].request(.getParticipants).arrayValue?.count == 2)

        // The secret shows nowhere: not in status, participants, events, nor the creator's debug log.
        try await viewers.clients[1].request(.pause)
        _ = try await viewers.listeners[0].waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "pause" }
        var seen = try await viewers.clients.asyncMap { try await $0.request(.getStatus).jsonString + $0.request(.getParticipants).jsonString }
        seen += viewers.listeners.flatMap { $0.pendingEvents.map { $0.json.jsonString } }
        seen += viewers.daemons.map(\.stderr)
        #expect(seen.allSatisfy { !$0.contains("horse") }, "the secret leaked")
        #expect(viewers.daemons[0].stderr.contains("joined room"), "the creator's debug log was read")
    }

    @Test("a secret is proved only to a pinned key: by address alone the daemon stops before connecting; --trust-first-key joins")
    func unpinnedKey() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let viewers = try await DaemonRoom(media: media, room: "vault")
        defer { viewers.stopInBackground() }
        let directory = DaemonProcess.makeDirectory()
        let secretFile = try writeSecretFile(Self.secret, in: directory)
        try await viewers.add("ann", arguments: ["--room-secret-file", secretFile])
        let unpinned = ["--join", viewers.server.address, "--room", "vault", "--no-osd", "--room-secret-file", secretFile]
        do {
            let dan = try await DaemonProcess(name: "dan", media: media, extraArguments: unpinned)
            dan.terminateInBackground()
            Issue.record("dan started without a pinned key: \(dan.stderr)")
        } catch {
            #expect("\(error)".contains("not proving room vault's secret to \(viewers.server.address)"), "\(error)")
            #expect("\(error)".contains("--trust-first-key"), "\(error)")
        }
        // Having compared the key, the person says so: it joins, and the key is pinned from then on.
        try await viewers.add("dan", arguments: unpinned + ["--trust-first-key"], roomFlags: false)
        try await viewers.waitJoined(0, participants: 2)
        #expect(viewers.daemons[1].stderr.contains("first connection to \(viewers.server.address): its key"))
    }

    @Test("a secret file others may read is refused with unsafe-path and the fix; exit 2")
    func unsafeSecretFile() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let directory = DaemonProcess.makeDirectory()
        let open = try writeSecretFile(Self.secret, mode: 0o644, in: directory)
        let room = ["--join", "127.0.0.1:9", "--room", "vault"]
        for (arguments, environment) in [
            (["--room-secret-file", open], [String: String]()), ([], ["COWATCH_ROOM_SECRET_FILE": open]),
        ] {
            let daemon = try await DaemonProcess(
                name: "ann", media: media, extraArguments: room + arguments, directory: directory, environment: environment,
                waitUntilReady: false)
            #expect(await daemon.waitForExit(timeout: 10) == 2)
            let lines = stderrLines(daemon)
            #expect(lines.count == 1 && lines[0].contains("chmod 600 \(open)") && lines[0].contains("mode 644"), "\(lines)")
        }
        // Too short, and two sources at once: configuration errors naming what is wrong, not the secret.
        let short = try writeSecretFile("short", in: directory, name: "short.secret")
        let tooShort = try await DaemonProcess(
            name: "ann", media: media, extraArguments: room + ["--room-secret-file", short], directory: directory,
            waitUntilReady: false)
        #expect(await tooShort.waitForExit(timeout: 10) == 2)
        #expect(tooShort.stderr.contains("8–1024 bytes") && !tooShort.stderr.contains("short\n"), "\(tooShort.stderr)")
        let both = try await DaemonProcess(
            name: "ann", media: media, extraArguments: room, directory: directory,
            environment: ["COWATCH_ROOM_SECRET": Self.secret, "COWATCH_ROOM_SECRET_FILE": short], waitUntilReady: false)
        #expect(await both.waitForExit(timeout: 10) == 2)
        #expect(both.stderr.contains("both set") && !both.stderr.contains("horse"), "\(both.stderr)")
    }
}
