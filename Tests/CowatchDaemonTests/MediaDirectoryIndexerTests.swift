import CowatchCore
import CowatchTesting
import Foundation
import Logging
import Testing

@testable import CowatchDaemon

#if canImport(Glibc)
    import Glibc
#endif

/// A real folder under the system's temporary directory, removed at `deinit`.
final class MediaTree: @unchecked Sendable {
    let root: String

    init() throws {
        var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("cowatch-media-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw CowatchError(.ioError, "mkdtemp failed") }
        root = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    func path(_ relative: String) -> String { root + "/" + relative }

    /// Writes `bytes` at `relative`, making the folders on the way.
    @discardableResult
    func write(_ relative: String, _ bytes: [UInt8]) throws -> String {
        let path = path(relative)
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func folder(_ relative: String) throws {
        try FileManager.default.createDirectory(atPath: path(relative), withIntermediateDirectories: true)
    }

    func link(_ relative: String, to destination: String) throws {
        try FileManager.default.createSymbolicLink(atPath: path(relative), withDestinationPath: destination)
    }

    func setModified(_ relative: String, _ seconds: Double) throws {
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: seconds)], ofItemAtPath: path(relative))
    }
}

/// A clock that moves one second each time it is read: a scan's time limit runs out after a
/// number of steps, however fast the machine.
final class TickingClock: MonotonicClock {
    private let reads = Locked(0.0)
    func now() -> Double { reads.withLock { $0 += 1; return $0 } }
    func sleep(until deadline: Double) async throws { try Task.checkCancellation() }
    func waitPrecisely(until deadline: Double) {}
}

@Suite("Media folders: indexing local files by identity")
struct MediaDirectoryIndexerTests {
    static let logger = Logger(label: "media-index-test")

    /// Distinct content for each seed; large enough that head and tail are different 64 KiB.
    static func film(_ seed: UInt8, size: Int = 150_000) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &* 7) ^ seed }
    }

    static func identity(of bytes: [UInt8], name: String = "film.mkv") -> MediaIdentity {
        MediaIdentity(
            size: bytes.count,
            fingerprint: MediaIdentity.fingerprint(
                head: bytes[MediaIdentity.headRange(size: bytes.count)], tail: bytes[MediaIdentity.tailRange(size: bytes.count)],
                size: bytes.count),
            name: name)
    }

    static func indexer(
        _ directories: [String], maxDepth: Int = 6, clock: any MonotonicClock = ManualClock(), scanTimeLimit: Double = 10
    ) -> MediaDirectoryIndexer {
        var settings = MediaDirectoryIndexer.Settings(directories: directories)
        settings.maxDepth = maxDepth
        settings.scanTimeLimit = scanTimeLimit
        return MediaDirectoryIndexer(settings: settings, clock: clock, logger: logger)
    }

    /// Waits (bounded in real time, not a timing assumption) until `condition` holds. It polls
    /// with short sleeps, never a spin: the scan runs on a thread at nice 19, which a spinning
    /// waiter on two busy cores would starve.
    static func waitUntil(_ what: String, _ condition: () async -> Bool) async {
        let giveUp = SystemClock.monotonicSeconds() + 30
        while await !condition() {
            guard SystemClock.monotonicSeconds() < giveUp else {
                Issue.record("gave up waiting: \(what)")
                return
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test("files under other names and at other depths are found by content; a file not here is not")
    func foundByIdentity() async throws {
        let tree = try MediaTree()
        try tree.write("night.mkv", Self.film(1))
        try tree.write("series/s01/e01 (renamed).mp4", Self.film(2))
        try tree.write("a/b/c/d/deep.webm", Self.film(3))
        try tree.write("tiny.opus", [1, 2, 3])
        let indexer = Self.indexer([tree.root])
        let report = await indexer.refresh()
        #expect(report.isComplete)
        #expect(report.listed == 4 && report.hashed == 4 && report.indexed == 4 && report.failed == 0)
        #expect(await indexer.resolve(Self.identity(of: Self.film(1), name: "Night.mkv")) == tree.path("night.mkv"))
        #expect(await indexer.resolve(Self.identity(of: Self.film(2), name: "e01.mkv")) == tree.path("series/s01/e01 (renamed).mp4"))
        #expect(await indexer.resolve(Self.identity(of: Self.film(3))) == tree.path("a/b/c/d/deep.webm"))
        #expect(await indexer.resolve(Self.identity(of: [1, 2, 3])) == tree.path("tiny.opus"))
        #expect(await indexer.resolve(Self.identity(of: Self.film(4))) == nil)
        #expect(await indexer.resolveVerified(Self.identity(of: Self.film(1))) == tree.path("night.mkv"))
        // The name given by a peer is a hint: a file named so but different is a near miss.
        let nearMiss = await indexer.nearMisses(for: Self.identity(of: Self.film(4, size: 1_000), name: "night.mkv"))
        #expect(nearMiss.map(\.path) == [tree.path("night.mkv")])
        // The identity the indexer computed is the one `add FILE` computes for the same file elsewhere.
        let elsewhere = try MediaTree()
        let copy = try elsewhere.write("copy.bin", Self.film(2))
        let added = try await indexer.identity(ofFile: copy)
        #expect(added.name == "copy.bin" && added.duration == nil)
        #expect(await indexer.resolve(added) == tree.path("series/s01/e01 (renamed).mp4"))
    }

    @Test("the depth bound: at most maxDepth folders below each media folder")
    func depthBound() async throws {
        let tree = try MediaTree()
        try tree.write("0.mkv", Self.film(0))
        try tree.write("a/1.mkv", Self.film(1))
        try tree.write("a/b/2.mkv", Self.film(2))
        try tree.write("a/b/c/3.mkv", Self.film(3))
        let indexer = Self.indexer([tree.root], maxDepth: 2)
        let report = await indexer.refresh()
        #expect(report.listed == 3)
        #expect(await indexer.resolve(Self.identity(of: Self.film(2))) == tree.path("a/b/2.mkv"))
        #expect(await indexer.resolve(Self.identity(of: Self.film(3))) == nil)
        let shallow = Self.indexer([tree.root], maxDepth: 0)
        #expect(await shallow.refresh().listed == 1)
    }

    @Test("hidden files and folders, non-media extensions, FIFOs and folders named like films are skipped")
    func skipped() async throws {
        let tree = try MediaTree()
        try tree.write(".hidden.mkv", Self.film(1))
        try tree.write(".cache/film.mkv", Self.film(2))
        try tree.write("notes.txt", Self.film(3))
        try tree.write("film.mkv.part", Self.film(4))
        try tree.write("noextension", Self.film(5))
        try tree.write("LOUD.MKV", Self.film(6))
        try tree.write("folder.mkv/inside.mp3", Self.film(7))
        #expect(mkfifo(tree.path("pipe.mkv"), 0o600) == 0)
        let indexer = Self.indexer([tree.root])
        let report = await indexer.refresh()
        #expect(report.isComplete)
        #expect(await indexer.index.allEntries.map(\.path) == [tree.path("LOUD.MKV"), tree.path("folder.mkv/inside.mp3")])
        #expect(report.failed == 0)
        for seed: UInt8 in [1, 2, 3, 4, 5] {
            #expect(await indexer.resolve(Self.identity(of: Self.film(seed))) == nil)
        }
    }

    @Test("symbolic links are followed, a loop ends, a link to itself or to nothing is skipped, a file is listed once")
    func symlinkLoops() async throws {
        let tree = try MediaTree()
        let outside = try MediaTree()
        try outside.write("far.mkv", Self.film(9))
        try tree.write("sub/film.mkv", Self.film(1))
        try tree.link("sub/up", to: "..")  // sub/up/sub/up/… forever, but for the visited set
        try tree.link("self.mkv", to: tree.path("self.mkv"))
        try tree.link("dangling.mkv", to: tree.path("nowhere.mkv"))
        try tree.link("alias.mkv", to: tree.path("sub/film.mkv"))
        try tree.link("far", to: outside.root)
        // A second root inside the first: walked once.
        let indexer = Self.indexer([tree.root, tree.path("sub")], maxDepth: 50)
        let report = await indexer.refresh()
        #expect(report.isComplete)
        #expect(report.listed == 2 && report.failed == 0)
        #expect(await indexer.resolve(Self.identity(of: Self.film(1))) != nil)
        #expect(await indexer.resolve(Self.identity(of: Self.film(9))) == tree.path("far/far.mkv"))
    }

    @Test("a refresh rehashes a changed file and not an unchanged one; a deleted file leaves the index")
    func incrementalRefresh() async throws {
        let tree = try MediaTree()
        try tree.write("keep.mkv", Self.film(1))
        try tree.write("grow.mkv", Self.film(2))
        try tree.write("touch.mkv", Self.film(3))
        try tree.write("gone.mkv", Self.film(4))
        let indexer = Self.indexer([tree.root])
        #expect(await indexer.refresh().hashed == 4)
        let quiet = await indexer.refresh()
        #expect(quiet.hashed == 0 && quiet.unchanged == 4 && quiet.removed == 0)

        let grown = Self.film(2) + [42]
        try tree.write("grow.mkv", grown)
        var retouched = Self.film(3)
        retouched[retouched.count - 1] ^= 0xff  // same size: only the time tells
        try tree.write("touch.mkv", retouched)
        try tree.setModified("touch.mkv", 1_000_000)
        try FileManager.default.removeItem(atPath: tree.path("gone.mkv"))
        let changed = await indexer.refresh()
        #expect(changed.hashed == 2 && changed.unchanged == 1 && changed.removed == 1 && changed.indexed == 3)
        #expect(await indexer.resolve(Self.identity(of: Self.film(2))) == nil)
        #expect(await indexer.resolve(Self.identity(of: grown)) == tree.path("grow.mkv"))
        #expect(await indexer.resolve(Self.identity(of: Self.film(3))) == nil)
        #expect(await indexer.resolve(Self.identity(of: retouched)) == tree.path("touch.mkv"))
        #expect(await indexer.resolve(Self.identity(of: Self.film(4))) == nil)
        #expect(await indexer.resolve(Self.identity(of: Self.film(1))) == tree.path("keep.mkv"))
        #expect(await indexer.refresh().hashed == 0)
    }

    @Test("a missing media folder is reported, not thrown; the others are indexed; it counts once it appears")
    func missingDirectory() async throws {
        let tree = try MediaTree()
        try tree.write("film.mkv", Self.film(1))
        let missing = tree.path("usb-disk")
        let notFolder = tree.path("film.mkv")
        let indexer = Self.indexer([missing, tree.root, notFolder])
        let report = await indexer.refresh()
        #expect(report.unusableDirectories.keys.sorted() == [notFolder, missing].sorted())
        #expect(report.listed == 1)
        #expect(await indexer.resolve(Self.identity(of: Self.film(1))) == tree.path("film.mkv"))
        try tree.write("usb-disk/other.mkv", Self.film(2))
        let later = await indexer.refresh()
        #expect(later.unusableDirectories.keys.sorted() == [notFolder])
        #expect(await indexer.resolve(Self.identity(of: Self.film(2))) == tree.path("usb-disk/other.mkv"))
    }

    @Test("a scan stops at its time limit, keeps what it hashed, and the next scans go on without rehashing")
    func timeLimit() async throws {
        let tree = try MediaTree()
        for seed: UInt8 in 1...6 { try tree.write("\(seed).mkv", Self.film(seed)) }
        // Each clock read is a second: the walk of 6 files costs about 8, leaving a few files a scan.
        let indexer = Self.indexer([tree.root], clock: TickingClock(), scanTimeLimit: 10)
        let first = await indexer.refresh()
        #expect(first.stoppedBy == .timeLimit)
        #expect(first.pending > 0 && first.hashed < 6)
        var hashed = first.hashed
        var scans = 1
        while await indexer.index.count < 6, scans < 20 {
            let report = await indexer.refresh()
            #expect(report.hashed + report.unchanged + report.pending == report.listed || report.listed < 6)
            hashed += report.hashed
            scans += 1
        }
        #expect(await indexer.index.count == 6)
        #expect(hashed == 6)  // nothing hashed twice
        // With no time at all, nothing happens and nothing is lost.
        let none = Self.indexer([tree.root], scanTimeLimit: 0)
        let report = await none.refresh()
        #expect(report.stoppedBy == .timeLimit && report.listed == 0 && report.removed == 0)
    }

    @Test("a cancelled scan stops and says so")
    func cancelled() async throws {
        let tree = try MediaTree()
        try tree.write("film.mkv", Self.film(1))
        let indexer = Self.indexer([tree.root])
        let report = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await indexer.refresh()
        }.value
        #expect(report.stoppedBy == .cancelled)
        #expect(await indexer.refresh().isComplete)
    }

    @Test("run() scans at once, then on the clock's timer, and stops when cancelled")
    func timer() async throws {
        let tree = try MediaTree()
        try tree.write("first.mkv", Self.film(1))
        let clock = ManualClock()
        let indexer = Self.indexer([tree.root], clock: clock)
        let service = Task { try await indexer.run() }
        await Self.waitUntil("the first scan and the timer") { await indexer.scansCompleted == 1 && clock.sleeperCount == 1 }
        #expect(await indexer.resolve(Self.identity(of: Self.film(1))) != nil)
        try tree.write("second.mkv", Self.film(2))
        clock.advance(by: 299)
        #expect(await indexer.scansCompleted == 1)
        clock.advance(by: 1)
        await Self.waitUntil("the second scan") { await indexer.scansCompleted == 2 && clock.sleeperCount == 1 }
        #expect(await indexer.resolve(Self.identity(of: Self.film(2))) == tree.path("second.mkv"))
        service.cancel()
        try await service.value
        #expect(await indexer.scansCompleted == 2)
    }

    @Test("refreshes asked for together share a scan that starts after them")
    func concurrentRefreshes() async throws {
        let tree = try MediaTree()
        try tree.write("film.mkv", Self.film(1))
        // The first scan is held (its clock's first reading blocks its thread) until the two
        // other refreshes wait: "together" made certain, not left to the scheduler.
        let clock = GatedClock()
        let indexer = Self.indexer([tree.root], clock: clock)
        let a = Task { await indexer.refresh() }
        await Self.waitUntil("the first scan to start") { clock.blockedReaders > 0 }
        let b = Task { await indexer.refresh() }
        let c = Task { await indexer.refresh() }
        await Self.waitUntil("both refreshes to wait") { await indexer.waitingRefreshes == 2 }
        clock.open()
        let reports = [await a.value, await b.value, await c.value]
        #expect(reports.allSatisfy { $0.indexed == 1 })
        // The running scan, and one after it for both newcomers.
        #expect(await indexer.scansCompleted == 2)
        #expect(await indexer.index.count == 1)
    }

    @Test("identity(ofFile:): known value, any extension; missing, folders and FIFOs refused without hanging")
    func oneFile() async throws {
        let tree = try MediaTree()
        let abc = try tree.write("abc.txt", Array("abc".utf8))
        let identity = try await MediaDirectoryIndexer.identity(ofFile: abc)
        #expect(identity.fingerprint == "a7e79e8a85da69bad5c3fea209342ac98858c5ea717841fb782baf360ad09ce0")
        #expect(identity.size == 3 && identity.name == "abc.txt")
        try identity.validate()
        await #expect(throws: CowatchError(.notFound, "")) { try await MediaDirectoryIndexer.identity(ofFile: tree.path("nope.mkv")) }
        await #expect(throws: CowatchError(.mediaUnavailable, "")) { try await MediaDirectoryIndexer.identity(ofFile: tree.root) }
        #expect(mkfifo(tree.path("pipe.mkv"), 0o600) == 0)
        await #expect(throws: CowatchError(.mediaUnavailable, "")) {
            try await MediaDirectoryIndexer.identity(ofFile: tree.path("pipe.mkv"))
        }
    }

    @Test("the blocking work runs on a thread at nice 19, not on the caller's")
    func lowPriority() async {
        let niceness = await LowPriorityThread.run(name: "test") { LowPriorityThread.currentNiceness() }
        #expect(niceness == 19)
        let onThread = await LowPriorityThread.run(name: "cowatch-test-thread-name") { LowPriorityThread.currentName() }
        #expect(onThread == "cowatch-test-th")  // the kernel keeps 15 bytes
        #expect(LowPriorityThread.currentName() != onThread)
    }
}

@Suite("--media-dir: flags, environment, config file")
struct MediaDirectoryConfigTests {
    static let environment = ["HOME": "/home/alice", "XDG_CONFIG_HOME": "/nonexistent"]

    static func flags() -> DaemonFlags {
        var flags = DaemonFlags()
        flags.media = "night.mkv"
        flags.name = "alice"
        flags.control = "/tmp/cowatch-media-dir-test.sock"
        return flags
    }

    @Test("none by default; repeatable flags win over COWATCH_MEDIA_DIRS (colon-separated); ~ and relative paths resolved")
    func sources() async throws {
        #expect(try await DaemonConfiguration.load(flags: Self.flags(), environment: Self.environment).mediaDirectories == [])
        var environment = Self.environment
        environment["COWATCH_MEDIA_DIRS"] = "/srv/films, old:~/Videos/::/srv/films, old/"
        #expect(
            try await DaemonConfiguration.load(flags: Self.flags(), environment: environment).mediaDirectories
                == ["/srv/films, old", "/home/alice/Videos"])
        var flags = Self.flags()
        flags.mediaDirectories = ["/mnt/usb-disk/films", "rel/../films", "/mnt/usb-disk/films/"]
        let cwd = FileManager.default.currentDirectoryPath
        // Missing folders are fine here: a disk may be unplugged.
        #expect(
            try await DaemonConfiguration.load(flags: flags, environment: environment).mediaDirectories
                == ["/mnt/usb-disk/films", (cwd == "/" ? "" : cwd) + "/films"])
        flags.mediaDirectories = ["/films\n"]
        await #expect(throws: CowatchError(.invalidConfiguration, "")) {
            try await DaemonConfiguration.load(flags: flags, environment: Self.environment)
        }
        flags.mediaDirectories = (0...DaemonConfiguration.maxMediaDirectories).map { "/films/\($0)" }
        await #expect(throws: CowatchError(.invalidConfiguration, "")) {
            try await DaemonConfiguration.load(flags: flags, environment: Self.environment)
        }
    }

    @Test("the config file's media-dir: a string or a list, relative to the file's folder; a wrong type refused")
    func configFile() async throws {
        let tree = try MediaTree()
        let file = try tree.write("cowatchd.json", Array(#"{"media-dir": ["films", "~/Music", "/srv/a"]}"#.utf8))
        var flags = Self.flags()
        flags.config = file
        #expect(
            try await DaemonConfiguration.load(flags: flags, environment: Self.environment).mediaDirectories
                == [tree.path("films"), "/home/alice/Music", "/srv/a"])
        try tree.write("cowatchd.json", Array(#"{"media-dir": "/srv/one"}"#.utf8))
        #expect(try await DaemonConfiguration.load(flags: flags, environment: Self.environment).mediaDirectories == ["/srv/one"])
        var environment = Self.environment
        environment["COWATCH_MEDIA_DIRS"] = "/env"
        #expect(try await DaemonConfiguration.load(flags: flags, environment: environment).mediaDirectories == ["/env"])
        try tree.write("cowatchd.json", Array(#"{"media-dir": 7}"#.utf8))
        await #expect(throws: CowatchError(.invalidConfiguration, "")) {
            try await DaemonConfiguration.load(flags: flags, environment: Self.environment)
        }
    }
}

/// A manual clock whose readings block their thread until `open()`: holds a scan (which reads
/// the clock on its own low-priority thread) where a test wants it.
final class GatedClock: MonotonicClock {
    private let inner = ManualClock()
    private let gate = NSCondition()
    private let state = Locked((open: false, blocked: 0))

    /// Readers blocked now.
    var blockedReaders: Int { state.withLock { $0.blocked } }

    func open() {
        gate.lock()
        state.withLock { $0.open = true }
        gate.broadcast()
        gate.unlock()
    }

    func now() -> Double {
        gate.lock()
        while !state.withLock({ $0.open }) {
            state.withLock { $0.blocked += 1 }
            gate.wait()
            state.withLock { $0.blocked -= 1 }
        }
        gate.unlock()
        return inner.now()
    }

    func sleep(until deadline: Double) async throws { try await inner.sleep(until: deadline) }
    func waitPrecisely(until deadline: Double) { inner.waitPrecisely(until: deadline) }
}

