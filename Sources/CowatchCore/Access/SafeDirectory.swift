#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Checks, and creates, a directory that only its user may use: a directory that holds sockets
/// in a shared place such as `/tmp`, where another local user could otherwise create it first
/// and sit between a client and its daemon.
///
/// Safe means: a real directory (not a symbolic link, checked with `lstat`), owned by the user,
/// with mode exactly 0700 (no group or other bits, no set-id or sticky bit).
///
/// Threading: stateless; any thread. The checks read the file system once, with no retries.
/// Errors: `CowatchError` `unsafe-path` with a message saying what is wrong and what to do;
/// `invalid-configuration` when a directory cannot be created.
public enum SafeDirectory {
    /// What `check` found.
    public enum Status: Sendable, Equatable {
        /// The directory exists and is safe.
        case safe
        /// Nothing is at the path.
        case missing
    }

    /// Why a file with this `lstat` mode and owner is not a safe directory for `user`, as a
    /// sentence naming `path` and the remedy; nil when it is safe. Pure.
    public static func problem(path: String, mode: mode_t, owner: uid_t, user: uid_t) -> String? {
        let type = mode & S_IFMT
        if type == S_IFLNK {
            return "\(path) is a symbolic link, not a directory; someone else may have put it there. "
                + "Remove it (rm \(path)) and try again"
        }
        guard type == S_IFDIR else {
            return "\(path) is not a directory. Remove it (rm \(path)) and try again"
        }
        guard owner == user else {
            return "\(path) belongs to uid \(owner), not to you (uid \(user)): another user may be trying to "
                + "intercept cowatch. Have it removed (by its owner or root), or set XDG_RUNTIME_DIR"
        }
        let permissions = mode & 0o7777
        guard permissions == 0o700 else {
            return "\(path) has mode \(octal(permissions)) but must be 0700 so that only you can use it. "
                + "Run chmod 700 \(path) (or remove it) and try again"
        }
        return nil
    }

    /// Checks the directory at `path` without following a symbolic link.
    /// Returns `.missing` when nothing is there. Throws `unsafe-path` when something unsafe is,
    /// `io-error` when it cannot be examined.
    @discardableResult
    public static func check(_ path: String, user: uid_t = getuid()) throws(CowatchError) -> Status {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            let code = errno
            if code == ENOENT { return .missing }
            throw CowatchError(.ioError, "cannot examine \(path): \(String(cString: strerror(code)))")
        }
        if let problem = problem(path: path, mode: info.st_mode, owner: info.st_uid, user: user) {
            throw CowatchError(.unsafePath, problem)
        }
        return .safe
    }

    /// Makes sure a safe directory is at `path`: creates it with `mkdir(path, 0700)` when
    /// missing (its parent must exist; the mode is set again afterwards, whatever the umask),
    /// then checks it. Throws `unsafe-path` for an unsafe one, `invalid-configuration` when it
    /// cannot be created (no parent, no permission).
    public static func ensure(_ path: String, user: uid_t = getuid()) throws(CowatchError) {
        if mkdir(path, 0o700) == 0 {
            // Only the umask can have removed bits; `chmod` cannot follow a link here: we made it.
            chmod(path, 0o700)
        } else {
            let code = errno
            guard code == EEXIST else {
                let reason = code == ENOENT
                    ? "its parent directory does not exist" : String(cString: strerror(code))
                throw CowatchError(.invalidConfiguration, "cannot create \(path): \(reason)")
            }
        }
        guard try check(path, user: user) == .safe else {
            throw CowatchError(.invalidConfiguration, "cannot create \(path): it vanished while being checked")
        }
    }

    static func octal(_ permissions: mode_t) -> String {
        let digits = String(permissions, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
