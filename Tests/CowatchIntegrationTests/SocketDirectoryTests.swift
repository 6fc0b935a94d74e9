import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// The default control-socket directory against another local user: `cowatchd` and `cowatch`
/// use it only when it is a real directory of ours with mode 0700.
@Suite("control socket directories", .serialized, .realProcesses)
struct SocketDirectoryTests {
    /// Runs `cowatch` with `XDG_RUNTIME_DIR` set; returns status and stderr.
    func cowatch(_ arguments: [String], runtime: String) async throws -> (status: Int32, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Binaries.path("cowatch"))
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        for key in environment.keys where key.hasPrefix("COWATCH_") { environment[key] = nil }
        environment["XDG_RUNTIME_DIR"] = runtime
        process.environment = environment
        let finished = try await runToEnd(process)
        return (finished.status, finished.stderr)
    }

    func makeRuntime() throws -> String {
        var template = Array("/tmp/cowatch-rt-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp failed") }
        return String(cString: made)
    }

    @Test("a default directory open to others: the daemon will not start and the CLI will not connect; 0700 works")
    func openDirectory() async throws {
        let runtime = try makeRuntime()
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let directory = runtime + "/cowatch"
        mkdir(directory, 0o755)
        chmod(directory, 0o755)
        let media = try await TestMedia.file(.audioVideo)

        let refused = try await DaemonProcess(
            name: "alice", media: media, directory: directory, environment: ["XDG_RUNTIME_DIR": runtime],
            waitUntilReady: false)
        #expect(await refused.waitForExit(timeout: 20) == 1)
        #expect(refused.stderr.contains("chmod 700 \(directory)"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: refused.controlPath))

        chmod(directory, 0o700)
        let daemon = try await DaemonProcess(
            name: "alice", media: media, extraArguments: ["--paused"], directory: directory,
            environment: ["XDG_RUNTIME_DIR": runtime])
        #expect(try await cowatch(["status", "--name", "alice"], runtime: runtime).status == 0)

        // Someone opens it up while the daemon runs: the CLI stops talking to it.
        chmod(directory, 0o711)
        let open = try await cowatch(["status", "--name", "alice"], runtime: runtime)
        #expect(open.status == 1)
        #expect(open.stderr.contains("mode 0711"), "\(open.stderr)")
        // Also with the path given explicitly, however it is spelt.
        #expect(try await cowatch(["status", "--socket", daemon.controlPath], runtime: runtime).status == 1)
        #expect(try await cowatch(["status", "--socket", runtime + "//cowatch/./alice.sock"], runtime: runtime).status == 1)
        chmod(directory, 0o700)
        #expect(try await cowatch(["status", "--name", "alice"], runtime: runtime).status == 0)
        #expect(await daemon.terminate() == 0)
    }

    @Test("a symbolic link as the default directory is refused by both, even to a safe directory")
    func symbolicLink() async throws {
        let runtime = try makeRuntime()
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let real = runtime + "/elsewhere"
        mkdir(real, 0o700)
        chmod(real, 0o700)
        #expect(symlink(real, runtime + "/cowatch") == 0)
        let media = try await TestMedia.file(.audioVideo)
        let refused = try await DaemonProcess(
            name: "bob", media: media, directory: runtime + "/cowatch", environment: ["XDG_RUNTIME_DIR": runtime],
            waitUntilReady: false)
        #expect(await refused.waitForExit(timeout: 20) == 1)
        #expect(refused.stderr.contains("symbolic link"), "\(refused.stderr)")
        // A daemon in the real directory, named explicitly, works; the CLI will not reach it
        // through the link (the default place), but will by its real path.
        let daemon = try await DaemonProcess(name: "bob", media: media, extraArguments: ["--paused"], directory: real)
        let viaLink = try await cowatch(["status", "--name", "bob"], runtime: runtime)
        #expect(viaLink.status == 1)
        #expect(viaLink.stderr.contains("symbolic link"), "\(viaLink.stderr)")
        #expect(try await cowatch(["status", "--socket", real + "/bob.sock"], runtime: runtime).status == 0)
        #expect(await daemon.terminate() == 0)
    }

    @Test("a default directory owned by another user is refused (needs root to make one)", .enabled(if: getuid() == 0))
    func otherOwner() async throws {
        let runtime = try makeRuntime()
        defer { try? FileManager.default.removeItem(atPath: runtime) }
        let directory = runtime + "/cowatch"
        mkdir(directory, 0o700)
        chmod(directory, 0o700)
        #expect(chown(directory, 65534, 65534) == 0)
        let refused = try await DaemonProcess(
            name: "cy", media: try await TestMedia.file(.audioVideo), directory: directory,
            environment: ["XDG_RUNTIME_DIR": runtime], waitUntilReady: false)
        #expect(await refused.waitForExit(timeout: 20) == 1)
        #expect(refused.stderr.contains("belongs to uid 65534"), "\(refused.stderr)")
        let client = try await cowatch(["status", "--name", "cy"], runtime: runtime)
        #expect(client.status == 1)
        #expect(client.stderr.contains("belongs to uid 65534"), "\(client.stderr)")
    }
}
