import CowatchClient
import CowatchObserver
import Foundation

/// A real `redis-server` on a loopback port of its own, in a temporary directory, saving
/// nothing (`--save ''`, no append-only file): the cluster tests' room directory.
///
/// Waiting: `init()` and `command(_:)` block (the in-process suites call them); `start()` and
/// `query(_:)` are the same suspending the task instead (see `offPool`). Not the same names: an
/// async test of those suites calls `init()` and `command(_:)` as they are.
public final class RedisProcess {
    public let process: Process
    public let port: Int
    public let directory: String

    /// Where Debian installs it; nil when it is not installed (`make deps` installs it).
    public static var binary: String? {
        ["/usr/bin/redis-server", "/usr/local/bin/redis-server"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts one, blocking until it answers.
    public convenience init() throws {
        let directory = try Self.makeDirectory()
        for _ in 0..<5 {
            let (process, port) = try Self.launch(in: directory)
            if Self.answers(port: port, as: process) {
                self.init(process: process, port: port, directory: directory)
                return
            }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        throw Self.notStarted(directory)
    }

    /// Starts one, suspended (not blocked) until it answers.
    public static func start() async throws -> RedisProcess {
        let directory = try makeDirectory()
        for _ in 0..<5 {
            let (process, port) = try launch(in: directory)
            if await answers(port: port, as: process) { return RedisProcess(process: process, port: port, directory: directory) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        throw notStarted(directory)
    }

    private init(process: Process, port: Int, directory: String) {
        self.process = process
        self.port = port
        self.directory = directory
    }

    private static func makeDirectory() throws -> String {
        guard binary != nil else { throw TestFailure("redis-server is not installed (make deps installs it)") }
        let directory = NSTemporaryDirectory() + "cowatch-redis-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// One attempt: a server on a port that was free a moment ago. A port found free may be taken
    /// by a test running beside us before redis binds it; then another process (perhaps another
    /// test's redis) answers there. Only ours will do: see `answers`.
    private static func launch(in directory: String) throws -> (Process, Int) {
        let port = freeLoopbackPort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary ?? "/usr/bin/redis-server")
        process.arguments = [
            "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory,
            "--daemonize", "no", "--logfile", directory + "/redis.log", "--protected-mode", "yes",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.runSerially()
        return (process, port)
    }

    private static func notStarted(_ directory: String) -> TestFailure {
        TestFailure("redis-server did not start on a port of its own: \((try? String(contentsOfFile: directory + "/redis.log", encoding: .utf8)) ?? "")")
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

    /// The same, suspended between tries (each `redis-cli` run on a thread of its own).
    private static func answers(port: Int, as process: Process) async -> Bool {
        let deadline = monotonicNow() + 10
        while monotonicNow() < deadline, process.isRunning {
            if (try? await offPool { try command(["PING"], port: port) }) == "PONG" {
                let info = (try? await offPool { try command(["INFO", "server"], port: port) }) ?? ""
                let lines = info.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                return process.isRunning && lines.contains("process_id:\(process.processIdentifier)")
            }
            await pause(0.05)
        }
        return false
    }

    public var url: String { "redis://127.0.0.1:\(port)" }

    /// Runs one command with `redis-cli` and returns its output, trimmed (blocking).
    @discardableResult
    public func command(_ words: [String]) throws -> String {
        try Self.command(words, port: port)
    }

    /// The same, `redis-cli` run on a thread of its own while the task is suspended.
    @discardableResult
    public func query(_ words: [String]) async throws -> String {
        let port = port
        return try await offPool { try Self.command(words, port: port) }
    }

    private static func command(_ words: [String], port: Int) throws -> String {
        let cli = Process()
        cli.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        cli.arguments = ["-h", "127.0.0.1", "-p", "\(port)"] + words
        let output = Pipe.forChild()
        cli.standardOutput = output
        cli.standardError = FileHandle.nullDevice
        try cli.runSerially()
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

    /// Killed (if it still runs) and its directory removed, without waiting here (see
    /// `Process.killInBackground`).
    deinit {
        let directory = directory
        process.killInBackground { try? FileManager.default.removeItem(atPath: directory) }
    }
}
