import CowatchClient
import Foundation

/// A TCP balancer on loopback, like the one in front of a cluster: each new connection goes to
/// the next backend in turn that accepts it (a refused one is skipped), bytes pass unchanged
/// both ways (TLS goes end to end). Only ever listens on and connects to 127.0.0.1.
///
/// Threading: create and `close` from one thread; the balancer runs its own threads.
public final class LoopbackBalancer: @unchecked Sendable {
    // @unchecked: `next`, `sockets` and `closed` are only touched under `lock`; the rest is
    // immutable after init.
    public let port: Int
    public let backends: [Int]
    private let listener: Int32
    private let lock = NSLock()
    private var next = 0
    private var sockets: [Int32] = []
    private var closed = false

    /// `backends`: ports on 127.0.0.1, tried in this order (round robin from the first).
    public init(backends: [Int]) throws {
        self.backends = backends
        (listener, port) = try LoopbackSocket.listen(what: "balancer")
        Thread { [self] in acceptLoop() }.start()
    }

    deinit { close() }

    public var address: String { "127.0.0.1:\(port)" }

    public func close() {
        let toClose: [Int32] = lock.withLock {
            guard !closed else { return [] }
            closed = true
            return sockets + [listener]
        }
        for fd in toClose {
            shutdown(fd, Int32(SHUT_RDWR))
            Glibc.close(fd)
        }
    }

    private func acceptLoop() {
        while true {
            let client = acceptClosedOnExec(listener)
            if client < 0 { return }
            let start = lock.withLock { () -> Int in
                defer { next += 1 }
                return next
            }
            var server: Int32 = -1
            for offset in 0..<backends.count {
                let candidate = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                var address = LoopbackSocket.address(port: backends[(start + offset) % backends.count])
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(candidate, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                if connected == 0 {
                    server = candidate
                    break
                }
                Glibc.close(candidate)
            }
            let keep = server >= 0 && lock.withLock { () -> Bool in
                if closed { return false }
                sockets += [client, server]
                return true
            }
            guard keep else {
                Glibc.close(client)
                if server >= 0 { Glibc.close(server) }
                continue
            }
            var one: Int32 = 1
            for fd in [client, server] { setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) }
            pipe(from: client, to: server)
            pipe(from: server, to: client)
        }
    }

    private func pipe(from source: Int32, to destination: Int32) {
        Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            forwarding: while true {
                let count = recv(source, &buffer, buffer.count, 0)
                if count <= 0 { break }
                var offset = 0
                while offset < count {
                    let sent = buffer[offset..<count].withUnsafeBytes { send(destination, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if sent <= 0 { break forwarding }
                    offset += sent
                }
            }
            // Either side gone: end both, as a balancer does when a backend dies.
            shutdown(destination, Int32(SHUT_RDWR))
            shutdown(source, Int32(SHUT_RDWR))
        }.start()
    }
}
