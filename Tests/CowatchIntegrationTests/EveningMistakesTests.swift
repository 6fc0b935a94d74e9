import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// The usual mistakes of a first evening, each answered with one clear line.
@Suite("First-evening mistakes", .serialized, .realProcesses)
struct EveningMistakesTests {
    @Test("a second host on a taken port: one line naming the port, before any attempt to join the other server")
    func portInUse() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let port = freeLoopbackPort()
        let first = try await DaemonProcess(name: "first", media: media, extraArguments: ["--host", "127.0.0.1:\(port)"])
        defer { first.terminateInBackground() }
        let second = try await DaemonProcess(
            name: "second", media: media, extraArguments: ["--host", "127.0.0.1:\(port)"], waitUntilReady: false)
        #expect(await second.waitForExit(timeout: 20) == 1)
        let lines = second.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(second.stderr)")
        #expect(second.stderr.contains("port \(port) is already in use — another cowatchd --host or cowatch-server?"), "\(second.stderr)")
    }

    @Test(
        "a misspelt option gets the one meant; a secret on the command line is refused with where it goes",
        arguments: [
            (["--hots", "7433"], "did you mean --host?"),
            (["--room-secret-fil", "x"], "did you mean --room-secret-file?"),
            (["--room-secret", "hunter2"], "--room-secret-file PATH, or set COWATCH_ROOM_SECRET"),
        ])
    func optionSuggestions(arguments: [String], mentions: String) async throws {
        let daemon = try await DaemonProcess(
            name: "typo", media: try await TestMedia.file(.audioVideo), extraArguments: arguments, waitUntilReady: false)
        #expect(await daemon.waitForExit(timeout: 20) == 2)
        #expect(daemon.stderr.split(separator: "\n").count == 1 && daemon.stderr.contains(mentions), "\(daemon.stderr)")
        #expect(!daemon.stderr.contains("hunter2"))
    }

    @Test("a host nobody watches keeps its invite in a 0600 file the log names; it is the link get_invite gives")
    func inviteKept() async throws {
        let host = try await DaemonProcess(
            name: "hana", media: try await TestMedia.file(.audioVideo), extraArguments: ["--host", "127.0.0.1:\(freeLoopbackPort())", "--room", "den"])
        defer { host.terminateInBackground() }
        let path = host.directory + "/state/cowatch/invite-den.txt"
        let said = "the invite for room den is in \(path)"
        let deadline = monotonicNow() + 15
        while !host.stderr.contains(said) && monotonicNow() < deadline { await pause(0.05) }
        #expect(host.stderr.contains(said), "\(host.stderr)")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let kept = try String(contentsOfFile: path, encoding: .utf8)
        let link = try #require(try await host.client().request(.getInvite(host: nil))["invite"]?.stringValue)
        #expect(kept == "cowatchd --join '\(link)' --media FILM\n")
        // The secret-bearing line itself never reaches the log.
        #expect(!host.stderr.contains("cowatch://"))
    }
}

