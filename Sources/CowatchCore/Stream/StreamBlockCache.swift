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
/// Keeping on disk (`diskBlocks` > 0): a block memory lets go moves to a second tier, `diskBlocks`
/// slots of `blockBytes` in a file the owner keeps (slot `s` at byte `s * blockBytes`), and so
/// does a block that arrives when memory has no room for it. The cache picks the slot and queues
/// the write; it never touches the file. A block on disk is not asked for again: the owner reads
/// it (`diskSlot(ofBlock:)`) and hands it back (`loadedFromDisk`). Loading keeps the disk copy (a
/// film's bytes never change), so a block memory lets go again costs no second write. When the
/// tier is full, such a spare copy gives up its slot first, then the least recently used block
/// on disk (a fetch again costs more than a write again); a block older than all of them is not
/// kept.
///
/// The owner's rule: after every mutating call, drain `takeDiskWrites()` and write them in order
/// before the next call and before reading any slot. A slot is reused as soon as its block is
/// forgotten, so a slot read is only right between `diskSlot(ofBlock:)` and the next mutating
/// call. A write or read that failed is reported (`diskWriteFailed`, `diskReadFailed`): the block
/// is forgotten and fetched again when needed.
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
    /// Read-ahead requests (blocks no reader waits for) on the connection at most.
    public let maxAheadOutstanding: Int
    /// Blocks asked for ahead of the block where the last read ended.
    public let aheadBlocks: Int
    /// Blocks the disk tier holds at most (0: memory only).
    public let diskCapacity: Int

    private var cached: [Int: Entry] = [:]
    private var useCounter = 0
    /// Blocks readers wait for, oldest first, until they arrive, are refused or given up.
    private var wanted: [Int] = []
    /// Blocks asked for on the connection, in the order they were asked (answers come in it).
    public private(set) var outstanding: [Int] = []
    /// Where the last read ended (nil before any).
    public private(set) var lastReadEnd: Int?

    /// Blocks on disk, by block.
    private var onDisk: [Int: DiskEntry] = [:]
    /// Slots once used whose block was forgotten. With the used ones they are `0 ..< onDisk.count
    /// + freeSlots.count`, so a new slot, when none is free, is `onDisk.count`.
    private var freeSlots: [Int] = []
    /// Writes the owner has not taken yet, in the order they must happen.
    private var diskWrites: [DiskWrite] = []

    private struct Entry: Sendable {
        var bytes: [UInt8]
        var lastUse: Int
    }

    private struct DiskEntry: Sendable {
        var slot: Int
        var lastUse: Int
    }

    /// A block for the owner to write to the disk tier's file: `bytes` at `slot * blockBytes`.
    public struct DiskWrite: Sendable, Equatable {
        public let block: Int
        public let slot: Int
        public let bytes: [UInt8]

        public init(block: Int, slot: Int, bytes: [UInt8]) {
            self.block = block
            self.slot = slot
            self.bytes = bytes
        }
    }

    /// - cacheBytes: the cache's bound (at least one block is always kept).
    /// - aheadBlocks: nil for half the cache (never more than the cache holds beside one block).
    /// - diskBlocks: the disk tier's slots; 0 keeps memory only.
    /// - maxAheadOutstanding: read-ahead requests on the connection at most (nil: `maxOutstanding`).
    ///   Answers come in order, so a seek's block waits behind every read-ahead already asked
    ///   for: on a link near the film's rate, 8 MiB ahead of it are seconds.
    public init(
        size: Int, blockBytes: Int = StreamFrame.maxReadBytes, cacheBytes: Int, maxOutstanding: Int = 8, aheadBlocks: Int? = nil,
        diskBlocks: Int = 0, maxAheadOutstanding: Int? = nil
    ) {
        self.size = max(0, size)
        self.blockBytes = max(1, blockBytes)
        capacity = max(1, cacheBytes / self.blockBytes)
        self.maxOutstanding = max(1, maxOutstanding)
        self.maxAheadOutstanding = min(self.maxOutstanding, max(1, maxAheadOutstanding ?? maxOutstanding))
        self.aheadBlocks = min(capacity - 1, max(0, aheadBlocks ?? max(1, capacity / 2)))
        diskCapacity = max(0, diskBlocks)
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

    /// Bytes after where the last read ended, without a gap, in memory or on disk.
    public var bufferedAhead: Int {
        guard let end = lastReadEnd, end < size else { return 0 }
        var total = 0
        var block = block(containing: end)
        while block < blockCount, cached[block] != nil || onDisk[block] != nil {
            total += range(ofBlock: block).upperBound - max(end, range(ofBlock: block).lowerBound)
            block += 1
        }
        return total
    }

    // MARK: The disk tier

    /// The slot holding `block` on disk (without marking it used); nil when not on disk.
    public func diskSlot(ofBlock block: Int) -> Int? { onDisk[block]?.slot }

    /// Blocks on disk (some may also be in memory).
    public var diskCachedBlocks: Int { onDisk.count }

    /// Bytes on disk (some may also be in memory).
    public var diskCachedBytes: Int { onDisk.keys.reduce(0) { $0 + range(ofBlock: $1).count } }

    /// The writes queued since the last call, in order; the owner does them before anything else
    /// (see the owner's rule above).
    public mutating func takeDiskWrites() -> [DiskWrite] {
        defer { diskWrites = [] }
        return diskWrites
    }

    /// The owner read `block` from its slot: it is cached again (memory may let another block go
    /// to disk: drain the writes) and keeps its slot. Ignored when `block` is not on disk or
    /// already in memory.
    public mutating func loadedFromDisk(block: Int, bytes: [UInt8]) {
        guard onDisk[block] != nil, cached[block] == nil else { return }
        wanted.removeAll { $0 == block }
        useCounter += 1
        // Used now: its slot is not the one the eviction below may take.
        onDisk[block]?.lastUse = useCounter
        insert(block, bytes, sparing: readAheadWindow ?? 0..<0)
    }

    /// The owner could not write `write`: its block is forgotten on disk (unless it has moved to
    /// another slot since) and the slot is free.
    public mutating func diskWriteFailed(_ write: DiskWrite) {
        guard onDisk[write.block]?.slot == write.slot else { return }
        forgetOnDisk(write.block)
    }

    /// The owner could not read `block` from its slot: it is forgotten on disk, so a reader's
    /// `want` asks the sharer for it.
    public mutating func diskReadFailed(block: Int) {
        forgetOnDisk(block)
    }

    private mutating func forgetOnDisk(_ block: Int) {
        guard let entry = onDisk.removeValue(forKey: block) else { return }
        freeSlots.append(entry.slot)
    }

    /// Keeps `block`, last used at `lastUse`, on disk: in a free slot, else in the slot of a
    /// block also in memory (its copy is spare), else of the least recently used block there,
    /// which is forgotten (unless `block` is older still: then `block` is not kept). Already
    /// there: only marked used.
    private mutating func keepOnDisk(_ block: Int, _ bytes: [UInt8], lastUse: Int) {
        guard diskCapacity > 0 else { return }
        if let entry = onDisk[block] {
            onDisk[block]?.lastUse = max(entry.lastUse, lastUse)
            return
        }
        let slot: Int
        if onDisk.count < diskCapacity {
            slot = freeSlots.popLast() ?? onDisk.count
        } else {
            let victim = onDisk.min { one, other in
                let (oneSpare, otherSpare) = (cached[one.key] != nil, cached[other.key] != nil)
                return oneSpare != otherSpare ? oneSpare : one.value.lastUse < other.value.lastUse
            }
            guard let victim, cached[victim.key] != nil || victim.value.lastUse < lastUse else { return }
            onDisk[victim.key] = nil
            slot = victim.value.slot
        }
        onDisk[block] = DiskEntry(slot: slot, lastUse: lastUse)
        diskWrites.append(DiskWrite(block: block, slot: slot, bytes: bytes))
    }

    // MARK: Reads and requests

    /// A read of `length` bytes at `offset` is being served: read-ahead follows where it ends.
    public mutating func noteRead(offset: Int, length: Int) {
        lastReadEnd = min(size, max(0, offset) + max(0, length))
    }

    /// A reader waits for `block` (neither cached nor on disk): it is asked for before any
    /// read-ahead, once.
    public mutating func want(_ block: Int) {
        guard block >= 0, block < blockCount, cached[block] == nil, onDisk[block] == nil, !wanted.contains(block) else { return }
        wanted.append(block)
    }

    /// No reader waits for `block` any longer (their reads gave up): it is not asked for unless
    /// read-ahead wants it. A request already on the connection stays.
    public mutating func unwant(_ block: Int) {
        wanted.removeAll { $0 == block }
    }

    /// Whether a reader waits for a block, or a request is on the connection.
    public var hasWork: Bool { !wanted.isEmpty || !outstanding.isEmpty }

    /// Whether read-ahead would ask for a block now (one in its window is neither cached, on
    /// disk, nor asked for).
    public var wantsReadAhead: Bool {
        guard let window = readAheadWindow else { return false }
        return window.contains(where: isMissing)
    }

    /// Neither cached, on disk, nor asked for.
    private func isMissing(_ block: Int) -> Bool {
        cached[block] == nil && onDisk[block] == nil && !outstanding.contains(block)
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
        // Read-ahead only while what it would keep in memory fits: the window's cached and
        // asked-for blocks (its blocks on disk are not asked for, and come into memory as read).
        var held = window.filter { cached[$0] != nil || outstanding.contains($0) }.count
        var ahead = outstanding.filter { !wanted.contains($0) }.count
        for block in window where isMissing(block) {
            guard outstanding.count < maxOutstanding, ahead < maxAheadOutstanding, held < capacity else { break }
            ahead += 1
            outstanding.append(block)
            requests.append(block)
            held += 1
        }
        return requests
    }

    /// `block`'s bytes arrived (they must be its whole range). Returns whether it was asked for;
    /// it is cached when wanted or in the read-ahead window, else only into free room (else on
    /// disk). Drain the disk writes after it.
    @discardableResult
    public mutating func arrived(block: Int, bytes: [UInt8]) -> Bool {
        guard let index = outstanding.firstIndex(of: block) else { return false }
        outstanding.remove(at: index)
        let waited = wanted.contains(block)
        wanted.removeAll { $0 == block }
        let window = readAheadWindow ?? 0..<0
        // A block the reader will want next is kept; one from a position left behind only into
        // free room, or on disk: it came over the network already, and a seek back may want it.
        guard waited || window.contains(block) || cached.count < capacity else {
            useCounter += 1
            keepOnDisk(block, bytes, lastUse: useCounter)
            return true
        }
        insert(block, bytes, sparing: window)
        return true
    }

    /// Caches `block`, letting the least recently used go (to disk) while memory is full.
    private mutating func insert(_ block: Int, _ bytes: [UInt8], sparing window: Range<Int>) {
        while cached.count >= capacity, let victim = evictionCandidate(sparing: window),
            let entry = cached.removeValue(forKey: victim)
        {
            keepOnDisk(victim, entry.bytes, lastUse: entry.lastUse)
        }
        useCounter += 1
        cached[block] = Entry(bytes: bytes, lastUse: useCounter)
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
