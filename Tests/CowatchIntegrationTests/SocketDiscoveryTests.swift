import CowatchTestSupport
import Foundation
import Testing

/// A bare `cowatch pause` when no daemon runs under the login name: the only daemon in the default
/// directory is used; with several, they are listed (`several-daemons`) and none is picked.
@Suite("finding the daemon", .serialized, .realProcesses)
struct SocketDiscoveryTests {
    @Test("one daemon under another name is used; two are listed")
    func discovery() async throws {
        let runtime = try makeTemporaryDirectory("cowatch-rt")
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let directory = runtime + "/cowatch"
        mkdir(directory, 0o700)
        // The login name is not one of the daemons'.
        let environment = ["XDG_RUNTIME_DIR": runtime, "USER": "nobody-of-these"]
        let media = try await TestMedia.file(.videoOnly)

        // Each daemon keeps its mpv IPC socket in the same directory: not a daemon, not counted.
        let alice = try await DaemonProcess(
            name: "alice", media: media, extraArguments: ["--paused"], directory: directory, environment: environment)
        let only = try await runBinary("cowatch", ["status"], environment: environment)
        #expect(only.status == 0, "\(only.stderr)")
        #expect(only.stdout.hasPrefix("alice: "), "\(only.stdout)")

        let bob = try await DaemonProcess(
            name: "bob", media: media, extraArguments: ["--paused"], directory: directory, environment: environment)
        let several = try await runBinary("cowatch", ["pause"], environment: environment)
        #expect(several.status == 1)
        #expect(several.stderr.contains("(several-daemons): alice, bob; choose one with --name NAME"), "\(several.stderr)")
        #expect(try await runBinary("cowatch", ["status", "--name", "bob"], environment: environment).stdout.hasPrefix("bob: "))
        await alice.terminate()
        await bob.terminate()

        // None at all: the login name's socket, as before.
        let none = try await runBinary("cowatch", ["status"], environment: environment)
        #expect(none.status == 1)
        #expect(none.stderr.contains("nobody-of-these.sock"), "\(none.stderr)")
    }
}
