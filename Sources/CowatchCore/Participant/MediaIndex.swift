/// The media files of this machine's `--media-dir` folders, by identity: what a daemon looks a
/// playlist entry up in to say whether it has that film, and where.
///
/// A value: the indexer builds the next one from a scan and swaps it in whole. It holds at most
/// `capacity` files (`defaultCapacity`, 100 000); `insert` refuses more. A refresh does not
/// rehash everything: `refresh(for:complete:)` compares a new scan listing with what is indexed
/// and names only the files that are new or whose size, modification time or inode changed, and
/// the indexed files that are gone.
///
/// Lookups: `lookup(_:)` (the best file matching an identity), `matches(for:)` (all of them, best
/// first), and `nearMisses(for:)`, files with the same name hint or size that do not match (to tell
/// a person "you have night.mkv, but not the same file").
///
/// Threading: a value type, safe to share; every function is pure (no I/O, no clock).
public struct MediaIndex: Sendable, Equatable {
    /// Files an index holds unless told otherwise.
    public static let defaultCapacity = 100_000

    /// What a directory scan learns of a file without reading it: where it is, its size, when it
    /// was last modified and its inode (which changes when a file is replaced by another, as
    /// `rsync` and editors do, even with size and time kept).
    public struct FileStamp: Sendable, Hashable {
        /// The file's path as the scan reached it (below a media folder; may pass symbolic links).
        public var path: String
        /// Bytes.
        public var size: Int
        /// Modification time, nanoseconds since the Unix epoch (`st_mtim`).
        public var modified: Int64
        /// Inode number (`st_ino`); 0 when unknown.
        public var inode: UInt64

        public init(path: String, size: Int, modified: Int64, inode: UInt64 = 0) {
            self.path = path
            self.size = size
            self.modified = modified
            self.inode = inode
        }

        /// True when `other` describes the same unchanged content: equal size, time and inode.
        public func isUnchanged(from other: FileStamp) -> Bool {
            size == other.size && modified == other.modified && inode == other.inode
        }
    }

    /// An indexed file: its stamp when it was hashed, and its identity.
    public struct Entry: Sendable, Hashable {
        public var stamp: FileStamp
        public var identity: MediaIdentity
        public var path: String { stamp.path }

        public init(stamp: FileStamp, identity: MediaIdentity) {
            self.stamp = stamp
            self.identity = identity
        }
    }

    /// What to do to bring the index up to a new scan listing (`refresh(for:complete:)`).
    public struct Refresh: Sendable, Equatable {
        /// Files to (re)hash, in listing order: new paths, and paths whose stamp changed.
        public var toHash: [FileStamp] = []
        /// Indexed paths the listing lacks, sorted: gone (only reported for a complete listing).
        public var vanished: [String] = []
        /// Listed files whose entry stays as it is.
        public var unchanged = 0

        public init(toHash: [FileStamp] = [], vanished: [String] = [], unchanged: Int = 0) {
            self.toHash = toHash
            self.vanished = vanished
            self.unchanged = unchanged
        }
    }

    /// The most files this index holds.
    public let capacity: Int
    private var entries: [String: Entry] = [:]
    private var byKey: [MediaIdentity.Key: Set<String>] = [:]
    private var byName: [String: Set<String>] = [:]
    private var bySize: [Int: Set<String>] = [:]

    /// An empty index holding at most `capacity` files (at least 0).
    public init(capacity: Int = MediaIndex.defaultCapacity) {
        self.capacity = max(0, capacity)
    }

    /// Files indexed.
    public var count: Int { entries.count }

    /// True when no more files fit.
    public var isFull: Bool { entries.count >= capacity }

    /// Every entry, sorted by path.
    public var allEntries: [Entry] { entries.values.sorted { $0.path < $1.path } }

    /// The entry for `path`, if indexed.
    public func entry(atPath path: String) -> Entry? { entries[path] }

    // MARK: Lookup

    /// The best indexed file matching `identity` (`MediaIdentity.matches`), or nil: the first of
    /// `matches(for:)`.
    public func lookup(_ identity: MediaIdentity) -> Entry? {
        matches(for: identity).first
    }

    /// Every indexed file matching `identity`, best first: those named exactly as its name hint,
    /// then those named so but for case, then the rest; by path within each.
    public func matches(for identity: MediaIdentity) -> [Entry] {
        ranked((byKey[identity.key] ?? []).compactMap { entries[$0] }.filter { $0.identity.matches(identity) }, hint: identity.name)
    }

    /// Up to `limit` indexed files that do not match `identity` but look as if they might: the same
    /// name hint (case aside) first, then the same size; by path within each. For advice such as
    /// "you have night.mkv, but a different file".
    public func nearMisses(for identity: MediaIdentity, limit: Int = 8) -> [Entry] {
        let named = (byName[Self.nameKey(identity.name)] ?? []).compactMap { entries[$0] }
            .filter { !$0.identity.matches(identity) }.sorted { $0.path < $1.path }
        let sized = (bySize[identity.size] ?? []).compactMap { entries[$0] }
            .filter { !$0.identity.matches(identity) && Self.nameKey($0.identity.name) != Self.nameKey(identity.name) }
            .sorted { $0.path < $1.path }
        return Array((named + sized).prefix(max(0, limit)))
    }

    /// Indexed files whose name hint is `name`, case aside; by path.
    public func entries(named name: String) -> [Entry] {
        (byName[Self.nameKey(name)] ?? []).compactMap { entries[$0] }.sorted { $0.path < $1.path }
    }

    /// Indexed files of `size` bytes; by path.
    public func entries(ofSize size: Int) -> [Entry] {
        (bySize[size] ?? []).compactMap { entries[$0] }.sorted { $0.path < $1.path }
    }

    // MARK: Incremental update

    /// Compares a scan `listing` with the index: which files need (re)hashing (a path not indexed,
    /// or whose size, time or inode differ from its entry's) and which indexed paths are gone.
    /// A listing that is not `complete` (the scan stopped at its time or file bound) says nothing
    /// about the files it did not reach, so then nothing is reported vanished. A path listed twice
    /// counts once (the first).
    public func refresh(for listing: [FileStamp], complete: Bool) -> Refresh {
        var refresh = Refresh()
        var seen = Set<String>()
        seen.reserveCapacity(listing.count)
        for stamp in listing where seen.insert(stamp.path).inserted {
            if let entry = entries[stamp.path], entry.stamp.isUnchanged(from: stamp) {
                refresh.unchanged += 1
            } else {
                refresh.toHash.append(stamp)
            }
        }
        if complete {
            refresh.vanished = entries.keys.filter { !seen.contains($0) }.sorted()
        }
        return refresh
    }

    /// Drops what `refresh` makes stale: the vanished paths and the entries of files to rehash
    /// (a changed file resolves to nothing until it has been hashed again).
    public mutating func apply(_ refresh: Refresh) {
        for path in refresh.vanished { remove(path: path) }
        for stamp in refresh.toHash { remove(path: stamp.path) }
    }

    /// Adds `entry`, replacing any entry with its path. Returns false, changing nothing, when the
    /// path is new and the index is full.
    @discardableResult
    public mutating func insert(_ entry: Entry) -> Bool {
        if entries[entry.path] != nil {
            remove(path: entry.path)
        } else if isFull {
            return false
        }
        entries[entry.path] = entry
        byKey[entry.identity.key, default: []].insert(entry.path)
        byName[Self.nameKey(entry.identity.name), default: []].insert(entry.path)
        bySize[entry.identity.size, default: []].insert(entry.path)
        return true
    }

    /// Removes the entry for `path`, if any.
    public mutating func remove(path: String) {
        guard let entry = entries.removeValue(forKey: path) else { return }
        Self.drop(path, at: entry.identity.key, from: &byKey)
        Self.drop(path, at: Self.nameKey(entry.identity.name), from: &byName)
        Self.drop(path, at: entry.identity.size, from: &bySize)
    }

    // MARK: Private

    private static func drop<Key: Hashable>(_ path: String, at key: Key, from map: inout [Key: Set<String>]) {
        map[key]?.remove(path)
        if map[key]?.isEmpty == true { map[key] = nil }
    }

    /// Names compare without case (a hint, and "Night.MKV" is the same hint as "night.mkv").
    private static func nameKey(_ name: String) -> String { name.lowercased() }

    private func ranked(_ found: [Entry], hint: String) -> [Entry] {
        func rank(_ entry: Entry) -> Int {
            if entry.identity.name == hint { return 0 }
            return Self.nameKey(entry.identity.name) == Self.nameKey(hint) ? 1 : 2
        }
        return found.sorted { (rank($0), $0.path) < (rank($1), $1.path) }
    }
}
