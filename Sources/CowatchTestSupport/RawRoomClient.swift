import CowatchClient
import CowatchCore
import CowatchObserver
import Foundation

/// A hand-driven room-protocol client for attack tests: it sends whatever lines a test wants,
/// from a chosen loopback source address (so one "attacker" address can be told apart from the
/// real daemons on 127.0.0.1), and reads the server's lines with a deadline.
///
/// Plain TCP, or TLS through `openssl s_client` (a real TLS client, so tests need no TLS code of
/// their own). Threading: one test task uses it. Reads never block: they poll what has arrived
/// and suspend the task between looks (see `offPool` for why).
public final class RawRoomClient {
    private var fd: Int32 = -1
    private var process: Process?
    private var input: FileHandle?
    private var output: FileHandle?
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:`port` from `source` (any 127.x.y.z). Throws `TestFailure`.
    public init(port: Int, source: String = "127.0.0.1") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("raw client: no socket (errno \(errno))") }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw TestFailure("raw client: cannot bind \(source)") }
        var remote = LoopbackSocket.address(port: port)
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw TestFailure("raw client: cannot connect to port \(port) (errno \(errno))")
        }
    }

    /// Connects through TLS (`openssl s_client`, no certificate checks: the attacker does not care).
    public init(tlsPort port: Int) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_client", "-quiet", "-connect", "127.0.0.1:\(port)"]
        let stdin = Pipe.forChild()
        let stdout = Pipe.forChild()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.runSerially()
        self.process = process
        input = stdin.fileHandleForWriting
        output = stdout.fileHandleForReading
        for end in [output!.fileDescriptor, input!.fileDescriptor] { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK) }
    }

    /// The socket's descriptor (plain TCP only).
    public var descriptor: Int32 { fd }

    public func send(_ line: String) async {
        await send(bytes: Array((line + "\n").utf8))
    }

    public func send(_ message: ClientMessage) async {
        await send(bytes: message.encoded())
    }

    /// Writes all of `bytes` (the task suspended whenever the socket is full), or what the
    /// connection takes before it closes or 30 s pass: what then happened shows in what is read.
    public func send(bytes: [UInt8]) async {
        let deadline = monotonicNow() + 30
        var offset = 0
        while offset < bytes.count, monotonicNow() < deadline {
            let written = bytes[offset...].withUnsafeBytes { raw in
                if let input { Glibc.write(input.fileDescriptor, raw.baseAddress, raw.count) }
                else { Glibc.send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            }
            if written > 0 {
                offset += written
            } else if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                await pause(0.002)
            } else {
                return
            }
        }
    }

    /// The next line from the server, or nil when none came within `timeout` or it closed.
    public func readLine(timeout: Double = 5) async -> String? {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if let newline = buffer.firstIndex(of: 0x0a) {
                let line = Array(buffer[..<newline])
                buffer.removeFirst(newline + 1)
                return String(decoding: line, as: UTF8.self)
            }
            guard let chunk = readChunk() else { return nil }
            if chunk.isEmpty { await pause(0.005) } else { buffer += chunk }
        }
        return nil
    }

    /// Exactly `count` raw bytes (after any line read), or what came before `timeout` or the close.
    public func readBytes(_ count: Int, timeout: Double = 5) async -> [UInt8] {
        let deadline = monotonicNow() + timeout
        while buffer.count < count, monotonicNow() < deadline {
            guard let chunk = readChunk() else { break }
            if chunk.isEmpty { await pause(0.002) } else { buffer += chunk }
        }
        let taken = Array(buffer.prefix(count))
        buffer.removeFirst(taken.count)
        return taken
    }

    /// Lines until one whose JSON `type` is `type` (nil if none in time).
    public func read(type: String, timeout: Double = 5) async -> JSONValue? {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            guard let line = await readLine(timeout: deadline - monotonicNow()) else { return nil }
            if let value = try? JSONValue.parse(Array(line.utf8)), value["type"]?.stringValue == type { return value }
        }
        return nil
    }

    /// True once the server closed the connection (within `timeout`).
    public func isClosed(timeout: Double = 5) async -> Bool {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            guard let chunk = readChunk() else { return true }
            buffer += chunk
            if chunk.isEmpty { await pause(0.01) }
        }
        return false
    }

    /// nil: closed; []: nothing yet.
    private func readChunk() -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: 65_536)
        let count: Int
        if let output {
            count = Glibc.read(output.fileDescriptor, &bytes, bytes.count)
            if count < 0 { return errno == EAGAIN ? [] : nil }
            if count == 0 { return process?.isRunning == true ? [] : nil }
        } else {
            count = recv(fd, &bytes, bytes.count, Int32(MSG_DONTWAIT))
            if count < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? [] : nil }
            if count == 0 { return nil }
        }
        return Array(bytes[..<count])
    }

    public func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
        if let process, process.isRunning {
            // SIGKILL: s_client may have inherited a blocked SIGTERM from the test runner, and
            // then lives until the server drops the connection (seconds, or its idle timeout).
            // Not waited for: Foundation reaps it.
            kill(process.processIdentifier, SIGKILL)
        }
    }

    deinit { close() }
}

extension ClientMessage {
    /// A protocol-3 hello with a fresh nonce, for raw clients.
    public static func rawHello(room: String, name: String, token: String? = nil, resume: Hello.Resume? = nil) -> ClientMessage {
        .hello(.init(room: room, name: name, client: "raw-test", nonce: RoomSecret.nonce(), token: token, resume: resume))
    }
}
