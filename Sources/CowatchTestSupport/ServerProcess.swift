import CowatchClient
import CowatchObserver
import Foundation

/// A real `cowatch-server` process on loopback with an ephemeral port.
///
/// Waiting: `init` and `terminate()` block (for `cowatch-bench`); `start(…)` and `stop()` are the
/// same suspending the task instead (see `offPool`), and `terminateInBackground()` is for a `defer`.
/// (Not the same names: `cowatch-bench` calls `init` and `terminate()` from an async function.)
public final class ServerProcess {
    public let process = Process()
    public private(set) var port = 0
    public let logPath: String
    /// Its exit, as the async waits learn it.
    public let exit: ProcessExit

    /// Where this server keeps its certificate, token key and rooms (kept across a restart
    /// when the same directory is given again).
    public let stateDirectory: String
    /// Its standard output until its first lines are read (then closed, as it says no more there).
    private var output: Pipe?

    /// Starts `cowatch-server --listen 127.0.0.1:0` and blocks until it reports its port.
    /// `openFiles`: a descriptor limit for the server (run under `ulimit -n`), to see it at its limit.
    /// `executable`: another build of the server (a benchmark's baseline); default the package's own.
    public convenience init(
        port requestedPort: Int = 0, extraArguments: [String] = [], stateDirectory: String? = nil, openFiles: Int? = nil,
        executable: String? = nil
    ) throws {
        try self.init(
            launching: requestedPort, extraArguments: extraArguments, stateDirectory: stateDirectory, openFiles: openFiles,
            executable: executable)
        try readBanner(tls: !extraArguments.contains("--no-tls"), syncplay: extraArguments.contains("--syncplay-listen"))
    }

    /// The same, suspended (its first lines read on a thread of their own) until it reports its port.
    public static func start(
        port requestedPort: Int = 0, extraArguments: [String] = [], stateDirectory: String? = nil, openFiles: Int? = nil,
        executable: String? = nil
    ) async throws -> ServerProcess {
        let server = try ServerProcess(
            launching: requestedPort, extraArguments: extraArguments, stateDirectory: stateDirectory, openFiles: openFiles,
            executable: executable)
        try await offPool { try server.readBanner(tls: !extraArguments.contains("--no-tls"), syncplay: extraArguments.contains("--syncplay-listen")) }
        return server
    }

    private init(launching requestedPort: Int, extraArguments: [String], stateDirectory: String?, openFiles: Int?, executable: String?) throws {
        logPath = "/tmp/cowatch-server-\(getpid())-\(UUID().uuidString.prefix(8)).log"
        self.stateDirectory = stateDirectory ?? logPath.replacingOccurrences(of: ".log", with: ".state")
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: try executable ?? Binaries.path("cowatch-server"))
        process.arguments = ["--listen", "127.0.0.1:\(requestedPort)", "--state-dir", self.stateDirectory] + extraArguments
        if let openFiles {
            let binary = process.executableURL!.path
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(openFiles) && exec \"$0\" \"$@\"", binary] + process.arguments!
        }
        let output = Pipe.forChild()
        self.output = output
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: logPath)
        exit = try process.start()
    }

    /// Reads the server's first lines (blocking): where it listens, with TLS its fingerprint, and
    /// with `--syncplay-listen` where Syncplay clients connect.
    private func readBanner(tls: Bool, syncplay: Bool) throws {
        guard let output else { return }
        defer { self.output = nil }
        // The first line says where it listens: "cowatch-server: listening on 127.0.0.1:PORT".
        var line = Data()
        let deadline = monotonicNow() + 20
        while monotonicNow() < deadline {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let portText = text.split(separator: ":").last, let port = Int(portText.trimmingCharacters(in: .whitespaces)) else {
            throw TestFailure("cowatch-server did not report its port: \"\(text)\"")
        }
        self.port = port
        // With TLS, the next line gives the certificate's fingerprint.
        if tls {
            var second = Data()
            while monotonicNow() < deadline {
                let byte = output.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty || byte == Data("\n".utf8) { break }
                second.append(byte)
            }
            let words = String(decoding: second, as: UTF8.self).split(separator: " ")
            fingerprint = words.first { $0.hasPrefix("sha256:") }.map(String.init)
        }
        if syncplay {
            var third = Data()
            while monotonicNow() < deadline {
                let byte = output.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty || byte == Data("\n".utf8) { break }
                third.append(byte)
            }
            let text = String(decoding: third, as: UTF8.self)
            guard text.contains("Syncplay clients on"), let port = text.split(separator: ":").last.flatMap({ Int($0) }) else {
                throw TestFailure("cowatch-server did not say where Syncplay clients connect: \"\(text)\"")
            }
            syncplayPort = port
        }
    }

    /// With `--syncplay-listen`: the port Syncplay clients connect to.
    public private(set) var syncplayPort: Int?

    /// The TLS certificate's fingerprint (`sha256:…`), nil with --no-tls.
    public private(set) var fingerprint: String?

    /// An invite link to `room` on this server.
    public func invite(room: String, secret: String? = nil) -> String {
        var query: [String] = []
        if let secret { query.append("secret=" + (secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? secret)) }
        if let fingerprint { query.append("fp=" + fingerprint) } else { query.append("notls=1") }
        return "cowatch://127.0.0.1:\(port)/\(room)" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
    }

    public var address: String { "127.0.0.1:\(port)" }

    /// CPU seconds (user + system) the server has used so far, from /proc.
    public func cpuSeconds() -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3, utime 14 and stime 15 (1-based in proc(5)).
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Sends SIGTERM and blocks until it has exited; its exit status.
    @discardableResult
    public func terminate() -> Int32 {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Sends SIGTERM and waits, suspended, until it has exited (SIGKILL after `timeout` seconds);
    /// its exit status (or the signal that ended it).
    @discardableResult
    public func stop(timeout: Double = 20) async -> Int32 {
        if process.isRunning { process.terminate() }
        if !(await exit.wait(timeout: timeout)) {
            kill(process.processIdentifier, SIGKILL)
            await exit.wait(timeout: 10)
        }
        return exit.outcome?.status ?? -1
    }

    /// For a `defer`: SIGTERM now; the wait (and a SIGKILL after 20 s) happens in the background.
    public func terminateInBackground() {
        guard process.isRunning else { return }
        process.terminate()
        let server = Unchecked(self)  // kept alive (its deinit would SIGKILL it) until it has ended
        BackgroundCleanup.run {
            let deadline = monotonicNow() + 20
            let process = server.value.process
            while process.isRunning && monotonicNow() < deadline { usleep(10_000) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    /// Killed if it still runs, without waiting here (see `Process.killInBackground`).
    deinit { process.killInBackground() }
}
