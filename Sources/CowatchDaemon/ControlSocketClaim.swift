import CowatchCore

#if canImport(Glibc)
import Glibc
#endif

/// Makes the control socket's path ready to bind, or explains why it cannot be.
///
/// The directory is prepared by `ControlSocketDirectory.prepare`: a well-known one
/// (`$XDG_RUNTIME_DIR/cowatch`, `/tmp/cowatch-UID`) is created with mode 0700 when missing and
/// must otherwise be a real directory of ours with mode 0700 (`unsafe-path`); another missing
/// directory is created with mode 0700. A socket file whose daemon is alive means another
/// `cowatchd` owns the path: refuse (`already-running`). A socket file nobody answers on is stale
/// and removed. Anything else at the path (a regular file, say) is never deleted: refuse.
///
/// Threading: stateless; called once at start-up, before the control server binds.
/// Errors: `CowatchError` — `unsafe-path`, `invalid-configuration`, `already-running`.
enum ControlSocketClaim {
    static func claim(path: String) throws(CowatchError) {
        try ControlSocketDirectory.prepare(socketPath: path)
        var info = stat()
        guard lstat(path, &info) == 0 else { return }  // nothing there
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw CowatchError(.invalidConfiguration, "\(path) exists and is not a socket; not touching it")
        }
        if ControlSocketPath.isListening(path: path) {
            throw CowatchError(.alreadyRunning, "another cowatchd is running on \(path)")
        }
        unlink(path)
    }
}
