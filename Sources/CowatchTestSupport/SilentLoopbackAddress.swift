import Foundation
import CowatchObserver

/// A loopback port where a connection attempt is never answered: a listener whose accept queue
/// is full and never drained, so the kernel drops every further SYN (as a stale address or a
/// firewall that drops does). Local, so it does not depend on what the network does with a
/// private address. Closed by `close()` or when released.
public final class SilentLoopbackAddress: Sendable {
    public let port: Int
    private let descriptors: [Int32]

    /// Throws `TestFailure` when the queue cannot be made to stay full.
    public init() throws {
        let (listener, port) = try LoopbackSocket.listen(backlog: 0, what: "silent address")
        var descriptors = [listener]
        // With a backlog of 0 the queue holds one connection; the next SYN is dropped.
        for _ in 0..<8 {
            guard let (fd, connected) = Self.connectBriefly(port: port) else { break }
            descriptors.append(fd)
            if !connected {
                self.port = port
                self.descriptors = descriptors
                return
            }
        }
        descriptors.forEach { Glibc.close($0) }
        throw TestFailure("silent address: every connection to 127.0.0.1:\(port) was answered")
    }

    public func close() { descriptors.forEach { Glibc.close($0) } }

    /// A non-blocking connect, and whether it completed within 300 ms.
    private static func connectBriefly(port: Int) -> (Int32, Bool)? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return nil }
        var target = LoopbackSocket.address(port: port)
        let started = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if started == 0 { return (fd, true) }
        guard errno == EINPROGRESS else {
            Glibc.close(fd)
            return nil
        }
        var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        return (fd, poll(&poller, 1, 300) > 0 && poller.revents & Int16(POLLOUT) != 0)
    }
}
