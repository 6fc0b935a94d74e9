import Testing

@testable import CowatchCore

/// Issue 25: a streamed film's blocks on the receiver's side: what is asked for when, what is
/// kept, and within which bounds.
@Suite("Stream block cache: block math, read-ahead, seeks and the cache's bound")
struct StreamBlockCacheTests {
    /// A file of 10 blocks of 100 bytes and 50 more, a cache of 4 blocks.
    func cache(cacheBlocks: Int = 4, maxOutstanding: Int = 8, ahead: Int? = nil) -> StreamBlockCache {
        StreamBlockCache(size: 1050, blockBytes: 100, cacheBytes: cacheBlocks * 100, maxOutstanding: maxOutstanding, aheadBlocks: ahead)
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
}
