import CowatchClient
import Foundation

/// A real `cowatch-server` process on loopback with an ephemeral port.
public final class ServerProcess {
    public let process = Process()
    public private(set) var port = 0
    public let logPath: String

    /// Starts `cowatch-server --listen 127.0.0.1:0` and reads the port it reports.
    public init(port requestedPort: Int = 0, extraArguments: [String] = []) throws {
        logPath = "/tmp/cowatch-server-\(getpid())-\(UUID().uuidString.prefix(8)).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: try Binaries.path("cowatch-server"))
        process.arguments = ["--listen", "127.0.0.1:\(requestedPort)"] + extraArguments
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
    }

    public var address: String { "127.0.0.1:\(port)" }

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
