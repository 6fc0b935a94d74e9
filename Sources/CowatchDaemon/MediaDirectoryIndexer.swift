import CowatchCore
import Logging
import ServiceLifecycle

/// Knows the media files in this machine's `--media-dir` folders by identity, so a playlist entry
/// naming a local film by `MediaIdentity` resolves to a path here (or to nothing: "I don't have
/// it"). A path never leaves this machine.
///
/// A scan walks the folders (`MediaDirectoryWalk`: at most `Settings.maxDepth` folders deep,
/// hidden names, non-media extensions, links back up and non-regular files skipped) and hashes the
/// first and last 64 KiB of each file that is new or changed since the last scan
/// (`MediaIndex.refresh(for:complete:)`): an unchanged file is never read again. A scan has
/// `Settings.scanTimeLimit` seconds (walk and hashing together); one that runs out keeps what it
/// did, says so at debug level, and the next scan goes on from there. The walk and the reads run
/// on a thread of their own at nice 19 (`LowPriorityThread`), never on Swift's cooperative threads,
/// so indexing never holds up playback, the room link or the control socket; lookups answer from
/// the last finished scan meanwhile and never wait for one.
///
/// A folder that is missing or unreadable (a disk not plugged in) is a warning, once, when it goes
/// missing, and an info line when it is back; the others are scanned as usual. Its files leave the
/// index until it is back.
///
/// Lifecycle: `run()` (a swift-service-lifecycle `Service`) scans at once, then every
/// `Settings.refreshInterval` seconds of `clock` until graceful shutdown or cancellation, which
/// also stops a scan in progress. `refresh()` scans on demand, with or without `run()`.
///
/// Threading: an actor; every method may be called from any task. Errors: only `identity(ofFile:)`
/// throws; scans report problems in `ScanReport` and the log.
public actor MediaDirectoryIndexer: Service {
    /// What to index and the bounds of a scan.
    public struct Settings: Sendable, Equatable {
        /// The folders, as absolute paths (`DaemonConfiguration.mediaDirectories`).
        public var directories: [String]
        /// Folders entered below each directory, at most: a file `DIR/a/b/f.mkv` is 2 deep. Default 6.
        public var maxDepth = 6
        /// Seconds of `clock` a scan may take, walk and hashing together. Default 10.
        public var scanTimeLimit = 10.0
        /// Seconds of `clock` between the scans `run()` makes. Default 300.
        public var refreshInterval = 300.0
        /// Files indexed at most (and listed by one walk). Default `MediaIndex.defaultCapacity`.
        public var capacity = MediaIndex.defaultCapacity

        public init(directories: [String]) {
            self.directories = directories
        }
    }

    /// Why a scan ended before it had seen and hashed everything.
    public enum ScanStop: Sendable, Equatable {
        /// It took `Settings.scanTimeLimit`.
        case timeLimit
        /// It reached `Settings.capacity` files.
        case fileLimit
        /// Its task was cancelled (shutdown).
        case cancelled
    }

    /// What one scan did.
    public struct ScanReport: Sendable, Equatable {
        /// Media files the walk found.
        public var listed = 0
        /// Files read and hashed (new, or changed since the last scan).
        public var hashed = 0
        /// Listed files whose entry was kept without reading them.
        public var unchanged = 0
        /// Entries dropped because their file is gone (only after a walk that saw everything).
        public var removed = 0
        /// Files that could not be read (permissions, I/O errors, changing while read).
        public var failed = 0
        /// New or changed files not hashed because the scan stopped: the next scan hashes them.
        public var pending = 0
        /// Files in the index afterwards.
        public var indexed = 0
        /// Why the scan stopped early; nil when it finished.
        public var stoppedBy: ScanStop?
        /// Folders that are missing, not folders, or cannot be read, with the reason.
        public var unusableDirectories: [String: String] = [:]

        /// True when the scan saw and hashed everything.
        public var isComplete: Bool { stoppedBy == nil }

        public init() {}
    }

    public nonisolated let settings: Settings
    nonisolated let clock: any MonotonicClock
    nonisolated let logger: Logger

    /// The files indexed by the last finished scan.
    public private(set) var index: MediaIndex
    /// The last finished scan's report; nil before the first.
    public private(set) var lastReport: ScanReport?
    /// Scans finished so far.
    public private(set) var scansCompleted = 0

    private var scanning = false
    private var scanWaiters: [CheckedContinuation<Void, Never>] = []
    /// Refreshes waiting for a scan to start after them (for tests).
    var waitingRefreshes: Int { scanWaiters.count }
    /// Folders reported unusable, so each is warned about once while it stays so.
    private var reportedUnusable: Set<String> = []

    /// An indexer of `settings.directories`; nothing is scanned until `run()` or `refresh()`.
    /// `clock` times the refresh timer and each scan's time limit (a manual clock in tests).
    public init(settings: Settings, clock: any MonotonicClock = SystemClock(), logger: Logger) {
        self.settings = settings
        self.clock = clock
        self.logger = logger
        index = MediaIndex(capacity: settings.capacity)
    }

    // MARK: Service

    /// Scans now, then every `settings.refreshInterval` seconds, until graceful shutdown or
    /// cancellation (which stops a scan in progress within one file). Never throws.
    public func run() async throws {
        await cancelWhenGracefulShutdown { await self.refreshLoop() }
    }

    private func refreshLoop() async {
        while !Task.isCancelled {
            _ = await refresh()
            do {
                try await clock.sleep(seconds: settings.refreshInterval)
            } catch {
                return
            }
        }
    }

    // MARK: Scanning

    /// Scans the folders now and returns the report, once the index holds the result.
    ///
    /// A call made while a scan runs waits for it and then for a fresh one (which callers waiting
    /// together share), so what it returns reflects the folders as they were after the call.
    /// Cancelling the task that runs a scan stops that scan (its report says `.cancelled`).
    /// Takes at most about `settings.scanTimeLimit` (twice, when a scan was already running).
    @discardableResult
    public func refresh() async -> ScanReport {
        // A scan that starts after this call: the next one, or the one after the running one.
        let wanted = scansCompleted + (scanning ? 2 : 1)
        while scansCompleted < wanted {
            if scanning {
                await withCheckedContinuation { scanWaiters.append($0) }
                continue
            }
            scanning = true
            let (newIndex, report) = await scanOnce()
            index = newIndex
            lastReport = report
            scansCompleted += 1
            scanning = false
            let waiters = scanWaiters
            scanWaiters = []
            for waiter in waiters { waiter.resume() }
            noteUnusable(report.unusableDirectories)
        }
        return lastReport ?? ScanReport()
    }

    private func scanOnce() async -> (MediaIndex, ScanReport) {
        let stop = Locked(false)
        let snapshot = index
        let settings = settings
        let clock = clock
        let (newIndex, report) = await withTaskCancellationHandler {
            await LowPriorityThread.run(name: "cowatch-scan") {
                Self.scan(index: snapshot, settings: settings, clock: clock, stop: stop)
            }
        } onCancel: {
            stop.withLock { $0 = true }
        }
        let metadata: Logger.Metadata = [
            "cowatch.media.listed": "\(report.listed)", "cowatch.media.hashed": "\(report.hashed)",
            "cowatch.media.removed": "\(report.removed)", "cowatch.media.failed": "\(report.failed)",
            "cowatch.media.pending": "\(report.pending)", "cowatch.media.indexed": "\(report.indexed)",
        ]
        switch report.stoppedBy {
        case nil: logger.debug("media folders scanned", metadata: metadata)
        case .timeLimit:
            logger.debug(
                "media scan stopped at its time limit (\(settings.scanTimeLimit) s); the next scan goes on", metadata: metadata)
        case .fileLimit:
            logger.debug("media scan stopped at \(settings.capacity) files; the rest is not indexed", metadata: metadata)
        case .cancelled: logger.debug("media scan cancelled", metadata: metadata)
        }
        return (newIndex, report)
    }

    /// One scan, on the calling (blocking, low-priority) thread: walk, compare, hash what changed.
    static func scan(
        index: MediaIndex, settings: Settings, clock: any MonotonicClock, stop: Locked<Bool>
    ) -> (MediaIndex, ScanReport) {
        let deadline = clock.now() + settings.scanTimeLimit
        let walk = MediaDirectoryWalk(
            maxDepth: max(0, settings.maxDepth), maxFiles: settings.capacity, deadline: deadline, clock: clock,
            shouldStop: { stop.withLock { $0 } })
        let outcome = walk.walk(roots: settings.directories)
        var index = index
        var report = ScanReport()
        report.listed = outcome.listing.count
        report.stoppedBy = outcome.stoppedBy
        for unusable in outcome.unusable { report.unusableDirectories[unusable.path] = unusable.reason }
        let refresh = index.refresh(for: outcome.listing, complete: outcome.stoppedBy == nil)
        index.apply(refresh)
        report.unchanged = refresh.unchanged
        report.removed = refresh.vanished.count
        for (done, stamp) in refresh.toHash.enumerated() {
            let reason: ScanStop? =
                stop.withLock({ $0 }) ? .cancelled : clock.now() >= deadline ? .timeLimit : index.isFull ? .fileLimit : nil
            if let reason {
                report.stoppedBy = report.stoppedBy ?? reason
                report.pending = refresh.toHash.count - done
                break
            }
            do {
                let (fresh, identity) = try MediaFileIdentity.identify(path: stamp.path)
                index.insert(MediaIndex.Entry(stamp: fresh, identity: identity))
                report.hashed += 1
            } catch {
                report.failed += 1
            }
        }
        report.indexed = index.count
        return (index, report)
    }

    /// Warns once about each folder that became unusable; says when one is back.
    private func noteUnusable(_ unusable: [String: String]) {
        for (path, reason) in unusable.sorted(by: { $0.key < $1.key }) where !reportedUnusable.contains(path) {
            logger.warning(
                "media folder \(path) skipped: \(reason) (a disk not plugged in?); it is scanned again every \(Int(settings.refreshInterval)) s")
        }
        for path in reportedUnusable.subtracting(unusable.keys).sorted() {
            logger.info("media folder \(path) is back")
        }
        reportedUnusable = Set(unusable.keys)
    }

    // MARK: Lookup

    /// The path of an indexed file matching `identity` (`MediaIndex.lookup`: same size and
    /// fingerprint, durations within a second when both known; a file named as the hint first),
    /// or nil when this machine has none, as of the last finished scan. The file may have gone or
    /// changed since (`resolveVerified` checks). Never waits for a scan.
    public func resolve(_ identity: MediaIdentity) -> String? {
        index.lookup(identity)?.path
    }

    /// As `resolve`, but only a file still there unchanged since it was hashed (same size,
    /// modification time and inode: a `stat`, on the low-priority thread, no read). Never waits
    /// for a scan.
    public func resolveVerified(_ identity: MediaIdentity) async -> String? {
        let candidates = index.matches(for: identity)
        guard !candidates.isEmpty else { return nil }
        return await LowPriorityThread.run(name: "cowatch-stat") {
            candidates.first { entry in
                guard let status = MediaFileIdentity.status(of: entry.path), status.kind == .regular else { return false }
                return status.stamp(path: entry.path).isUnchanged(from: entry.stamp)
            }?.path
        }
    }

    /// The identity of an indexed file named `name` (exactly, else but for case; the first by
    /// path), as of the last finished scan; nil when none is. For a Syncplay room's playlist,
    /// which names files and nothing more. Never waits for a scan.
    public func identity(named name: String) -> MediaIdentity? {
        let named = index.entries(named: name)
        return (named.first { $0.identity.name == name } ?? named.first)?.identity
    }

    /// Indexed files that do not match `identity` but have its name or size
    /// (`MediaIndex.nearMisses`): "you have night.mkv, but a different file".
    public func nearMisses(for identity: MediaIdentity, limit: Int = 8) -> [MediaIndex.Entry] {
        index.nearMisses(for: identity, limit: limit)
    }

    // MARK: One file

    /// The identity of the file at `path` (for `add FILE`: a file of this machine, indexed or not,
    /// any extension): its size, fingerprint and name hint; `duration` is nil (the caller may
    /// fill it in from its probe). Reads 128 KiB at most, on a low-priority thread of its own.
    /// A relative `path` is relative to the daemon's working directory.
    ///
    /// Errors: `not-found` (nothing at `path`); `media-unavailable` (cannot be opened or read, not
    /// a regular file, or changed while read).
    public nonisolated func identity(ofFile path: String) async throws(CowatchError) -> MediaIdentity {
        try await Self.identity(ofFile: path)
    }

    /// `identity(ofFile:)` without an indexer.
    public static func identity(ofFile path: String) async throws(CowatchError) -> MediaIdentity {
        let result = await LowPriorityThread.run(name: "cowatch-hash") {
            Result { () throws(CowatchError) -> MediaIdentity in try MediaFileIdentity.identify(path: path).identity }
        }
        return try result.get()
    }
}
