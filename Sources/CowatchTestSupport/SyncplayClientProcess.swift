import CowatchClient
import CowatchObserver
import Foundation

/// A real Syncplay client (Debian's `syncplay`, 1.6.9, `--no-gui`) driving a headless mpv of its
/// own: the Syncplay participant of the interoperability tests and `cowatch-bench syncplay`.
/// Its console takes commands on standard input (`say`: `p` pauses or plays, `t` toggles
/// readiness, `ch TEXT` chats, `s 1:30` seeks); its mpv's JSON IPC socket (`mpvSocket`) is the
/// observer's view of where it plays (`playerProbe`). It has a home of its own, so no personal
/// Syncplay settings leak in.
///
/// Threading: one test task. Errors: `TestFailure` when it is not installed or does not start.
public final class SyncplayClientProcess {
    public let process = Process()
    public let name: String
    public let directory: String
    public let mpvSocket: String
    public let exit: ProcessExit
    private let input = Pipe.forChild()

    /// Where Debian installs it; nil when it is not installed (`make test-deps` installs it).
    public static var binary: String? {
        ["/usr/bin/syncplay", "/usr/local/bin/syncplay"].first { FileManager.default.isExecutableFile(atPath: $0) }
            .flatMap { _ in FileManager.default.isExecutableFile(atPath: "/usr/bin/mpv") ? "/usr/bin/syncplay" : nil }
    }

    /// Starts it: joins `room` on the Syncplay server at 127.0.0.1:`port` as `name`, playing
    /// `media`; `playerArguments` go to its mpv (`--ao-null-buffer=0.05`, …). `mediaDirectories`
    /// are where it finds the shared playlist's files by name (its settings file says them).
    public init(
        name: String, port: Int, room: String, media: String, playerArguments: [String] = [], mediaDirectories: [String] = []
    ) throws {
        guard let binary = Self.binary else { throw TestFailure("syncplay (and mpv) are not installed (make test-deps installs them)") }
        self.name = name
        directory = NSTemporaryDirectory() + "cowatch-syncplay-client-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory + "/home/.config", withIntermediateDirectories: true)
        if !mediaDirectories.isEmpty {
            // Syncplay reads a Python list literal.
            let list = mediaDirectories.map { "'" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'" }
            try "[client_settings]\nmediaSearchDirectories = [\(list.joined(separator: ", "))]\n"
                .write(toFile: directory + "/home/.config/syncplay.ini", atomically: true, encoding: .utf8)
        }
        mpvSocket = directory + "/mpv.sock"
        let log = directory + "/client.log"
        FileManager.default.createFile(atPath: log, contents: nil)
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [
            "--no-gui", "--no-store", "-a", "127.0.0.1:\(port)", "-n", name, "-r", room, "--player-path", "/usr/bin/mpv", media,
            "--", "--vo=null", "--ao=null", "--force-window=no", "--input-ipc-server=\(mpvSocket)",
        ] + playerArguments
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = directory + "/home"
        environment["XDG_CONFIG_HOME"] = directory + "/home/.config"
        environment["PYTHONUNBUFFERED"] = "1"
        process.environment = environment
        process.standardInput = input
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = process.standardOutput
        exit = try process.start()
        input.fileHandleForReading.closeFile()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        endPlayer()
    }

    /// Its mpv outlives it when it is killed: ended by its socket's path, which only it has.
    private func endPlayer() {
        let pkill = Process()
        pkill.executableURL = URL(fileURLWithPath: "/usr/bin/pkill")
        // SIGKILL: it inherits an ignored SIGTERM from Syncplay.
        pkill.arguments = ["-KILL", "-f", "input-ipc-server=\(mpvSocket)"]
        try? pkill.run()
    }

    /// What it printed so far (its notifications, chat, errors).
    public var log: String { (try? String(contentsOfFile: directory + "/client.log", encoding: .utf8)) ?? "" }

    /// One line to its console.
    public func say(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// A client of its mpv's IPC socket, once mpv made it (within 20 s).
    public func playerProbe() async throws -> ControlClient {
        let deadline = monotonicNow() + 20
        while !FileManager.default.fileExists(atPath: mpvSocket) && monotonicNow() < deadline { await pause(0.05) }
        return try ControlClient(path: mpvSocket)
    }

    /// Ends it (and its mpv) without waiting.
    public func terminateInBackground() {
        if process.isRunning { process.terminate() }
        endPlayer()
    }
}
