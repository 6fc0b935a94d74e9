import CowatchClient
import CowatchCore
import CowatchObserver
import Foundation

/// A real `cowatchd` process, headless, with its own control socket in a fresh directory.
///
/// Waiting: every wait has a blocking form (for `cowatch-bench`) and, under the same name, an
/// async form that suspends the task instead (for the tests: see `offPool`). A `defer` ends one
/// with `terminateInBackground()`, which does not wait.
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
    /// Its exit, as the async waits learn it.
    public let exit: ProcessExit
    /// Its process id (kept: Foundation forgets it once the process has ended).
    public let pid: Int32

    /// Starts `cowatchd` and, with `waitUntilReady`, blocks until its control socket answers (or
    /// the process exits). `launcher`, when given, is a program and its arguments that run
    /// cowatchd (e.g. `setpriv` with fewer privileges).
    public convenience init(
        name: String, media: String, extraArguments: [String] = [], directory: String? = nil,
        environment extraEnvironment: [String: String] = [:], waitUntilReady: Bool = true, launcher: [String] = []
    ) throws {
        try self.init(
            launching: name, media: media, extraArguments: extraArguments, directory: directory, environment: extraEnvironment,
            launcher: launcher)
        if waitUntilReady { try awaitReady() }
    }

    /// The same, suspended (not blocked) while it waits for the control socket.
    public convenience init(
        name: String, media: String, extraArguments: [String] = [], directory: String? = nil,
        environment extraEnvironment: [String: String] = [:], waitUntilReady: Bool = true, launcher: [String] = []
    ) async throws {
        try self.init(
            launching: name, media: media, extraArguments: extraArguments, directory: directory, environment: extraEnvironment,
            launcher: launcher)
        if waitUntilReady { try await awaitReady() }
    }

    private init(
        launching name: String, media: String, extraArguments: [String], directory: String?, environment extraEnvironment: [String: String],
        launcher: [String]
    ) throws {
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
            // An empty media: a joiner without any (it plays the room's streamed from a sharer).
            (media.isEmpty ? [] : ["--media", media])
            + ["--name", name, "--control", controlPath, "--mpv", "vo=null", "--mpv", "ao=null", "--mpv", "input-ipc-server=\(mpvSocket)"]
            + extraArguments
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = self.directory  // no personal config file leaks in
        environment["XDG_STATE_HOME"] = self.directory + "/state"  // its own known_hosts and hosting state
        for key in environment.keys where key.hasPrefix("COWATCH_") { environment[key] = nil }
        environment.merge(extraEnvironment) { _, new in new }
        process.environment = environment
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        exit = try process.start()
        pid = process.processIdentifier
    }

    public static func makeDirectory() -> String {
        let path = "/tmp/cowatch-it-\(getpid())-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Blocks until the control socket answers; throws when the process exits first or `timeout` passes.
    public func awaitReady(timeout: Double = 20) throws {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if ControlClient.isListening(path: controlPath) { return }
            if !process.isRunning { throw TestFailure("cowatchd \(name) exited early: \(stderr)") }
            usleep(20_000)
        }
        throw TestFailure("cowatchd \(name) did not open its control socket in \(timeout) s: \(stderr)")
    }

    /// The same, suspended while it waits.
    public func awaitReady(timeout: Double = 20) async throws {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if ControlClient.isListening(path: controlPath) { return }
            if exit.hasExited { throw TestFailure("cowatchd \(name) exited early: \(stderr)") }
            await pause(0.02)
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

    /// The same, suspended while the socket is not there yet.
    public func playerProbe() async throws -> ControlClient {
        let deadline = monotonicNow() + 10
        while !FileManager.default.fileExists(atPath: mpvSocket) && monotonicNow() < deadline { await pause(0.01) }
        return try ControlClient(path: mpvSocket)
    }

    public var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Sends SIGTERM and blocks until the exit status (nil if it did not exit in time: then killed).
    @discardableResult
    public func terminate(timeout: Double = 10) -> Int32? {
        if process.isRunning { process.terminate() }
        return waitForExit(timeout: timeout)
    }

    /// Sends SIGTERM and waits, suspended, for the exit status (nil if it did not exit in time:
    /// then it is killed).
    @discardableResult
    public func terminate(timeout: Double = 10) async -> Int32? {
        if !exit.hasExited { kill(pid, SIGTERM) }
        return await waitForExit(timeout: timeout)
    }

    /// For a `defer`: SIGTERM now; the wait (and a SIGKILL after `timeout`) happens in the background.
    public func terminateInBackground(timeout: Double = 10) {
        guard !exit.hasExited else { return }
        kill(pid, SIGTERM)
        let daemon = Unchecked(self)  // kept alive (its deinit would SIGKILL it) until it has ended
        BackgroundCleanup.run { _ = daemon.value.waitForExit(timeout: timeout) }
    }

    /// Blocks until the process exits: its status, or nil if it did not exit in time (then killed).
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

    /// The same, suspended until the process's exit handler runs or the deadline passes.
    public func waitForExit(timeout: Double) async -> Int32? {
        if await exit.wait(timeout: timeout) { return exit.outcome?.status }
        kill(pid, SIGKILL)
        await exit.wait(timeout: 10)
        return nil
    }

    /// Killed if it still runs, without waiting here (see `Process.killInBackground`).
    deinit { process.killInBackground() }
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

    /// The same, read on a thread of its own while the task is suspended.
    public func readReply(timeout: Double) async throws -> ControlReply? {
        try await offPool { [self] () throws -> ControlReply? in try readReply(timeout: timeout) }
    }

    public func status() throws -> PlayerStatus {
        do {
            return try PlayerStatus(json: try request(.getStatus))
        } catch {
            throw TestFailure("bad status: \(error)")
        }
    }

    /// The same, the request on a thread of its own while the task is suspended.
    public func status() async throws -> PlayerStatus {
        try await offPool { [self] () throws -> PlayerStatus in try status() }
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

    /// The same, suspended between polls and during each request; `predicate` runs on the
    /// caller's task.
    @discardableResult
    public func waitForStatus(timeout: Double, _ predicate: (PlayerStatus) -> Bool) async throws -> PlayerStatus {
        let deadline = monotonicNow() + timeout
        var last = try await status()
        while !predicate(last) {
            guard monotonicNow() < deadline else { throw TestFailure("condition not met in \(timeout) s; last: \(last)") }
            await pause(0.02)
            last = try await status()
        }
        return last
    }
}
