import CowatchCore
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Two threads that connect and close at once, as fast as they can, until stopped: the
/// connections a server must survive while it starts and stops.
///
/// Threading: any thread; `stop()` (or `finish()`) once, and it waits for both threads.
public final class ConnectionChurn: Sendable {
    private let stopped = Locked(false)
    private let count = Locked(0)
    private let done = DispatchGroup()

    public init(_ connect: @escaping @Sendable () -> Int32) {
        for _ in 0..<2 {
            done.enter()
            Thread.detachNewThread { [self] in
                while !stopped.withLock({ $0 }) {
                    let descriptor = connect()
                    if descriptor >= 0 {
                        count.withLock { $0 += 1 }
                        close(descriptor)
                    } else {
                        usleep(100)
                    }
                }
                done.leave()
            }
        }
    }

    public var opened: Int { count.withLock { $0 } }

    /// Stops both threads and blocks until they have ended.
    public func stop() {
        stopped.withLock { $0 = true }
        done.wait()
    }

    /// The same, suspended (not blocked) until they have ended. (Not `stop`: the in-process
    /// suites call that one from async tests as it is.)
    public func finish() async {
        stopped.withLock { $0 = true }
        await offPool { [done] in done.wait() }
    }

    public static func unixConnect(_ path: String) -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if result != 0 { close(descriptor); return -1 }
        return descriptor
    }

    public static func tcpConnect(_ port: Int) -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 { close(descriptor); return -1 }
        return descriptor
    }
}

