import CowatchClient
import CowatchTestSupport
import Foundation
import Testing

/// Connections that open and never speak (not even TLS) hold nothing for long: the room server
/// closes those past the per-address cap at once, and the rest at the hello deadline.
@Suite("Idle connections are closed", .realProcesses)
struct IdleConnectionTests {
    static func connect(port: Int) -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return result == 0 ? descriptor : -1
    }

    /// True once the server has closed (or reset) the connection.
    static func closedByServer(_ descriptor: Int32) -> Bool {
        var byte: UInt8 = 0
        let count = recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    @Test("60 silent TCP connections to a TLS server from one address are all closed within the hello deadline and a grace")
    func silentConnectionsClosed() async throws {
        let server = try await ServerProcess.start(extraArguments: ["--hello-timeout", "1"])
        defer { server.terminateInBackground() }
        let descriptors = (0..<60).map { _ in Self.connect(port: server.port) }.filter { $0 >= 0 }
        defer { descriptors.forEach { close($0) } }
        #expect(descriptors.count == 60)
        // 1 s hello deadline + 2 s for a last line that cannot go out + the timer's second: generous.
        let deadline = monotonicNow() + 10
        var open = descriptors.filter { !Self.closedByServer($0) }
        while !open.isEmpty, monotonicNow() < deadline {
            await pause(0.2)
            open = open.filter { !Self.closedByServer($0) }
        }
        #expect(open.isEmpty, "\(open.count) of \(descriptors.count) still open")
    }
}
