import CowatchClient
import Foundation

/// A real `redis-server` on a loopback port of its own, in a temporary directory, saving
/// nothing (`--save ''`, no append-only file): the cluster tests' room directory.
public final class RedisProcess {
    public let process = Process()
    public let port: Int
    public let directory: String

    /// Where Debian installs it; nil when it is not installed (`make deps` installs it).
    public static var binary: String? {
        ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    public init() throws {
        guard let binary = Self.binary else { throw TestFailure("redis-server is not installed (make deps installs it)") }
        directory = NSTemporaryDirectory() + "cowatch-redis-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        port = freeLoopbackPort()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [
            "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory,
            "--daemonize", "no", "--logfile", directory + "/redis.log", "--protected-mode", "yes",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = monotonicNow() + 10
        while monotonicNow() < deadline {
            if (try? command(["PING"])) == "PONG" { return }
            sleepSeconds(0.05)
        }
        throw TestFailure("redis-server did not answer on port \(port): \((try? String(contentsOfFile: directory + "/redis.log", encoding: .utf8)) ?? "")")
    }

    public var url: String { "redis://127.0.0.1:\(port)" }

    /// Runs one command with `redis-cli` and returns its output, trimmed.
    @discardableResult
    public func command(_ words: [String]) throws -> String {
        let cli = Process()
        cli.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        cli.arguments = ["-h", "127.0.0.1", "-p", "\(port)"] + words
        let output = Pipe()
        cli.standardOutput = output
        cli.standardError = FileHandle.nullDevice
        try cli.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        cli.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public func stop() {
        if process.isRunning {
            // SIGKILL: it has nothing to save, and it may have inherited a blocked SIGTERM.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    deinit { stop() }
}
