import CowatchClient
import CowatchObserver
import Foundation

/// A real `cowatch-server` process on loopback with an ephemeral port.
public final class ServerProcess {
    public let process = Process()
    public private(set) var port = 0
    public let logPath: String

    /// Where this server keeps its certificate, token key and rooms (kept across a restart
    /// when the same directory is given again).
    public let stateDirectory: String

    /// Starts `cowatch-server --listen 127.0.0.1:0` and reads the port it reports.
    /// `openFiles`: a descriptor limit for the server (run under `ulimit -n`), to see it at its limit.
    /// `executable`: another build of the server (a benchmark's baseline); default the package's own.
    public init(
        port requestedPort: Int = 0, extraArguments: [String] = [], stateDirectory: String? = nil, openFiles: Int? = nil,
        executable: String? = nil
    ) throws {
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
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: logPath)
        try process.run()
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
        if !extraArguments.contains("--no-tls") {
            var second = Data()
            while monotonicNow() < deadline {
                let byte = output.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty || byte == Data("\n".utf8) { break }
                second.append(byte)
            }
            let words = String(decoding: second, as: UTF8.self).split(separator: " ")
            fingerprint = words.first { $0.hasPrefix("sha256:") }.map(String.init)
        }
    }

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

    @discardableResult
    public func terminate() -> Int32 {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// A TCP port on loopback that was free a moment ago.
public func freeLoopbackPort() -> Int {
    guard let (fd, port) = try? LoopbackSocket.listen(what: "free port") else { return 0 }
    close(fd)
    return port
}
