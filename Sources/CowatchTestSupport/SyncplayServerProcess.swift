import CowatchClient
import CowatchObserver
import Foundation

/// A real `syncplay-server` (Debian's package, 1.6.9) on a loopback port of its own: the
/// Syncplay suites' peer. Its message of the day is a token of its own, so a test knows that the
/// server answering on the port is this one (a port found free may be taken by a test beside us).
///
/// The server password, when given, reaches it through the environment (`SYNCPLAY_PASSWORD`),
/// never its command line.
public final class SyncplayServerProcess {
    public let process: Process
    public let port: Int
    public let directory: String
    /// The message of the day this server says in its `Hello`.
    public let motd: String
    /// With `tls`: the PEM file of the test authority that signed the server's certificate (for
    /// `localhost` and 127.0.0.1), for `--syncplay-ca-file`.
    public var authorityFile: String? {
        let path = directory + "/tls/authority.pem"
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// Where Debian installs it; nil when it is not installed (`make test-deps` installs it).
    public static var binary: String? {
        ["/usr/bin/syncplay-server", "/usr/local/bin/syncplay-server"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts one and waits (suspended) until it accepts connections. `salt`: for managed rooms
    /// whose names survive a restart; `arguments`: more of the server's own options.
    /// `tls`: a certificate for `localhost` signed by an authority of the test's own (`authorityFile`),
    /// given with `--tls` (the server then answers STARTTLS with yes).
    public static func start(
        password: String? = nil, salt: String? = nil, tls: Bool = false, arguments: [String] = []
    ) async throws -> SyncplayServerProcess {
        guard let binary else { throw TestFailure("syncplay-server is not installed (make test-deps installs it)") }
        let directory = NSTemporaryDirectory() + "cowatch-syncplay-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var arguments = arguments
        if tls {
            try await makeCertificates(in: directory + "/tls")
            arguments += ["--tls", directory + "/tls"]
        }
        let motd = "cowatch-test-\(UUID().uuidString)"
        try motd.write(toFile: directory + "/motd", atomically: true, encoding: .utf8)
        for _ in 0..<5 {
            let port = freeLoopbackPort()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = ["--port", "\(port)", "--motd-file", directory + "/motd"] + (salt.map { ["--salt", $0] } ?? []) + arguments
            var environment = ProcessInfo.processInfo.environment
            environment["SYNCPLAY_PASSWORD"] = password
            environment["PYTHONUNBUFFERED"] = "1"
            process.environment = environment
            process.standardOutput = FileHandle(forWritingAtPath: try logFile(directory))
            process.standardError = process.standardOutput
            let exit = try process.start()
            if await listens(port: port, process: process) {
                return SyncplayServerProcess(process: process, port: port, directory: directory, motd: motd)
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            _ = await exit.wait(timeout: 5)
        }
        throw TestFailure("syncplay-server did not start: \((try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "")")
    }

    private init(process: Process, port: Int, directory: String, motd: String) {
        self.process = process
        self.port = port
        self.directory = directory
        self.motd = motd
    }

    /// An authority and a certificate it signed for localhost, as syncplay-server's `--tls`
    /// directory wants them (cert.pem, privkey.pem, chain.pem; the authority in authority.pem),
    /// made with the openssl tool. Also for `cowatch-server --tls-cert` in tests.
    public static func makeCertificates(in directory: String) async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let script = """
            set -e
            curve="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
            openssl req -x509 $curve -keyout authority.key -out authority.pem -days 2 -subj "/CN=Cowatch test authority"
            openssl req $curve -keyout privkey.pem -out server.csr -subj "/CN=localhost"
            printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n' > server.ext
            openssl x509 -req -in server.csr -CA authority.pem -CAkey authority.key -CAcreateserial -out cert.pem -days 2 -extfile server.ext
            cp authority.pem chain.pem
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", script]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: try logFile(directory))
        let exit = try process.start()
        guard await exit.wait(timeout: 30), process.terminationStatus == 0 else {
            throw TestFailure("openssl could not make the test certificates: \((try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "")")
        }
    }

    private static func logFile(_ directory: String) throws -> String {
        let path = directory + "/server.log"
        FileManager.default.createFile(atPath: path, contents: nil)
        return path
    }

    /// Whether something accepts on 127.0.0.1:`port` within 15 s while `process` runs (Python
    /// and Twisted take a second or two to start).
    private static func listens(port: Int, process: Process) async -> Bool {
        let deadline = monotonicNow() + 15
        while monotonicNow() < deadline, process.isRunning {
            if canConnect(port: port) { return process.isRunning }
            await pause(0.1)
        }
        return false
    }

    private static func canConnect(port: Int) -> Bool {
        guard let fd = LoopbackSocket.connect(port: port) else { return false }
        close(fd)
        return true
    }

    /// What the server printed.
    public var log: String { (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "" }

    /// Killed (if it still runs) and its directory removed, without waiting here.
    deinit {
        let directory = directory
        process.killInBackground { try? FileManager.default.removeItem(atPath: directory) }
    }
}
