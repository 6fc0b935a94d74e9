import CowatchCore
import CowatchObserver
import Foundation

/// A non-blocking Unix stream socket to a control socket, for tests that misbehave on purpose:
/// send without reading, read only later, see exactly what arrives.
///
/// Threading: not thread-safe; one task uses one socket. Its sends and receives never block;
/// `wait` suspends the task. Errors: `TestFailure`.
public final class RawControlSocket {
    public let fd: Int32

    /// Connects to `path` and makes the socket non-blocking. `sendBuffer` shrinks the kernel's
    /// buffer for what this socket sends (which, for a Unix socket, also bounds what waits
    /// unread at the other end).
    public init(path: String, sendBuffer: Int32? = nil) throws {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else { throw TestFailure("path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket(): \(String(cString: strerror(errno)))") }
        if var size = sendBuffer {
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard status == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw TestFailure("cannot connect to \(path): \(reason)")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    deinit { Glibc.close(fd) }

    /// Sends what the socket takes now; returns how many bytes (0 when it is full).
    public func trySend(_ bytes: ArraySlice<UInt8>) throws -> Int {
        let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if sent >= 0 { return sent }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return 0 }
        throw TestFailure("send failed: \(String(cString: strerror(errno)))")
    }

    /// Reads what has arrived; empty when nothing has. Throws when the peer closed.
    public func tryReceive(max: Int = 65_536) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count > 0 { return Array(buffer[0..<count]) }
        if count == 0 { throw TestFailure("the daemon closed the connection") }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return [] }
        throw TestFailure("recv failed: \(String(cString: strerror(errno)))")
    }

    /// Waits up to `timeout` seconds until the socket is readable (or writable, when asked).
    /// Returns (readable, writable). The `poll` runs on a thread of its own while the task is
    /// suspended (`offPool`).
    public func wait(writable: Bool, timeout: Double) async -> (readable: Bool, writable: Bool) {
        let fd = fd
        return await offPool {
            var poller = pollfd(fd: fd, events: Int16(POLLIN) | (writable ? Int16(POLLOUT) : 0), revents: 0)
            let ready = poll(&poller, 1, Int32((timeout * 1000).rounded(.up)))
            guard ready > 0 else { return (false, false) }
            return (poller.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0, poller.revents & Int16(POLLOUT) != 0)
        }
    }
}
