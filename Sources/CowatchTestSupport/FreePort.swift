import Foundation
import Synchronization

/// A TCP port on loopback that was free a moment ago, for a process the test starts and tells
/// which port to listen on.
///
/// Chosen outside the kernel's ephemeral range (`ip_local_port_range`): a port the system hands
/// out for port 0 could be taken by any outgoing connection between this call and the process's
/// bind, and on a busy test run one was. Ports are handed out in turn from a random start, never
/// twice in one run until the range wraps, and each is checked free before it is returned.
/// Thread-safe. Returns 0 when no port could be had (the process's start then fails clearly).
public func freeLoopbackPort() -> Int {
    for _ in 0..<PortPool.shared.count {
        let port = PortPool.shared.next()
        if let (fd, _) = try? LoopbackSocket.listen(port: port, what: "free port") {
            close(fd)
            return port
        }
    }
    guard let (fd, port) = try? LoopbackSocket.listen(what: "free port") else { return 0 }
    close(fd)
    return port
}

/// The ports `freeLoopbackPort` hands out: the larger span outside the ephemeral range.
final class PortPool: Sendable {
    static let shared = PortPool()

    let range: ClosedRange<Int>
    private let cursor: Mutex<Int>

    var count: Int { range.count }

    init() {
        let ephemeral = Self.ephemeralRange() ?? 32768...60999
        let above = (ephemeral.upperBound + 1)...65535
        let below = 10000...max(10000, ephemeral.lowerBound - 1)
        range = above.count >= below.count ? above : below
        cursor = Mutex(Int.random(in: 0..<range.count))
    }

    func next() -> Int {
        cursor.withLock { cursor in
            defer { cursor = (cursor + 1) % range.count }
            return range.lowerBound + cursor
        }
    }

    /// The kernel's range for ports picked on connect and bind to 0, or nil when unreadable.
    static func ephemeralRange() -> ClosedRange<Int>? {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8) else { return nil }
        let bounds = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        guard bounds.count == 2, bounds[0] <= bounds[1] else { return nil }
        return bounds[0]...bounds[1]
    }
}
