import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// An invite's secret never stays where other local users can read it: scrubbed from the
/// process's arguments at once, and taken from a file, standard input or the environment instead.
@Suite("Room secrets off the command line", .realProcesses)
struct SecretsOffCommandLineTests {
    /// A host with a secret; returns it, its invite line file and the link.
    static func secretHost() async throws -> (DaemonProcess, String, String) {
        let directory = DaemonProcess.makeDirectory()
        let secretFile = directory + "/den.secret"
        try "hunter2 and more\n".write(toFile: secretFile, atomically: true, encoding: .utf8)
        chmod(secretFile, 0o600)
        let host = try await DaemonProcess(
            name: "hana", media: try await TestMedia.file(.audioVideo),
            extraArguments: ["--host", "127.0.0.1:\(freeLoopbackPort())", "--room", "den", "--room-secret-file", secretFile, "--no-osd"])
        try await host.client().waitForStatus(timeout: 20) { $0.room?.session == "joined" }
        let kept = host.directory + "/state/cowatch/invite-den.txt"
        let deadline = monotonicNow() + 10
        while !FileManager.default.fileExists(atPath: kept), monotonicNow() < deadline { await pause(0.05) }
        let link = try #require(try await host.client().request(.getInvite(host: nil))["invite"]?.stringValue)
        return (host, kept, link)
    }

    static func commandLine(of daemon: DaemonProcess) throws -> String {
        let data = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(daemon.process.processIdentifier)/cmdline"))
        return String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
    }

    @Test("--join with the secret in it: the secret is gone from /proc/PID/cmdline once the daemon answers")
    func scrubbed() async throws {
        let (host, _, link) = try await Self.secretHost()
        defer { host.terminateInBackground() }
        #expect(link.contains("secret=hunter2"))
        let friend = try await DaemonProcess(name: "finn", media: try await TestMedia.file(.audioVideo), extraArguments: ["--join", link, "--no-osd"])
        defer { friend.terminateInBackground() }
        try await friend.client().waitForStatus(timeout: 20) { $0.room?.session == "joined" }
        let shown = try Self.commandLine(of: friend)
        #expect(shown.contains("--join cowatch://"))
        #expect(!shown.contains("hunter2"), "\(shown)")
        #expect(shown.contains("secret=xxxxxxx"))
    }

    @Test("--join-file takes the host's kept invite file; COWATCH_JOIN the link itself; neither shows in ps")
    func fileAndEnvironment() async throws {
        let (host, kept, link) = try await Self.secretHost()
        defer { host.terminateInBackground() }
        let copy = DaemonProcess.makeDirectory() + "/invite.txt"
        try FileManager.default.copyItem(atPath: kept, toPath: copy)
        chmod(copy, 0o600)
        let fromFile = try await DaemonProcess(name: "finn", media: try await TestMedia.file(.audioVideo), extraArguments: ["--join-file", copy, "--no-osd"])
        defer { fromFile.terminateInBackground() }
        try await fromFile.client().waitForStatus(timeout: 20) { $0.room?.session == "joined" }
        #expect(!(try Self.commandLine(of: fromFile)).contains("cowatch://"))

        let fromEnvironment = try await DaemonProcess(
            name: "gwen", media: try await TestMedia.file(.audioVideo), extraArguments: ["--no-osd"], environment: ["COWATCH_JOIN": link])
        defer { fromEnvironment.terminateInBackground() }
        try await fromEnvironment.client().waitForStatus(timeout: 20) { $0.room?.session == "joined" }
    }

    @Test("an invite file with a secret that others may read is refused, saying how to fix it")
    func openFileRefused() async throws {
        let (host, kept, _) = try await Self.secretHost()
        defer { host.terminateInBackground() }
        let copy = DaemonProcess.makeDirectory() + "/invite.txt"
        try FileManager.default.copyItem(atPath: kept, toPath: copy)
        chmod(copy, 0o644)
        let friend = try await DaemonProcess(
            name: "finn", media: try await TestMedia.file(.audioVideo), extraArguments: ["--join-file", copy], waitUntilReady: false)
        #expect(await friend.waitForExit(timeout: 20) == 1)
        #expect(friend.stderr.contains("is open to other users (mode 644): chmod 600 \(copy)"), "\(friend.stderr)")
        #expect(!friend.stderr.contains("hunter2"))
        let empty = DaemonProcess.makeDirectory() + "/empty.txt"
        try "no link here\n".write(toFile: empty, atomically: true, encoding: .utf8)
        let confused = try await DaemonProcess(
            name: "gwen", media: try await TestMedia.file(.audioVideo), extraArguments: ["--join-file", empty], waitUntilReady: false)
        #expect(await confused.waitForExit(timeout: 20) == 2)
        #expect(confused.stderr.contains("holds no invite link"), "\(confused.stderr)")
    }
}
