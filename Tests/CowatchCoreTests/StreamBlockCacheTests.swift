import Testing

@testable import CowatchCore

/// Issue 25: a streamed film's blocks on the receiver's side: what is asked for when, what is
/// kept (in memory or on disk), and within which bounds.
@Suite("Stream block cache: block math, read-ahead, seeks and the cache's bound")
struct StreamBlockCacheTests {
    /// A file of 10 blocks of 100 bytes and 50 more, a cache of 4 blocks (and `diskBlocks` on disk).
    func cache(cacheBlocks: Int = 4, maxOutstanding: Int = 8, ahead: Int? = nil, diskBlocks: Int = 0) -> StreamBlockCache {
        StreamBlockCache(
            size: 1050, blockBytes: 100, cacheBytes: cacheBlocks * 100, maxOutstanding: maxOutstanding, aheadBlocks: ahead,
            diskBlocks: diskBlocks)
    }

    func bytes(of cache: StreamBlockCache, _ block: Int) -> [UInt8] {
        cache.range(ofBlock: block).map { UInt8(truncatingIfNeeded: $0) }
    }

    /// Answers every outstanding request in order.
    func answerAll(_ cache: inout StreamBlockCache) {
        for block in cache.outstanding { cache.arrived(block: block, bytes: bytes(of: cache, block)) }
    }

    @Test("blocks are aligned, the last one short; a read's blocks are clipped to the file")
    func blockMath() {
        let cache = cache()
        #expect(cache.blockCount == 11)
        #expect(cache.range(ofBlock: 0) == 0..<100)
        #expect(cache.range(ofBlock: 10) == 1000..<1050)
        #expect(cache.block(containing: 99) == 0)
        #expect(cache.block(containing: 100) == 1)
        #expect(cache.blocks(covering: 50, length: 100) == 0..<2)
        #expect(cache.blocks(covering: 100, length: 100) == 1..<2)
        #expect(cache.blocks(covering: 1040, length: 500) == 10..<11)
        #expect(cache.blocks(covering: 1050, length: 1).isEmpty)
        #expect(cache.blocks(covering: -1, length: 10).isEmpty)
        #expect(StreamBlockCache(size: 0, cacheBytes: 1 << 20).blockCount == 0)
        #expect(StreamBlockCache(size: 1 << 20, cacheBytes: 64 << 20).blockCount == 1)
    }

    @Test("the default read-ahead is half the cache, and never more than it holds beside one block")
    func aheadBounds() {
        #expect(StreamBlockCache(size: 1 << 30, cacheBytes: 64 << 20).aheadBlocks == 32)
        #expect(cache(cacheBlocks: 4).aheadBlocks == 2)
        #expect(cache(cacheBlocks: 1).aheadBlocks == 0)
        #expect(cache(cacheBlocks: 3, ahead: 50).aheadBlocks == 2)
    }

    @Test("a reader's block is asked for once, however many want it, and read-ahead follows it")
    func wantedThenAhead() {
        var cache = cache()
        cache.noteRead(offset: 0, length: 100)
        cache.want(0)
        cache.want(0)
        // A read ending on a boundary: the window is the next block and 2 more.
        #expect(cache.nextRequests() == [0, 1, 2, 3])
        #expect(cache.nextRequests() == [])
        cache.want(0)
        #expect(cache.nextRequests() == [], "asked for already")
        answerAll(&cache)
        #expect(cache.outstanding.isEmpty)
        #expect(cache.bytes(ofBlock: 0) == bytes(of: cache, 0))
        #expect(cache.bufferedAhead == 300, "blocks 1 to 3 after the read's end")
        #expect(!cache.hasWork)
    }

    @Test("read-ahead keeps at most maxAheadOutstanding requests on the connection; a seek's block still goes at once")
    func readAheadOutstandingBound() {
        var cache = StreamBlockCache(size: 100_000, blockBytes: 100, cacheBytes: 100 * 100, maxOutstanding: 8, aheadBlocks: 30, maxAheadOutstanding: 3)
        cache.noteRead(offset: 0, length: 100)
        let first = cache.nextRequests()
        #expect(first == [1, 2, 3])
        let none = cache.nextRequests()
        #expect(none.isEmpty, "three read-ahead requests are on the connection")
        cache.want(500)
        let seek = cache.nextRequests()
        #expect(seek == [500], "a reader's block is not held back by read-ahead")
        let arrived = cache.arrived(block: 1, bytes: [UInt8](repeating: 0, count: 100))
        #expect(arrived)
        let next = cache.nextRequests()
        #expect(next == [4])
    }

    @Test("at most maxOutstanding requests, and a seek's block goes before any read-ahead")
    func seekFirst() {
        var cache = StreamBlockCache(size: 100_000, blockBytes: 100, cacheBytes: 100 * 100, maxOutstanding: 8, aheadBlocks: 30)
        cache.noteRead(offset: 0, length: 100)
        cache.want(0)
        let first = cache.nextRequests()
        #expect(first == Array(0..<8), "the reader's block, then read-ahead up to 8 on the link")
        // A seek far away while 8 are outstanding: nothing more goes out until answers come…
        cache.noteRead(offset: 50_000, length: 100)
        cache.want(500)
        #expect(cache.nextRequests() == [])
        // …and the first free slot is the seek's block, not the old read-ahead.
        cache.arrived(block: 0, bytes: bytes(of: cache, 0))
        #expect(cache.nextRequests() == [500])
        cache.arrived(block: 1, bytes: bytes(of: cache, 1))
        #expect(cache.nextRequests() == [501], "read-ahead now follows the seek")
        #expect(cache.outstanding.count == 8)
    }

    @Test("read-ahead never asks for more than the cache holds, and the cache keeps to its bound")
    func bounded() {
        var cache = cache(cacheBlocks: 3)
        var maxHeld = 0
        for block in 0..<cache.blockCount {
            let range = cache.range(ofBlock: block)
            cache.noteRead(offset: range.lowerBound, length: range.count)
            if cache.bytes(ofBlock: block) == nil { cache.want(block) }
            _ = cache.nextRequests()
            #expect(cache.outstanding.count <= 3)
            answerAll(&cache)
            maxHeld = max(maxHeld, cache.cachedBlocks)
            #expect(cache.cachedBytes <= 300)
            #expect(cache.bytes(ofBlock: block) == bytes(of: cache, block), "block \(block) was lost")
        }
        #expect(maxHeld == 3)
    }

    @Test("room is made from blocks outside the read-ahead window, least recently used first")
    func evictionSparesTheWindow() {
        var cache = cache(cacheBlocks: 3, ahead: 0)
        // Reads within blocks 5, 6, 7, then 0 (each read's window is its own block).
        for block in [5, 6, 7, 0] {
            cache.noteRead(offset: block * 100, length: 50)
            cache.want(block)
            #expect(cache.nextRequests() == [block])
            answerAll(&cache)
        }
        #expect(cache.cachedBlocks == 3)
        #expect(!cache.isCached(5), "the least recently used went")
        // Now 0 is the least recently used, but the reader is in it: 6 goes for another reader's 9.
        _ = cache.bytes(ofBlock: 6)
        _ = cache.bytes(ofBlock: 7)
        cache.want(9)
        #expect(cache.nextRequests() == [9])
        answerAll(&cache)
        #expect(cache.isCached(0) && cache.isCached(7) && cache.isCached(9))
        #expect(!cache.isCached(6))
    }

    @Test("read-ahead for a position a seek left behind only goes into free room")
    func staleAheadDropped() {
        var cache = cache(cacheBlocks: 2, ahead: 1)
        cache.noteRead(offset: 0, length: 50)
        cache.want(0)
        #expect(cache.nextRequests() == [0, 1])
        cache.arrived(block: 0, bytes: bytes(of: cache, 0))
        cache.noteRead(offset: 800, length: 50)
        cache.want(8)
        #expect(cache.nextRequests() == [8, 9])
        cache.arrived(block: 8, bytes: bytes(of: cache, 8))
        // The cache is full (0, 8); block 1 is neither wanted nor in the window 8–9: dropped.
        let asked = cache.arrived(block: 1, bytes: bytes(of: cache, 1))
        #expect(asked)
        #expect(!cache.isCached(1))
        #expect(cache.isCached(8))
    }

    @Test("a dropped link forgets what was outstanding: waited-for blocks are asked again first")
    func reconnect() {
        var cache = cache()
        cache.noteRead(offset: 300, length: 50)
        cache.want(3)
        #expect(cache.nextRequests() == [3, 4, 5])
        cache.disconnected()
        #expect(cache.outstanding.isEmpty)
        #expect(cache.hasWork, "block 3 is still waited for")
        #expect(cache.nextRequests() == [3, 4, 5])
        let asked = cache.arrived(block: 7, bytes: bytes(of: cache, 7))
        #expect(!asked, "not asked for")
    }

    @Test("a refused or given-up block is no longer asked for; wanted again, it is")
    func refusedAndUnwanted() {
        var cache = cache(cacheBlocks: 1)
        cache.noteRead(offset: 0, length: 50)
        cache.want(0)
        #expect(cache.nextRequests() == [0])
        cache.refused(block: 0)
        #expect(!cache.hasWork)
        #expect(cache.nextRequests() == [0], "nothing waits, but read-ahead's window still holds block 0")
        cache.disconnected()
        cache.noteRead(offset: 1000, length: 10)
        cache.want(5)
        cache.unwant(5)
        #expect(cache.waitedFor.isEmpty)
        #expect(cache.nextRequests() == [10], "only the window (the last block)")
        #expect(!cache.wantsReadAhead)
    }

    @Test("what is buffered ahead counts from the last read's end, up to the first gap")
    func bufferedAhead() {
        var cache = cache(cacheBlocks: 6, ahead: 0)
        for block in [2, 3, 5] {
            cache.noteRead(offset: block * 100, length: 50)
            cache.want(block)
            _ = cache.nextRequests()
            answerAll(&cache)
        }
        cache.noteRead(offset: 200, length: 50)
        #expect(cache.bufferedAhead == 150, "the rest of block 2 and block 3; block 4 is missing")
        cache.noteRead(offset: 1000, length: 50)
        #expect(cache.bufferedAhead == 0, "at the end of the file")
    }

    // MARK: The disk tier

    /// Reads inside `block` as its owner does: from memory, else from its slot in `disk`, else
    /// from the sharer; then read-ahead, every request answered at once. Writes queued are
    /// drained into `disk` after every mutating call. Returns where the bytes came from.
    @discardableResult
    func read(_ block: Int, _ cache: inout StreamBlockCache, disk: inout [Int: [UInt8]]) -> String {
        cache.noteRead(offset: block * 100, length: 50)
        let source: String
        if let bytes = cache.bytes(ofBlock: block) {
            #expect(bytes == self.bytes(of: cache, block))
            source = "memory"
        } else if let slot = cache.diskSlot(ofBlock: block) {
            #expect(disk[slot] == bytes(of: cache, block), "slot \(slot) holds block \(block)")
            cache.loadedFromDisk(block: block, bytes: disk[slot] ?? [])
            drain(&cache, into: &disk)
            source = "disk"
        } else {
            cache.want(block)
            source = "sharer"
        }
        _ = cache.nextRequests()
        for asked in cache.outstanding {
            cache.arrived(block: asked, bytes: bytes(of: cache, asked))
            drain(&cache, into: &disk)
        }
        #expect(cache.isCached(block))
        return source
    }

    func drain(_ cache: inout StreamBlockCache, into disk: inout [Int: [UInt8]]) {
        for write in cache.takeDiskWrites() {
            #expect(write.slot >= 0 && write.slot < cache.diskCapacity)
            disk[write.slot] = write.bytes
        }
    }

    @Test("a block memory lets go moves to a disk slot, written once; a read of it comes back from there")
    func evictionToDisk() {
        var cache = cache(cacheBlocks: 2, ahead: 0, diskBlocks: 3)
        var disk: [Int: [UInt8]] = [:]
        read(0, &cache, disk: &disk)
        read(1, &cache, disk: &disk)
        #expect(disk.isEmpty, "memory had room")
        cache.noteRead(offset: 250, length: 10)
        cache.want(2)
        #expect(cache.nextRequests() == [2])
        cache.arrived(block: 2, bytes: bytes(of: cache, 2))
        #expect(cache.takeDiskWrites() == [.init(block: 0, slot: 0, bytes: bytes(of: cache, 0))], "the least recently used")
        #expect(cache.takeDiskWrites().isEmpty, "taken once")
        #expect(!cache.isCached(0))
        #expect(cache.diskSlot(ofBlock: 0) == 0)
        #expect(cache.diskCachedBlocks == 1 && cache.diskCachedBytes == 100)
        disk[0] = bytes(of: cache, 0)
        // Back to block 0: from its slot, not the sharer; memory lets 1 go to the next slot.
        #expect(read(0, &cache, disk: &disk) == "disk")
        #expect(cache.isCached(0))
        #expect(cache.diskSlot(ofBlock: 0) == 0, "the disk copy stays")
        #expect(cache.diskSlot(ofBlock: 1) == 1)
        // Block 0 goes again (2 was read since): its copy is on disk already, so nothing is written.
        #expect(read(2, &cache, disk: &disk) == "memory")
        cache.noteRead(offset: 350, length: 10)
        cache.want(3)
        #expect(cache.nextRequests() == [3])
        cache.arrived(block: 3, bytes: bytes(of: cache, 3))
        #expect(!cache.isCached(0))
        #expect(cache.takeDiskWrites().isEmpty)
        #expect(cache.diskCachedBlocks == 2 && cache.diskCachedBytes == 200)
        #expect(cache.cachedBlocks == 2, "memory keeps to its bound")
        #expect(read(0, &cache, disk: &disk) == "disk")
    }

    @Test("a full disk tier reuses the slot of its least recently used block, which is then asked for again")
    func slotReuse() {
        var cache = cache(cacheBlocks: 1, ahead: 0, diskBlocks: 2)
        var disk: [Int: [UInt8]] = [:]
        for block in 0..<3 { #expect(read(block, &cache, disk: &disk) == "sharer") }
        #expect(cache.diskSlot(ofBlock: 0) == 0 && cache.diskSlot(ofBlock: 1) == 1)
        // Block 0 back from disk: memory lets 2 go, and 1 is the least recently used on disk.
        #expect(read(0, &cache, disk: &disk) == "disk")
        #expect(cache.diskSlot(ofBlock: 1) == nil, "the least recently used went")
        #expect(cache.diskSlot(ofBlock: 2) == 1, "into its slot")
        #expect(read(1, &cache, disk: &disk) == "sharer", "forgotten: asked for again")
        // Memory lets 1 go: 2 is now the least recently used on disk (0 was read after it).
        #expect(read(3, &cache, disk: &disk) == "sharer")
        #expect(cache.diskSlot(ofBlock: 2) == nil)
        #expect(cache.diskSlot(ofBlock: 1) == 1)
        #expect(cache.diskSlot(ofBlock: 0) == 0)
        #expect(cache.diskCachedBlocks == 2, "the tier keeps to its bound")
        #expect(read(2, &cache, disk: &disk) == "sharer")
        // Slot 1 was written three times; the read checks it holds 1's bytes now.
        #expect(read(1, &cache, disk: &disk) == "disk")
    }

    @Test("a full disk tier gives up the spare copy of a block also in memory before a block only on disk")
    func spareCopyFirst() {
        var cache = cache(cacheBlocks: 2, ahead: 0, diskBlocks: 2)
        var disk: [Int: [UInt8]] = [:]
        for block in 0..<3 { read(block, &cache, disk: &disk) }
        #expect(read(3, &cache, disk: &disk) == "sharer")
        // Memory 2, 3; disk 0, 1. Block 0 back from disk: memory lets 2 go, into 1's slot.
        #expect(read(0, &cache, disk: &disk) == "disk")
        #expect(cache.diskSlot(ofBlock: 2) == 1 && cache.diskSlot(ofBlock: 0) == 0)
        // Memory 0, 3. Memory lets 3 go: 0's copy (spare: 0 is in memory) gives up its slot,
        // though 2 is the least recently used on disk.
        #expect(read(5, &cache, disk: &disk) == "sharer")
        #expect(cache.diskSlot(ofBlock: 3) == 0)
        #expect(cache.diskSlot(ofBlock: 2) == 1)
        #expect(cache.diskSlot(ofBlock: 0) == nil && cache.isCached(0))
        #expect([0, 2, 3, 5].allSatisfy { cache.isCached($0) || cache.diskSlot(ofBlock: $0) != nil }, "4 blocks held in 4 places")
    }

    @Test("read-ahead and a reader never ask the sharer for a block on disk; buffered-ahead counts both tiers")
    func aheadSkipsDisk() {
        var cache = cache(cacheBlocks: 3, ahead: 2, diskBlocks: 8)
        var disk: [Int: [UInt8]] = [:]
        for block in 0..<6 { read(block, &cache, disk: &disk) }
        // Read-ahead fetched up to block 7: 5, 6, 7 in memory, 0 to 4 on disk.
        #expect(cache.diskSlot(ofBlock: 4) != nil && cache.isCached(5) && cache.isCached(7))
        // A seek back to block 1: its window (1 to 3) is on disk.
        cache.noteRead(offset: 150, length: 10)
        #expect(!cache.wantsReadAhead)
        #expect(cache.nextRequests().isEmpty)
        cache.want(1)
        #expect(cache.waitedFor.isEmpty, "on disk: the owner reads it from there")
        #expect(cache.bufferedAhead == 640, "block 1 after byte 160 and blocks 2 to 7, from either tier")
        #expect(read(1, &cache, disk: &disk) == "disk")
        #expect(read(2, &cache, disk: &disk) == "disk")
        #expect(cache.outstanding.isEmpty)
        // A read near the end: its window's blocks not held anywhere are asked for.
        cache.noteRead(offset: 850, length: 10)
        #expect(cache.wantsReadAhead)
        #expect(cache.nextRequests() == [8, 9, 10])
    }

    @Test("a block that memory has no room for when it arrives goes to disk")
    func staleAheadToDisk() {
        var cache = cache(cacheBlocks: 2, ahead: 1, diskBlocks: 4)
        cache.noteRead(offset: 0, length: 50)
        cache.want(0)
        #expect(cache.nextRequests() == [0, 1])
        cache.arrived(block: 0, bytes: bytes(of: cache, 0))
        cache.noteRead(offset: 800, length: 50)
        cache.want(8)
        #expect(cache.nextRequests() == [8, 9])
        cache.arrived(block: 8, bytes: bytes(of: cache, 8))
        #expect(cache.takeDiskWrites().isEmpty)
        cache.arrived(block: 1, bytes: bytes(of: cache, 1))
        #expect(!cache.isCached(1))
        #expect(cache.takeDiskWrites() == [.init(block: 1, slot: 0, bytes: bytes(of: cache, 1))])
        #expect(cache.isCached(0) && cache.isCached(8))
    }

    @Test("a failed write or read forgets the block on disk and frees its slot; it is asked for again")
    func diskFailures() {
        var cache = cache(cacheBlocks: 1, ahead: 0, diskBlocks: 2)
        var disk: [Int: [UInt8]] = [:]
        read(0, &cache, disk: &disk)
        cache.noteRead(offset: 150, length: 10)
        cache.want(1)
        _ = cache.nextRequests()
        cache.arrived(block: 1, bytes: bytes(of: cache, 1))
        let writes = cache.takeDiskWrites()
        #expect(writes.map(\.block) == [0])
        cache.diskWriteFailed(writes[0])
        #expect(cache.diskSlot(ofBlock: 0) == nil)
        #expect(cache.diskCachedBlocks == 0)
        #expect(read(0, &cache, disk: &disk) == "sharer", "forgotten: asked again")
        #expect(cache.diskSlot(ofBlock: 1) == 0, "the freed slot is used again")
        read(2, &cache, disk: &disk)
        #expect(cache.diskSlot(ofBlock: 0) == 1)
        // A write reported late, for a slot that holds another block now, changes nothing.
        cache.diskWriteFailed(.init(block: 1, slot: 1, bytes: []))
        #expect(cache.diskSlot(ofBlock: 1) == 0)
        cache.diskReadFailed(block: 1)
        #expect(cache.diskSlot(ofBlock: 1) == nil)
        cache.noteRead(offset: 150, length: 10)
        cache.want(1)
        #expect(cache.nextRequests() == [1])
    }

    @Test("without a disk tier nothing goes to disk: a block memory lets go is asked for again, as before")
    func noDiskTier() {
        var cache = cache(cacheBlocks: 3, diskBlocks: 0)
        var disk: [Int: [UInt8]] = [:]
        var fetched = 0
        for step in 0..<200 {
            // Forward runs with jumps back and ahead.
            let block = (step + step * step / 13) % 11
            if read(block, &cache, disk: &disk) == "sharer" { fetched += 1 }
            #expect(cache.diskCachedBlocks == 0 && cache.diskCachedBytes == 0)
            #expect(cache.cachedBlocks <= 3)
        }
        #expect(disk.isEmpty, "nothing was ever queued for disk")
        #expect((0..<11).allSatisfy { cache.diskSlot(ofBlock: $0) == nil })
        #expect(fetched > 11, "blocks were fetched again")
        // A block that arrives with no room in memory is dropped.
        var stale = self.cache(cacheBlocks: 2, ahead: 1)
        stale.noteRead(offset: 0, length: 50)
        stale.want(0)
        _ = stale.nextRequests()
        stale.noteRead(offset: 800, length: 50)
        stale.want(8)
        _ = stale.nextRequests()
        stale.arrived(block: 0, bytes: bytes(of: stale, 0))
        stale.arrived(block: 8, bytes: bytes(of: stale, 8))
        stale.arrived(block: 1, bytes: bytes(of: stale, 1))
        #expect(!stale.isCached(1) && stale.diskSlot(ofBlock: 1) == nil && stale.takeDiskWrites().isEmpty)
    }
}

