import CowatchCore
import CowatchNet
import CowatchTestSupport
import Foundation
import Logging
import NIOConcurrencyHelpers
import Testing

/// Issue 22/24: a Syncplay client that sends but never reads must not hold its gateway task (and
/// its slot) by filling its socket: the gateway writes from a task of its own and closes the
/// client once lines wait too long or too many (one that sends faster than it is served is slowed:
/// its lines wait in its socket).
@Suite("Syncplay gateway: a client that stops reading is closed, not waited for")
struct SyncplayGatewayStallTests {
    @Test(
        "a joined client asking for the user list without reading the answers is closed, for the reason its bound says",
        arguments: [
            (writeTimeout: 1.0, queueLimit: 1_000_000, reason: "read nothing for 1 s"),
            (writeTimeout: 600.0, queueLimit: 64, reason: "does not read what it is sent"),
        ])
    func stalledReader(writeTimeout: Double, queueLimit: Int, reason: String) async throws {
        let reasons = ReasonLog()
        let logger = Logger(label: "test") { _ in reasons }
        let (roomPorts, roomBound) = AsyncStream.makeStream(of: Int.self)
        let roomPort = NIOLockedValueBox<Int?>(nil)
        let server = RoomServer(host: "127.0.0.1", port: 0, identity: nil, logger: Logger(label: "room")) { _, port in
            roomPort.withLockedValue { $0 = port }
            roomBound.yield(port)
        }
        let runningServer = Task { try await server.run() }
        defer { runningServer.cancel() }
        _ = await roomPorts.first { _ in true }

        var configuration = SyncplayGateway.Configuration(
            host: "127.0.0.1", port: 0, roomPort: { roomPort.withLockedValue { $0 } }, roomKey: nil, guest: .init(stateTimeout: 600))
        configuration.writeTimeout = writeTimeout
        configuration.writeQueueLimit = queueLimit
        let (ports, bound) = AsyncStream.makeStream(of: Int.self)
        let gateway = SyncplayGateway(configuration: configuration, logger: logger, onBound: { _, port in bound.yield(port) })
        let running = Task { try await gateway.run() }
        defer { running.cancel() }
        let port = try #require(await ports.first { _ in true })
        let fd = try #require(Self.connectWithSmallWindow(port: port))
        defer { close(fd) }
        var second = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &second, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &second, socklen_t(MemoryLayout<timeval>.size))

        // Join a room, and read until the gateway's Hello says we are in.
        let hello = SyncplayCodec.encode([.hello(SyncplayHello(username: "mallory", room: "stall", realVersion: "1.7.3"))])
        #expect(hello.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == hello.count)
        let joined = await offPool { () -> Bool in
            var seen: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            let deadline = SystemClock().now() + 15
            while SystemClock().now() < deadline {
                let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if got == 0 { return false }
                if got > 0 { seen += buffer[..<got] }
                if String(decoding: seen, as: UTF8.self).contains("\"motd\"") { return true }
            }
            return false
        }
        try #require(joined, "the gateway did not welcome the client: \(reasons.all)")

        // Ask for the user list 20 000 times (far more answers than the sockets between us hold),
        // never reading them, as fast as the gateway takes the requests (it reads at its own pace:
        // a send that waits a second is tried again), until it closes us or 20 s pass.
        let sent = await offPool { () -> Int in
            let line = Array("{\"List\": null}\r\n".utf8)
            let burst = Array(repeatElement(line, count: 64).joined())
            var total = 0
            let deadline = SystemClock().now() + 20
            while total < 20_000 * line.count, SystemClock().now() < deadline {
                let wrote = burst.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if wrote < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                    break  // closed
                }
                total += wrote
            }
            return total
        }

        // Still not reading until the gateway says it closed us (or long past its bound): reading
        // earlier would free its writer, and a loaded machine may take seconds to get there.
        let patience = SystemClock().now() + (writeTimeout < 600 ? writeTimeout : 0) + 30
        while !reasons.all.contains(where: { $0.contains(reason) }), SystemClock().now() < patience {
            try await Task.sleep(for: .milliseconds(50))
        }

        // Then read: a gateway that closed the client gives end-of-file (or a reset); one still
        // serving it sends on, or goes quiet with the connection open.
        let closed = await offPool { () -> Bool in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let deadline = SystemClock().now() + 20
            while SystemClock().now() < deadline {
                let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if got == 0 { return true }
                if got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR { return true }
            }
            return false
        }
        #expect(closed, "the gateway still serves a client that read nothing (\(sent) bytes of requests sent): \(reasons.all)")
        #expect(reasons.all.contains { $0.contains(reason) }, "\(reasons.all)")
    }

    /// A socket to 127.0.0.1:`port` whose receive buffer is 4 KiB from the start (so the window
    /// it offers stays small and a gateway writing to it stalls after little).
    static func connectWithSmallWindow(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var small: Int32 = 4096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_addr.s_addr = inet_addr("127.0.0.1")
        target.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            close(fd)
            return nil
        }
        return fd
    }
}

/// The reasons the gateway gave for closing its clients (its debug log's metadata).
private final class ReasonLog: LogHandler, Sendable {
    private let reasons = NIOLockedValueBox([String]())
    var all: [String] { reasons.withLockedValue { $0 } }

    var logLevel: Logger.Level {
        get { .debug }
        set {}
    }

    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        guard let reason = event.metadata?["cowatch.syncplay.reason"] else { return }
        reasons.withLockedValue { $0.append("\(reason)") }
    }
}
