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
@Suite("Restarts: nobody locked out", .serialized)
struct RestartResumeTests {
    /// The same daemon again: its directory (so its state: kept tokens, known hosts) and flags.
    private func restart(_ old: DaemonProcess, media: String, arguments: [String]) throws -> DaemonProcess {
        try DaemonProcess(name: old.name, media: media, extraArguments: arguments, directory: old.directory)
    }

    private func role(_ daemon: DaemonProcess, timeout: Double = 15) throws -> String? {
        let client = try daemon.client()
        let status = try client.waitForStatus(timeout: timeout) { $0.extra["room"]?["session"] == "joined" }
        return status.extra["room"]?["role"]?.stringValue
    }

    @Test("the owner and an operator, killed and started again while a friend stays, get their names and roles back; forget drops them")
    func ownerAndOperatorResume() throws {
        let media = try TestMedia.audioVideo()
        let room = try DaemonRoom(media: media, room: "club")
        try room.add("alice")
        try room.add("bob")
        try room.add("cat")
        try room.waitJoined(0, participants: 3)
        try room.clients[0].request(.setRole(name: "cat", role: .operator))
        try room.waitRole(1, of: "cat", is: "operator")
        let flags = ["--join", room.address, "--room", "club", "--no-osd"]

        for index in [0, 2] {
            let old = room.daemons[index]
            kill(old.process.processIdentifier, SIGKILL)
            old.process.waitUntilExit()
            let again = try restart(old, media: media, arguments: flags)
            defer { again.terminate() }
            let expected = index == 0 ? "owner" : "operator"
            #expect(try role(again) == expected, "\(old.name): \(again.stderr)")
            try room.waitRole(1, of: old.name, is: expected)
            #expect(again.terminate() == 0)
        }

        // `cowatch forget` drops alice's token: started again, she is a newcomer to her own
        // name, which the owner's role still holds; refused, said plainly.
        let alice = room.daemons[0]
        let forgot = try runBinary("cowatch", ["forget", "club", "--name", "alice"], environment: ["XDG_STATE_HOME": alice.directory + "/state"])
        #expect(forgot.status == 0 && forgot.stdout.contains("forgot 1 session token"), "\(forgot)")
        let stranger = try DaemonProcess(
            name: "alice", media: media, extraArguments: flags, directory: alice.directory, waitUntilReady: false)
        #expect(stranger.waitForExit(timeout: 20) == 1)
        #expect(stranger.stderr.contains("name-taken"), "\(stranger.stderr)")
    }
}
