import CowatchClient
import CowatchObserver
import Foundation

/// A real `redis-server` on a loopback port of its own, in a temporary directory, saving
/// nothing (`--save ''`, no append-only file): the cluster tests' room directory.
public final class RedisProcess {
    public let process: Process
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
        // A port found free may be taken by a test running beside us before redis binds it; then
        // another process (perhaps another test's redis) answers there. Only ours will do.
        for _ in 0..<5 {
            let port = freeLoopbackPort()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = [
                "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory,
                "--daemonize", "no", "--logfile", directory + "/redis.log", "--protected-mode", "yes",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            if Self.answers(port: port, as: process) {
                self.process = process
                self.port = port
                return
            }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        throw TestFailure("redis-server did not start on a port of its own: \((try? String(contentsOfFile: directory + "/redis.log", encoding: .utf8)) ?? "")")
    }

    /// Whether `process` itself (not another server on the port) answers on `port` within 10 s.
    private static func answers(port: Int, as process: Process) -> Bool {
        let deadline = monotonicNow() + 10
        while monotonicNow() < deadline, process.isRunning {
            if (try? command(["PING"], port: port)) == "PONG" {
                let info = (try? command(["INFO", "server"], port: port)) ?? ""
                let lines = info.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                return process.isRunning && lines.contains("process_id:\(process.processIdentifier)")
            }
            sleepSeconds(0.05)
        }
        return false
    }

    public var url: String { "redis://127.0.0.1:\(port)" }

    /// Runs one command with `redis-cli` and returns its output, trimmed.
    @discardableResult
    public func command(_ words: [String]) throws -> String {
        try Self.command(words, port: port)
    }

    private static func command(_ words: [String], port: Int) throws -> String {
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
