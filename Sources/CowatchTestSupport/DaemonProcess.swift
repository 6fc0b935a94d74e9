import CowatchClient
import CowatchCore
import CowatchObserver
import Foundation

/// A real `cowatchd` process, headless, with its own control socket in a fresh directory.
public final class DaemonProcess {
    public let name: String
    public let controlPath: String
    public let process = Process()
    public let stderrPath: String
    /// Its standard output (empty unless mpv's terminal output is turned on with `--mpv terminal=yes`).
    public let stdoutPath: String
    public let directory: String
    /// mpv's own JSON IPC socket inside this daemon's player: the observer reads the player's clock
    /// here, past cowatchd, so measured skew never depends on the daemon's own bookkeeping.
    public let mpvSocket: String

    /// Starts `cowatchd` and waits until its control socket answers (or the process exits).
    /// `launcher`, when given, is a program and its arguments that run cowatchd (e.g. `setpriv`
    /// with fewer privileges).
    public init(
        name: String, media: String, extraArguments: [String] = [], directory: String? = nil,
        environment extraEnvironment: [String: String] = [:], waitUntilReady: Bool = true, launcher: [String] = []
    )
        throws
    {
        self.name = name
        self.directory = directory ?? Self.makeDirectory()
        controlPath = self.directory + "/\(name).sock"
        stderrPath = self.directory + "/\(name).stderr"
        stdoutPath = self.directory + "/\(name).stdout"
        mpvSocket = self.directory + "/\(name).mpv.sock"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        let program = try Binaries.path("cowatchd")
        process.executableURL = URL(fileURLWithPath: launcher.first ?? program)
        process.arguments = (launcher.isEmpty ? [] : Array(launcher.dropFirst()) + [program]) +
            ["--media", media, "--name", name, "--control", controlPath, "--mpv", "vo=null", "--mpv", "ao=null",
             "--mpv", "input-ipc-server=\(mpvSocket)"]
            + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = self.directory  // no personal config file leaks in
        environment["XDG_STATE_HOME"] = self.directory + "/state"  // its own known_hosts and hosting state
        for key in environment.keys where key.hasPrefix("COWATCH_") { environment[key] = nil }
        environment.merge(extraEnvironment) { _, new in new }
        process.environment = environment
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        try process.run()
        if waitUntilReady { try awaitReady() }
    }

    public static func makeDirectory() -> String {
        let path = "/tmp/cowatch-it-\(getpid())-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    public func awaitReady(timeout: Double = 20) throws {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if ControlClient.isListening(path: controlPath) { return }
            if !process.isRunning { throw TestFailure("cowatchd \(name) exited early: \(stderr)") }
            usleep(20_000)
        }
        throw TestFailure("cowatchd \(name) did not open its control socket in \(timeout) s: \(stderr)")
    }

    public func client() throws -> ControlClient { try ControlClient(path: controlPath) }

    /// A connection to the player's own mpv IPC socket (same JSON shape as the control socket).
    public func playerProbe() throws -> ControlClient {
        let deadline = monotonicNow() + 10
        while !FileManager.default.fileExists(atPath: mpvSocket) && monotonicNow() < deadline { usleep(10_000) }
        return try ControlClient(path: mpvSocket)
    }

    public var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Sends SIGTERM and waits for the exit status (nil if it did not exit in time).
    @discardableResult
    public func terminate(timeout: Double = 10) -> Int32? {
        if process.isRunning { process.terminate() }
        return waitForExit(timeout: timeout)
    }

    public func waitForExit(timeout: Double) -> Int32? {
        let deadline = monotonicNow() + timeout
        while process.isRunning && monotonicNow() < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

extension ControlClient {
    /// The next reply line, skipping events.
    public func readReply(timeout: Double) throws -> ControlReply? {
        let deadline = monotonicNow() + timeout
        while true {
            let value = try readJSON(deadline: deadline)
            if let reply = ControlReply(json: value) { return reply }
        }
    }

    public func status() throws -> PlayerStatus {
        do {
            return try PlayerStatus(json: try request(.getStatus))
        } catch {
            throw TestFailure("bad status: \(error)")
        }
    }

    /// Polls `get_status` until the predicate holds; returns the last status.
    @discardableResult
    public func waitForStatus(timeout: Double, _ predicate: (PlayerStatus) -> Bool) throws -> PlayerStatus {
        let deadline = monotonicNow() + timeout
        var last = try status()
        while !predicate(last) {
            guard monotonicNow() < deadline else { throw TestFailure("condition not met in \(timeout) s; last: \(last)") }
            usleep(20_000)
            last = try status()
        }
        return last
    }
}
