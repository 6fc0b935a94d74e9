/// What a film stream's receiver keeps and asks for (issue 25): the shared file cut into blocks
/// of `blockBytes` aligned to block boundaries, a cache of them bounded by bytes that lets the
/// least recently used go, and the decisions of which blocks to ask the sharer for next.
///
/// Asking: blocks a reader waits for (`want`) come first, in the order they were wanted, so a
/// seek waits at most behind the requests already on the connection; then read-ahead, the
/// `aheadBlocks` blocks after the block where the last read ended. At most `maxOutstanding`
/// requests are on the connection at once, and read-ahead never asks for more than the cache can
/// hold beside the block being read. A block is asked for once however many readers want it.
///
/// Keeping: a block that arrives is cached when a reader wanted it or it is in the read-ahead
/// window; one that is neither (read-ahead for a position left by a seek) only into free room.
/// When room is needed, blocks outside the window go first, least recently used first.
///
/// Threading: a value type with one owner; time is not involved.
public struct StreamBlockCache: Sendable {
    /// The file's size in bytes.
    public let size: Int
    /// Bytes of every block but the last.
    public let blockBytes: Int
    /// Blocks the cache holds at most.
    public let capacity: Int
    /// Requests on the connection at most.
    public let maxOutstanding: Int
    /// Blocks asked for ahead of the block where the last read ended.
    public let aheadBlocks: Int

    private var cached: [Int: Entry] = [:]
    private var useCounter = 0
    /// Blocks readers wait for, oldest first, until they arrive, are refused or given up.
    private var wanted: [Int] = []
    /// Blocks asked for on the connection, in the order they were asked (answers come in it).
    public private(set) var outstanding: [Int] = []
    /// Where the last read ended (nil before any).
    public private(set) var lastReadEnd: Int?

    private struct Entry: Sendable {
        var bytes: [UInt8]
        var lastUse: Int
    }

    /// - cacheBytes: the cache's bound (at least one block is always kept).
    /// - aheadBlocks: nil for half the cache (never more than the cache holds beside one block).
    public init(
        size: Int, blockBytes: Int = StreamFrame.maxReadBytes, cacheBytes: Int, maxOutstanding: Int = 8, aheadBlocks: Int? = nil
    ) {
        self.size = max(0, size)
        self.blockBytes = max(1, blockBytes)
        capacity = max(1, cacheBytes / self.blockBytes)
        self.maxOutstanding = max(1, maxOutstanding)
        self.aheadBlocks = min(capacity - 1, max(0, aheadBlocks ?? max(1, capacity / 2)))
    }

    // MARK: Block math

    /// Blocks in the file.
    public var blockCount: Int { (size + blockBytes - 1) / blockBytes }

    /// The block holding byte `offset`.
    public func block(containing offset: Int) -> Int { offset / blockBytes }

    /// The file's bytes in `block` (shorter for the last block).
    public func range(ofBlock block: Int) -> Range<Int> {
        let start = block * blockBytes
        return start..<min(size, start + blockBytes)
    }

    /// The blocks a read of `length` bytes at `offset` touches (clipped to the file; empty past it).
    public func blocks(covering offset: Int, length: Int) -> Range<Int> {
        let end = min(size, offset + max(0, length))
        guard offset >= 0, offset < end else { return 0..<0 }
        return block(containing: offset)..<(block(containing: end - 1) + 1)
    }

    // MARK: The cache

    /// The cached bytes of `block`, marked as just used; nil when not cached.
    public mutating func bytes(ofBlock block: Int) -> [UInt8]? {
        guard cached[block] != nil else { return nil }
        useCounter += 1
        cached[block]?.lastUse = useCounter
        return cached[block]?.bytes
    }

    /// Whether `block` is cached (without marking it used).
    public func isCached(_ block: Int) -> Bool { cached[block] != nil }

    /// Bytes held in the cache.
    public var cachedBytes: Int { cached.values.reduce(0) { $0 + $1.bytes.count } }

    /// Blocks held in the cache.
    public var cachedBlocks: Int { cached.count }

    /// Cached bytes after where the last read ended, without a gap.
    public var bufferedAhead: Int {
        guard let end = lastReadEnd, end < size else { return 0 }
        var total = 0
        var block = block(containing: end)
        while block < blockCount, cached[block] != nil {
            total += range(ofBlock: block).upperBound - max(end, range(ofBlock: block).lowerBound)
            block += 1
        }
        return total
    }

    // MARK: Reads and requests

    /// A read of `length` bytes at `offset` is being served: read-ahead follows where it ends.
    public mutating func noteRead(offset: Int, length: Int) {
        lastReadEnd = min(size, max(0, offset) + max(0, length))
    }

    /// A reader waits for `block` (not cached): it is asked for before any read-ahead, once.
    public mutating func want(_ block: Int) {
        guard block >= 0, block < blockCount, cached[block] == nil, !wanted.contains(block) else { return }
        wanted.append(block)
    }

    /// No reader waits for `block` any longer (their reads gave up): it is not asked for unless
    /// read-ahead wants it. A request already on the connection stays.
    public mutating func unwant(_ block: Int) {
        wanted.removeAll { $0 == block }
    }

    /// Whether a reader waits for a block, or a request is on the connection.
    public var hasWork: Bool { !wanted.isEmpty || !outstanding.isEmpty }

    /// Whether read-ahead would ask for a block now (one in its window is neither cached nor
    /// asked for).
    public var wantsReadAhead: Bool {
        guard let window = readAheadWindow else { return false }
        return window.contains { cached[$0] == nil && !outstanding.contains($0) }
    }

    /// Blocks readers wait for (asked for or not), oldest first.
    public var waitedFor: [Int] { wanted }

    /// The blocks to ask for now, in order; they count as outstanding from here on.
    public mutating func nextRequests() -> [Int] {
        var requests: [Int] = []
        for block in wanted where !outstanding.contains(block) {
            guard outstanding.count < maxOutstanding else { return requests }
            outstanding.append(block)
            requests.append(block)
        }
        // A seek's block first: no read-ahead while a reader's block waits to be asked for.
        guard let window = readAheadWindow else { return requests }
        // Read-ahead only while what it would keep fits: the window's cached and asked-for blocks.
        var held = window.filter { cached[$0] != nil || outstanding.contains($0) }.count
        for block in window where cached[block] == nil && !outstanding.contains(block) {
            guard outstanding.count < maxOutstanding, held < capacity else { break }
            outstanding.append(block)
            requests.append(block)
            held += 1
        }
        return requests
    }

    /// `block`'s bytes arrived (they must be its whole range). Returns whether it was asked for;
    /// it is cached when wanted or in the read-ahead window, else only into free room.
    @discardableResult
    public mutating func arrived(block: Int, bytes: [UInt8]) -> Bool {
        guard let index = outstanding.firstIndex(of: block) else { return false }
        outstanding.remove(at: index)
        let waited = wanted.contains(block)
        wanted.removeAll { $0 == block }
        let window = readAheadWindow ?? 0..<0
        // A block the reader will want next is kept; one from a position left behind only into free room.
        guard waited || window.contains(block) || cached.count < capacity else { return true }
        while cached.count >= capacity, let victim = evictionCandidate(sparing: window) {
            cached[victim] = nil
        }
        useCounter += 1
        cached[block] = Entry(bytes: bytes, lastUse: useCounter)
        return true
    }

    /// The sharer refused `block`: it is no longer outstanding (a later read asks again).
    public mutating func refused(block: Int) {
        if let index = outstanding.firstIndex(of: block) { outstanding.remove(at: index) }
        wanted.removeAll { $0 == block }
    }

    /// The connection dropped: nothing is outstanding on it. Blocks readers still wait for are
    /// asked for again by the next `nextRequests`, and read-ahead as it decides then.
    public mutating func disconnected() {
        outstanding = []
    }

    /// The blocks read-ahead keeps: the block where the last read ended and `aheadBlocks` after it.
    public var readAheadWindow: Range<Int>? {
        guard let end = lastReadEnd, end < size else { return nil }
        let start = block(containing: end)
        return start..<min(blockCount, start + 1 + aheadBlocks)
    }

    /// The least recently used block outside `window`, else the least recently used of all.
    private func evictionCandidate(sparing window: Range<Int>) -> Int? {
        let outside = cached.filter { !window.contains($0.key) }
        let pool = outside.isEmpty ? cached : outside
        return pool.min { $0.value.lastUse < $1.value.lastUse }?.key
    }
}
