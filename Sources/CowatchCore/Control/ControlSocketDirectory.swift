import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which control-socket directories must be safe, for the daemon before it binds and for
/// clients before they connect.
///
/// The well-known directories, `$XDG_RUNTIME_DIR/cowatch` and `/tmp/cowatch-UID` (both, whichever
/// the environment picks now: a shell without `XDG_RUNTIME_DIR` uses the second), have names
/// anyone can predict, so another local user could create them first. A socket path whose
/// directory is one of them (by name, or the same directory reached another way) is used only
/// when `SafeDirectory` finds it safe: a real directory, ours, mode 0700. A socket path the user
/// names elsewhere (`--control`, `--socket`, `COWATCH_CONTROL`) is the user's choice and its
/// existing directory is used as it is; a missing one is created with mode 0700.
///
/// Threading: stateless; any thread.
/// Errors: `CowatchError` — `unsafe-path` (see `SafeDirectory`), `invalid-configuration` when a
/// directory cannot be created, `not-running` when a client's well-known directory is missing.
public enum ControlSocketDirectory {
    /// The daemon, before binding `socketPath`: creates its directory when missing (a well-known
    /// one with `mkdir 0700` in its existing parent; another with its missing parents, 0700
    /// each) and refuses an unsafe well-known one.
    public static func prepare(
        socketPath: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(CowatchError) {
        let directory = directory(of: socketPath)
        if let wellKnown = wellKnownMatch(directory, environment: environment) {
            try SafeDirectory.ensure(wellKnown)
        } else if !exists(directory) {
            try createWithParents(directory)
        }
    }

    /// A client, before connecting to `socketPath`: refuses (`unsafe-path`) when its directory is
    /// a well-known one that is not safe, and says `not-running` when that directory is missing
    /// (no daemon made it; nothing to connect to). Other directories are not checked.
    public static func verify(
        socketPath: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(CowatchError) {
        guard let wellKnown = wellKnownMatch(directory(of: socketPath), environment: environment) else { return }
        if try SafeDirectory.check(wellKnown) == .missing {
            throw CowatchError(.notRunning, "no cowatchd is listening on \(socketPath) (\(wellKnown) does not exist)")
        }
    }

    /// `$XDG_RUNTIME_DIR/cowatch` (when set) and `/tmp/cowatch-UID`.
    public static func wellKnownDirectories(environment: [String: String]) -> [String] {
        var directories = [ControlSocketPath.defaultDirectory(environment: environment)]
        let fallback = ControlSocketPath.defaultDirectory(environment: [:])
        if fallback != directories[0] { directories.append(fallback) }
        return directories
    }

    /// The well-known directory `directory` is: the same path once written plainly
    /// (`//`, `/./`, a trailing `/` and a relative path do not hide it), or the same directory on
    /// disk (same device and inode, so a symbolic link to it does not hide it either); nil when none.
    /// A directory that a well-known name merely links to is not well-known itself.
    public static func wellKnownMatch(_ directory: String, environment: [String: String]) -> String? {
        let plain = normalized(directory)
        let candidates = wellKnownDirectories(environment: environment)
        if let same = candidates.first(where: { normalized($0) == plain }) { return same }
        var info = stat()
        guard stat(directory, &info) == 0 else { return nil }
        return candidates.first { candidate in
            // lstat: a well-known name that is itself a link is refused by name, above; it does
            // not make the directory it points to (a real one, named explicitly) well-known.
            var other = stat()
            return lstat(candidate, &other) == 0 && other.st_dev == info.st_dev && other.st_ino == info.st_ino
        }
    }

    /// The directory part of a socket path: "." for a bare name, "/" for a file in the root.
    public static func directory(of socketPath: String) -> String {
        guard let slash = socketPath.lastIndex(of: "/") else { return "." }
        let head = String(socketPath[..<slash])
        return head.isEmpty ? "/" : head
    }

    /// An absolute path without empty or `.` components and without a trailing slash. `..` is
    /// kept: resolving it lexically would be wrong past a symbolic link.
    static func normalized(_ path: String) -> String {
        var full = path
        if !full.hasPrefix("/") {
            var cwd = ""
            if let pointer = getcwd(nil, 0) {
                cwd = String(cString: pointer)
                free(pointer)
            }
            full = cwd + "/" + full
        }
        let parts = full.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
        return "/" + parts.joined(separator: "/")
    }

    private static func createWithParents(_ directory: String) throws(CowatchError) {
        let parent = self.directory(of: directory)
        if parent != directory && !exists(parent) {
            try createWithParents(parent)
        }
        if mkdir(directory, 0o700) != 0 {
            let code = errno
            guard code == EEXIST else {
                throw CowatchError(.invalidConfiguration, "cannot create \(directory): \(String(cString: strerror(code)))")
            }
        }
    }

    /// Something is at `path`, following symbolic links.
    private static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }
}
