#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a daemon's control socket lives by default.
public enum ControlSocketPath {
    /// The directory: `$XDG_RUNTIME_DIR/cowatch`, or `/tmp/cowatch-UID` when that variable is unset.
    public static func defaultDirectory(environment: [String: String]) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return runtime + "/cowatch"
        }
        return "/tmp/cowatch-\(getuid())"
    }

    /// `DIRECTORY/NAME.sock`.
    public static func defaultPath(name: String, environment: [String: String]) -> String {
        defaultDirectory(environment: environment) + "/\(name).sock"
    }

    /// The login name: `$USER`, else the password database, else "viewer"; made a valid participant name.
    public static func defaultName(environment: [String: String]) -> String {
        var candidate = environment["USER"] ?? ""
        if candidate.isEmpty, let entry = getpwuid(getuid()), let login = entry.pointee.pw_name {
            candidate = String(cString: login)
        }
        let cleaned = String(candidate.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0)) }.prefix(ParticipantName.maxLength))
        return (cleaned.isEmpty || cleaned.hasPrefix(".")) ? "viewer" : cleaned
    }

    /// True when something accepts connections on `path` (a live daemon's socket).
    /// Threading: any thread.
    public static func isListening(path: String) -> Bool {
        guard let fd = try? connect(path: path) else { return false }
        close(fd)
        return true
    }

    /// Connects a Unix stream socket to `path`; returns its descriptor (close-on-exec), which the
    /// caller owns. Errors: `invalid-configuration` (a path longer than a socket address holds),
    /// `io-error` (no socket), `not-running` (nobody accepts there).
    ///
    /// Threading: any thread; blocks only as long as `connect(2)` on a Unix socket does.
    public static func connect(path: String) throws(CowatchError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else {
            throw CowatchError(.invalidConfiguration, "socket path is longer than \(capacity - 1) bytes: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw CowatchError(.ioError, "socket(): \(String(cString: strerror(errno)))") }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        if status != 0 {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw CowatchError(.notRunning, "no cowatchd is listening on \(path) (\(reason))")
        }
        return fd
    }
}
