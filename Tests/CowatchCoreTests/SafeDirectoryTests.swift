import Foundation
import Testing

@testable import CowatchCore

#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory from `mkdtemp` (mode 0700, ours), removed by `remove()`.
private struct Scratch {
    let path: String

    init() throws {
        var template = Array("/tmp/cowatch-safedir-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CowatchError(.ioError, "mkdtemp failed") }
        path = String(cString: made)
    }

    /// Makes `name` inside with `mkdir` and then exactly `mode` (chmod ignores the umask).
    func directory(_ name: String, mode: mode_t) -> String {
        let inner = path + "/" + name
        mkdir(inner, 0o700)
        chmod(inner, mode)
        return inner
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

private func mode(of path: String) -> mode_t {
    var info = stat()
    lstat(path, &info)
    return info.st_mode & 0o7777
}

private func unsafeMessage(_ body: () throws(CowatchError) -> Void) -> String? {
    do {
        try body()
        return nil
    } catch {
        return error.code == .unsafePath ? error.message : "wrong code \(error)"
    }
}

@Suite("Safe socket directories")
struct SafeDirectoryTests {
    @Test("a real directory of ours with mode exactly 0700 is the only safe one")
    func verdicts() {
        let me: uid_t = 1000
        #expect(SafeDirectory.problem(path: "/d", mode: S_IFDIR | 0o700, owner: me, user: me) == nil)
        let cases: [(mode_t, uid_t, String)] = [
            (S_IFDIR | 0o755, me, "chmod 700"),
            (S_IFDIR | 0o770, me, "mode 0770"),
            (S_IFDIR | 0o701, me, "mode 0701"),
            (S_IFDIR | 0o1700, me, "mode 1700"),
            (S_IFDIR | 0o500, me, "must be 0700"),
            (S_IFDIR | 0o700, 65534, "belongs to uid 65534"),
            (S_IFLNK | 0o777, me, "symbolic link"),
            (S_IFREG | 0o700, me, "not a directory"),
            (S_IFSOCK | 0o700, me, "not a directory"),
        ]
        for (mode, owner, mentions) in cases {
            let problem = SafeDirectory.problem(path: "/d", mode: mode, owner: owner, user: me)
            #expect(problem?.contains(mentions) == true, "\(String(mode, radix: 8)) uid \(owner): \(problem ?? "safe")")
            #expect(problem?.contains("/d") == true)
        }
    }

    @Test("ensure creates a missing directory with mode 0700, and a safe one passes check")
    func creates() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = scratch.path + "/cowatch"
        #expect(try SafeDirectory.check(path) == .missing)
        try SafeDirectory.ensure(path)
        #expect(mode(of: path) == 0o700)
        #expect(try SafeDirectory.check(path) == .safe)
        try SafeDirectory.ensure(path)  // existing and safe: fine
    }

    @Test("ensure needs the parent to exist")
    func noParent() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        #expect(throws: CowatchError(.invalidConfiguration, "")) {
            try SafeDirectory.ensure(scratch.path + "/missing/cowatch")
        }
    }

    @Test("a directory open to others, or with extra bits, is refused and left alone", arguments: [0o755, 0o750, 0o711, 0o777, 0o1777, 0o2700])
    func badModes(mode badMode: Int) throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = scratch.directory("cowatch", mode: mode_t(badMode))
        let message = unsafeMessage { () throws(CowatchError) in try SafeDirectory.ensure(path) }
        #expect(message?.contains("chmod 700 \(path)") == true, "\(message ?? "accepted")")
        #expect(unsafeMessage { () throws(CowatchError) in try SafeDirectory.check(path) } != nil)
        #expect(mode(of: path) == mode_t(badMode), "the check must not repair it silently")
    }

    @Test("a symbolic link is refused even when it points to a safe directory of ours")
    func symlink() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let target = scratch.directory("real", mode: 0o700)
        let link = scratch.path + "/cowatch"
        #expect(Glibc.symlink(target, link) == 0)
        let message = unsafeMessage { () throws(CowatchError) in try SafeDirectory.ensure(link) }
        #expect(message?.contains("symbolic link") == true, "\(message ?? "accepted")")
        #expect(unsafeMessage { () throws(CowatchError) in try SafeDirectory.check(link) } != nil)
    }

    @Test("a file where the directory should be is refused")
    func regularFile() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = scratch.path + "/cowatch"
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        #expect(unsafeMessage { () throws(CowatchError) in try SafeDirectory.ensure(path) }?.contains("not a directory") == true)
    }

    @Test("a directory of another user is refused (needs root to make one)", .enabled(if: getuid() == 0))
    func otherOwner() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let path = scratch.directory("cowatch", mode: 0o700)
        #expect(chown(path, 65534, 65534) == 0)
        let message = unsafeMessage { () throws(CowatchError) in try SafeDirectory.ensure(path) }
        #expect(message?.contains("belongs to uid 65534") == true, "\(message ?? "accepted")")
        // The same directory is safe for its owner.
        #expect(try SafeDirectory.check(path, user: 65534) == .safe)
    }

    @Test("the well-known directories are checked wherever the socket path names them")
    func wellKnownMatch() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let environment = ["XDG_RUNTIME_DIR": scratch.path]
        let cowatch = scratch.directory("cowatch", mode: 0o700)
        let directories = ControlSocketDirectory.wellKnownDirectories(environment: environment)
        #expect(directories == [cowatch, "/tmp/cowatch-\(getuid())"])
        for spelling in [cowatch, cowatch + "/", scratch.path + "//cowatch", scratch.path + "/./cowatch"] {
            #expect(ControlSocketDirectory.wellKnownMatch(spelling, environment: environment) == cowatch, "\(spelling)")
        }
        let alias = scratch.path + "/alias"
        #expect(Glibc.symlink(cowatch, alias) == 0)
        #expect(ControlSocketDirectory.wellKnownMatch(alias, environment: environment) == cowatch)
        let elsewhere = scratch.directory("elsewhere", mode: 0o755)
        #expect(ControlSocketDirectory.wellKnownMatch(elsewhere, environment: environment) == nil)
        // A well-known name that is a link is refused by name; what it points to stays the user's.
        let other = try Scratch()
        defer { other.remove() }
        let real = other.directory("real", mode: 0o700)
        #expect(Glibc.symlink(real, other.path + "/cowatch") == 0)
        let linked = ["XDG_RUNTIME_DIR": other.path]
        #expect(ControlSocketDirectory.wellKnownMatch(other.path + "/cowatch", environment: linked) == other.path + "/cowatch")
        #expect(ControlSocketDirectory.wellKnownMatch(real, environment: linked) == nil)
        #expect(ControlSocketDirectory.directory(of: "alice.sock") == ".")
        #expect(ControlSocketDirectory.directory(of: "/alice.sock") == "/")
        #expect(ControlSocketDirectory.directory(of: "/a/b/alice.sock") == "/a/b")
    }

    @Test("a client refuses an unsafe well-known directory, says not-running for a missing one, and trusts others")
    func verify() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let environment = ["XDG_RUNTIME_DIR": scratch.path]
        let socket = scratch.path + "/cowatch/alice.sock"
        #expect(throws: CowatchError(.notRunning, "")) {
            try ControlSocketDirectory.verify(socketPath: socket, environment: environment)
        }
        _ = scratch.directory("cowatch", mode: 0o755)
        #expect(throws: CowatchError(.unsafePath, "")) {
            try ControlSocketDirectory.verify(socketPath: socket, environment: environment)
        }
        chmod(scratch.path + "/cowatch", 0o700)
        try ControlSocketDirectory.verify(socketPath: socket, environment: environment)
        // An explicit path elsewhere is the user's choice.
        let elsewhere = scratch.directory("elsewhere", mode: 0o755)
        try ControlSocketDirectory.verify(socketPath: elsewhere + "/alice.sock", environment: environment)
    }

    @Test("the daemon creates the well-known directory 0700, refuses an unsafe one, and makes other missing ones")
    func prepare() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let environment = ["XDG_RUNTIME_DIR": scratch.path]
        try ControlSocketDirectory.prepare(socketPath: scratch.path + "/cowatch/alice.sock", environment: environment)
        #expect(mode(of: scratch.path + "/cowatch") == 0o700)
        chmod(scratch.path + "/cowatch", 0o777)
        #expect(throws: CowatchError(.unsafePath, "")) {
            try ControlSocketDirectory.prepare(socketPath: scratch.path + "/cowatch/alice.sock", environment: environment)
        }
        // The parent of the well-known directory must exist: it is not made up.
        #expect(throws: CowatchError(.invalidConfiguration, "")) {
            try ControlSocketDirectory.prepare(
                socketPath: scratch.path + "/gone/cowatch/alice.sock", environment: ["XDG_RUNTIME_DIR": scratch.path + "/gone"])
        }
        try ControlSocketDirectory.prepare(socketPath: scratch.path + "/a/b/alice.sock", environment: environment)
        #expect(mode(of: scratch.path + "/a") & 0o077 == 0)
        #expect(mode(of: scratch.path + "/a/b") & 0o077 == 0)
        let shared = scratch.directory("shared", mode: 0o755)
        try ControlSocketDirectory.prepare(socketPath: shared + "/alice.sock", environment: environment)
        #expect(mode(of: shared) == 0o755)
    }
}
