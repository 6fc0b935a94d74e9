#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where persistent state lives (the server's certificate and key, `known_hosts`) and how files
/// holding secrets are read and written.
///
/// The directory is `$XDG_STATE_HOME/cowatch`, else `$HOME/.local/state/cowatch` (a relative
/// `XDG_STATE_HOME` is ignored, as the XDG spec asks). It is created 0700 and refused when it is a
/// symbolic link, not a directory, owned by someone else, or writable by group or others. Files
/// are written 0600 through a temporary file and `rename`, so a reader sees the old or the new
/// contents, never half of them.
///
/// Threading: stateless; any thread. The functions block on the file system.
/// Errors: `unsafe-path` for a directory or file that is not safe; `io-error` for a failed read or
/// write; `invalid-configuration` when neither `XDG_STATE_HOME` nor a home directory is known.
public enum StatePaths {
    /// The state directory (not created; see `ensureDirectory`).
    public static func defaultDirectory(environment: [String: String]) throws(CowatchError) -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return trimmingSlashes(state) + "/cowatch"
        }
        var home = environment["HOME"] ?? ""
        if !home.hasPrefix("/"), let entry = getpwuid(geteuid()), let directory = entry.pointee.pw_dir {
            home = String(cString: directory)
        }
        guard home.hasPrefix("/") else {
            throw CowatchError(.invalidConfiguration, "no state directory: set XDG_STATE_HOME or HOME to an absolute path")
        }
        return trimmingSlashes(home) + "/.local/state/cowatch"
    }

    /// Creates `path` (and missing parents) with mode 0700, then checks the final directory:
    /// not a symbolic link, a directory, owned by this user, not writable by group or others.
    /// Existing parents are not checked (they are typically the home directory).
    public static func ensureDirectory(_ path: String) throws(CowatchError) {
        guard !path.isEmpty else { throw CowatchError(.invalidConfiguration, "the state directory path is empty") }
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 {
                let error = errno
                guard error == EEXIST else {
                    throw CowatchError(.ioError, "cannot create the directory \(prefix): \(describe(error))")
                }
            }
        }
        try checkDirectory(path)
    }

    /// Throws `unsafe-path` unless `path` is a real directory (not a symbolic link) owned by this
    /// user and not writable by group or others.
    public static func checkDirectory(_ path: String) throws(CowatchError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw CowatchError(.ioError, "cannot inspect the directory \(path): \(describe(errno))")
        }
        if info.st_mode & S_IFMT == S_IFLNK {
            throw CowatchError(.unsafePath, "\(path) is a symbolic link; cowatch keeps secrets only in a real directory")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw CowatchError(.unsafePath, "\(path) is not a directory")
        }
        guard info.st_uid == geteuid() else {
            throw CowatchError(.unsafePath, "\(path) belongs to user id \(info.st_uid), not to this user (\(geteuid()))")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw CowatchError(
                .unsafePath,
                "\(path) is writable by group or others (mode \(String(info.st_mode & 0o7777, radix: 8))); run: chmod 700 \(path)")
        }
    }

    /// Writes a private file (0600) named `name` in the state directory, creating the directory
    /// (0700) if needed; returns its path.
    @discardableResult
    public static func writeStateFile(
        _ name: String, contents: some Collection<UInt8>, environment: [String: String]
    ) throws(CowatchError) -> String {
        let directory = try defaultDirectory(environment: environment)
        try ensureDirectory(directory)
        let path = directory + "/" + name
        try writeAtomically(path, contents: contents)
        return path
    }

    /// Writes `contents` to `path` with `mode` (default 0600): a temporary file in the same
    /// directory, flushed to disk, then renamed over `path`. The directory should have passed
    /// `ensureDirectory`. A symbolic link at `path` is replaced, not followed.
    public static func writeAtomically(_ path: String, contents: some Collection<UInt8>, mode: mode_t = 0o600) throws(CowatchError) {
        let temporary = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw CowatchError(.ioError, "cannot create \(temporary): \(describe(errno))") }
        var failure: CowatchError?
        let bytes = Array(contents)
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if result < 0 {
                if errno == EINTR { continue }
                failure = CowatchError(.ioError, "cannot write \(temporary): \(describe(errno))")
                break
            }
            written += result
        }
        if failure == nil, fchmod(fd, mode) != 0 { failure = CowatchError(.ioError, "cannot set the mode of \(temporary): \(describe(errno))") }
        if failure == nil, fsync(fd) != 0 { failure = CowatchError(.ioError, "cannot flush \(temporary): \(describe(errno))") }
        if close(fd) != 0, failure == nil { failure = CowatchError(.ioError, "cannot close \(temporary): \(describe(errno))") }
        if failure == nil, rename(temporary, path) != 0 {
            failure = CowatchError(.ioError, "cannot rename \(temporary) to \(path): \(describe(errno))")
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
    }

    /// Reads a whole file (at most `maxBytes`), or nil when it does not exist. Symbolic links are
    /// followed unless `requirePrivate`; with `requirePrivate` the file must be a regular file
    /// (not a link) owned by this user with no permissions for group or others (`unsafe-path`
    /// otherwise, with the `chmod` to run).
    public static func readFile(_ path: String, maxBytes: Int = 1 << 20, requirePrivate: Bool = false) throws(CowatchError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | (requirePrivate ? O_NOFOLLOW : 0))
        guard fd >= 0 else {
            let error = errno
            if error == ENOENT { return nil }
            if error == ELOOP && requirePrivate {
                throw CowatchError(.unsafePath, "\(path) is a symbolic link; cowatch reads its secrets only from a real file")
            }
            throw CowatchError(.ioError, "cannot open \(path): \(describe(error))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw CowatchError(.ioError, "cannot inspect \(path): \(describe(errno))") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw CowatchError(.ioError, "\(path) is not a regular file") }
        if requirePrivate {
            guard info.st_uid == geteuid() else {
                throw CowatchError(.unsafePath, "\(path) belongs to user id \(info.st_uid), not to this user (\(geteuid()))")
            }
            guard info.st_mode & 0o077 == 0 else {
                throw CowatchError(
                    .unsafePath,
                    "\(path) is readable or writable by group or others (mode \(String(info.st_mode & 0o7777, radix: 8))); run: chmod 600 \(path)")
            }
        }
        guard Int(info.st_size) <= maxBytes else { throw CowatchError(.ioError, "\(path) is larger than \(maxBytes) bytes") }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw CowatchError(.ioError, "cannot read \(path): \(describe(errno))")
            }
            if count == 0 { break }
            bytes += buffer[0..<count]
            guard bytes.count <= maxBytes else { throw CowatchError(.ioError, "\(path) is larger than \(maxBytes) bytes") }
        }
        return bytes
    }

    private static func trimmingSlashes(_ path: String) -> String {
        var path = Substring(path)
        while path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        return path == "/" ? "" : String(path)
    }

    private static func describe(_ error: Int32) -> String {
        String(cString: strerror(error))
    }
}
