#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing

@testable import CowatchCore

/// A fresh directory under /tmp, removed (with everything in it) by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/cowatch-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CowatchError(.ioError, "mkdtemp failed") }
        path = String(cString: made)
    }

    func remove() {
        _ = system("rm -rf '\(path)'")
    }
}

@Suite("State directory and secret files")
struct StatePathsTests {
    static func mode(_ path: String) -> mode_t {
        var info = stat()
        lstat(path, &info)
        return info.st_mode & 0o7777
    }

    @Test("XDG_STATE_HOME, else HOME/.local/state; relative values ignored")
    func defaultDirectory() throws {
        #expect(try StatePaths.defaultDirectory(environment: ["XDG_STATE_HOME": "/x/state", "HOME": "/home/a"]) == "/x/state/cowatch")
        #expect(try StatePaths.defaultDirectory(environment: ["XDG_STATE_HOME": "/x/state/", "HOME": "/home/a"]) == "/x/state/cowatch")
        #expect(try StatePaths.defaultDirectory(environment: ["HOME": "/home/a"]) == "/home/a/.local/state/cowatch")
        #expect(try StatePaths.defaultDirectory(environment: ["XDG_STATE_HOME": "rel", "HOME": "/home/a/"]) == "/home/a/.local/state/cowatch")
        #expect(try StatePaths.defaultDirectory(environment: ["XDG_STATE_HOME": "", "HOME": "/home/a"]) == "/home/a/.local/state/cowatch")
        // No HOME: the password database's home directory, which is absolute.
        #expect(try StatePaths.defaultDirectory(environment: [:]).hasPrefix("/"))
    }

    @Test("creates missing parents and the directory 0700; accepts it again")
    func creates() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let path = temporary.path + "/a/b/cowatch"
        try StatePaths.ensureDirectory(path)
        #expect(Self.mode(path) == 0o700)
        #expect(Self.mode(temporary.path + "/a") == 0o700)
        try StatePaths.ensureDirectory(path)
    }

    @Test("refuses a symbolic link, a file, and a group- or other-writable directory")
    func refusesUnsafe() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let real = temporary.path + "/real"
        try StatePaths.ensureDirectory(real)
        let link = temporary.path + "/link"
        #expect(symlink(real, link) == 0)
        #expect(throws: CowatchError(.unsafePath, "")) { try StatePaths.ensureDirectory(link) }

        let file = temporary.path + "/file"
        try StatePaths.writeAtomically(file, contents: Array("x".utf8))
        #expect(throws: CowatchError(.unsafePath, "")) { try StatePaths.ensureDirectory(file) }

        for mode: mode_t in [0o720, 0o702, 0o777] {
            #expect(chmod(real, mode) == 0)
            let error = #expect(throws: CowatchError.self) { try StatePaths.ensureDirectory(real) }
            #expect(error?.code == .unsafePath)
            #expect(error?.message.contains("chmod 700 \(real)") == true)
        }
        #expect(chmod(real, 0o750) == 0)
        try StatePaths.ensureDirectory(real)  // group may read
    }

    @Test("refuses a directory and a private file owned by someone else", .enabled(if: geteuid() == 0, "needs root to chown"))
    func refusesOtherOwner() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let directory = temporary.path + "/theirs"
        try StatePaths.ensureDirectory(directory)
        let file = directory + "/key"
        try StatePaths.writeAtomically(file, contents: Array("k".utf8))
        #expect(chown(file, 54321, 54321) == 0)
        let fileError = #expect(throws: CowatchError.self) { try StatePaths.readFile(file, requirePrivate: true) }
        #expect(fileError?.code == .unsafePath)
        #expect(fileError?.message.contains("user id 54321") == true)
        #expect(chown(directory, 54321, 54321) == 0)
        let directoryError = #expect(throws: CowatchError.self) { try StatePaths.ensureDirectory(directory) }
        #expect(directoryError?.code == .unsafePath)
        #expect(directoryError?.message.contains("user id 54321") == true)
    }

    @Test("writes 0600 atomically, replaces, leaves no temporary file, reads back")
    func writesAndReads() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let path = temporary.path + "/secret"
        #expect(try StatePaths.readFile(path) == nil)
        try StatePaths.writeAtomically(path, contents: Array("one".utf8))
        #expect(Self.mode(path) == 0o600)
        #expect(try StatePaths.readFile(path, requirePrivate: true) == Array("one".utf8))
        let large = [UInt8](repeating: 7, count: 100_000)
        try StatePaths.writeAtomically(path, contents: large)
        #expect(try StatePaths.readFile(path) == large)
        #expect(throws: CowatchError(.ioError, "")) { try StatePaths.readFile(path, maxBytes: 1000) }
        let entries = try #require(opendir(temporary.path))
        var names: [String] = []
        while let entry = readdir(entries) {
            names.append(withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) })
        }
        closedir(entries)
        #expect(names.sorted() == [".", "..", "secret"])
    }

    @Test("a private read refuses a readable file and a symbolic link")
    func privateRead() throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let path = temporary.path + "/key"
        try StatePaths.writeAtomically(path, contents: Array("k".utf8), mode: 0o644)
        #expect(Self.mode(path) == 0o644)
        #expect(try StatePaths.readFile(path) == Array("k".utf8))
        let error = #expect(throws: CowatchError.self) { try StatePaths.readFile(path, requirePrivate: true) }
        #expect(error?.code == .unsafePath)
        #expect(error?.message.contains("chmod 600 \(path)") == true)
        #expect(chmod(path, 0o600) == 0)
        let link = temporary.path + "/link"
        #expect(symlink(path, link) == 0)
        #expect(throws: CowatchError(.unsafePath, "")) { try StatePaths.readFile(link, requirePrivate: true) }
        #expect(try StatePaths.readFile(link) == Array("k".utf8))
    }
}
