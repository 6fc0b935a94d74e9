import CowatchCore
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Why a room server cannot listen, in a person's words.
///
/// Threading: pure functions, except `ensureFree`, which binds a socket for a moment; any thread.
public enum ListenError {
    /// `address-in-use` for a taken port (NIO's own text names internal calls), else `io-error`.
    public static func describe(_ error: any Error, host: String, port: Int) -> CowatchError {
        if let io = error as? IOError, io.errnoCode == EADDRINUSE {
            return inUse(port)
        }
        return CowatchError(.ioError, "cannot listen on \(host):\(port): \(error)")
    }

    static func inUse(_ port: Int) -> CowatchError {
        CowatchError(.addressInUse, "port \(port) is already in use — another cowatchd --host or cowatch-server?")
    }

    /// Throws `address-in-use` when `port` on `host` (an IPv4 or IPv6 literal) is taken, before a
    /// daemon starts anything that would use it. A name or port 0 is not checked here (the
    /// server's own bind says so).
    public static func ensureFree(host: String, port: Int) throws(CowatchError) {
        guard port > 0, let address = try? SocketAddress(ipAddress: host, port: port) else { return }
        let descriptor = socket(Int32(address.protocol.rawValue), Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var yes: Int32 = 1
        // As the server binds: a socket of ours in TIME_WAIT does not count.
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        let result = address.withSockAddr { pointer, size in bind(descriptor, pointer, socklen_t(size)) }
        if result != 0 && errno == EADDRINUSE { throw inUse(port) }
    }
}
