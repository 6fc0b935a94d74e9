import CowatchCore
import Logging
import NIOCore

/// How a film stream fares, for `get_shares` and the log.
public struct StreamReceiverStats: Sendable, Equatable {
    /// File bytes received since the receiver was made.
    public var receivedBytes: Int
    /// File bytes a second over the last ~5 s.
    public var bytesPerSecond: Double
    /// Cached bytes after where the last read ended, without a gap.
    public var bufferedAhead: Int
    /// Whether a connection to the sharer is up now.
    public var connected: Bool
    /// The last thing that went wrong (a dropped link, a refusal, a read that timed out); nil
    /// again once bytes flow.
    public var lastError: CowatchError?
    /// File bytes kept in the disk tier (0 without one).
    public var diskCachedBytes: Int

    public init(
        receivedBytes: Int, bytesPerSecond: Double, bufferedAhead: Int, connected: Bool, lastError: CowatchError?, diskCachedBytes: Int = 0
    ) {
        self.receivedBytes = receivedBytes
        self.bytesPerSecond = bytesPerSecond
        self.bufferedAhead = bufferedAhead
        self.connected = connected
        self.lastError = lastError
        self.diskCachedBytes = diskCachedBytes
    }
}

/// Reads a film a member shares (issue 25), for the local player: any byte range of it, on a
/// connection of its own to the room server, which relays `StreamFrame`s end to end to the
/// sharer.
///
/// The file is read in blocks (`StreamFrame.maxReadBytes`) kept in a cache bounded by
/// `cacheBytes`, with read-ahead after each read and a reader's block asked for before any
/// read-ahead (`StreamBlockCache`); readers of the same block share one request. With a `disk`
/// tier, blocks memory lets go are kept in an unlinked file (`StreamDiskFile`) so a seek back to
/// them is served without the sharer; when the file cannot be made the receiver keeps memory
/// only, and a block whose write or read fails is fetched again. The connection
/// opens on the first read and stays, pinging every `Timing.pingInterval` s while idle so the
/// watchdogs of both ends and the relay's idle timeout see life. A dropped link is opened again
/// after 0.5, 1, 2, 4 s, and what readers waited for is asked again; after 5 failures in a row
/// the waiting reads fail with the last error (a later read tries again). A server's `not-found`,
/// `auth-failed`, `not-permitted` (and the like: `isFinal`) fails the waiting reads at once.
///
/// Threading: an actor; `read` may be called concurrently from any task, and a cancelled
/// read returns at once. Errors: `invalid-request` (a range outside the file), `timeout` (a
/// block did not come within `Timing.readDeadline` s), the sharer's refusal with its code, the
/// server's error line with its code, `io-error` (the link failed 5 times, or `close()`),
/// `tls-failed`, `certificate-mismatch`, `protocol-violation`.
public actor StreamReceiver {
    /// A disk tier for the block cache.
    public struct DiskCache: Sendable {
        /// Where the tier's file is made (the state directory). It is unlinked at once: nothing
        /// is left there, even after a crash.
        public var directory: String
        /// The tier's cap in bytes; less than a block keeps memory only. Capped further at half
        /// of what the file system has free when the receiver is made.
        public var bytes: Int

        public init(directory: String, bytes: Int) {
            self.directory = directory
            self.bytes = bytes
        }
    }

    /// Waits and retries; shorter ones in tests.
    struct Timing: Sendable {
        var readDeadline = 30.0
        var pingInterval = 10.0
        /// Seconds to wait after the 1st, 2nd, … failure in a row; one more failure gives up.
        var backoff = [0.5, 1, 2, 4]
    }

    /// The shared file's size in bytes.
    public nonisolated let size: Int
    private let endpoint: TransferClient.Endpoint
    private let offer: SharedMedia
    private let logger: Logger
    private let timing: Timing
    private var blocks: StreamBlockCache
    /// The disk tier's file; nil for memory only, and after `close()`.
    private var disk: StreamDiskFile?

    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<Result<[UInt8], CowatchError>, Never>
        var deadline: Task<Void, Never>
    }
    /// Readers waiting, by block.
    private var waiters: [Int: [Waiter]] = [:]
    private var nextWaiterID = 0

    /// The task that connects, reconnects and reads; nil when no link is wanted now.
    private var connection: Task<Void, Never>?
    /// Counts connection tasks: what an older one reports is ignored.
    private var generation = 0
    /// The link's frames to send, while it is up.
    private var outbox: AsyncStream<[UInt8]>.Continuation?
    private var channel: (any Channel)?
    private var failures = 0
    /// After giving up: misses fail with this error until then, rather than connect again at
    /// the pace of the player's retries.
    private var heldOff: (error: CowatchError, until: Double)?
    private var lastSent = 0.0
    private var closed = false

    private var receivedBytes = 0
    private var samples: [(time: Double, bytes: Int)] = []
    private var linkedSince: Double?
    private var lastError: CowatchError?

    /// - cacheBytes: the memory cache's bound.
    /// - disk: a disk tier beside it; nil keeps memory only.
    public init(
        endpoint: TransferClient.Endpoint, offer: SharedMedia, cacheBytes: Int = 64 << 20, disk: DiskCache? = nil, logger: Logger
    ) {
        self.init(endpoint: endpoint, offer: offer, cacheBytes: cacheBytes, disk: disk, timing: Timing(), logger: logger)
    }

    init(
        endpoint: TransferClient.Endpoint, offer: SharedMedia, cacheBytes: Int, disk: DiskCache? = nil,
        blockBytes: Int = StreamFrame.maxReadBytes, timing: Timing, logger: Logger
    ) {
        self.endpoint = endpoint
        self.offer = offer
        self.timing = timing
        size = offer.file.size
        var logger = logger
        logger[metadataKey: "cowatch.stream.from"] = "\(offer.by)"
        logger[metadataKey: "cowatch.stream.file"] = "\(offer.file.name)"
        self.logger = logger
        let file = Self.diskFile(disk, blockBytes: blockBytes, logger: logger)
        self.disk = file
        blocks = StreamBlockCache(
            size: offer.file.size, blockBytes: blockBytes, cacheBytes: cacheBytes, diskBlocks: file?.slots ?? 0,
            maxAheadOutstanding: Self.aheadOutstanding)
    }

    /// The disk tier's file, or nil (memory only) when none was asked for or it cannot be made.
    private static func diskFile(_ disk: DiskCache?, blockBytes: Int, logger: Logger) -> StreamDiskFile? {
        guard let disk, disk.bytes >= blockBytes else { return nil }
        do {
            let file = try StreamDiskFile(directory: disk.directory, blockBytes: blockBytes, maxBytes: disk.bytes)
            logger.debug(
                "stream disk cache",
                metadata: [
                    "cowatch.stream.disk.directory": "\(disk.directory)", "cowatch.stream.disk.bytes": "\(file.slots * blockBytes)",
                    "cowatch.stream.disk.asked": "\(disk.bytes)",
                ])
            return file
        } catch {
            logger.notice(
                "no stream disk cache; memory only",
                metadata: ["cowatch.stream.disk.directory": "\(disk.directory)", "cowatch.stream.error": "\(error)"])
            return nil
        }
    }

    // MARK: Reading

    /// Bytes `offset ..< offset + length` of the shared file, fewer only at its end.
    public func read(offset: Int, length: Int) async throws(CowatchError) -> [UInt8] {
        guard offset >= 0, length > 0, offset < size else {
            throw CowatchError(.invalidRequest, "no bytes \(offset)+\(length) in a file of \(size)")
        }
        let end = min(size, offset + length)
        var result: [UInt8] = []
        result.reserveCapacity(end - offset)
        // Block by block, each noted as read when asked for: read-ahead follows a long read.
        for block in blocks.blocks(covering: offset, length: end - offset) {
            let range = blocks.range(ofBlock: block)
            let from = max(offset, range.lowerBound)
            let to = min(end, range.upperBound)
            blocks.noteRead(offset: from, length: to - from)
            let bytes = try await bytes(ofBlock: block)
            result += bytes[(from - range.lowerBound)..<(to - range.lowerBound)]
        }
        return result
    }

    /// `block`'s bytes, from memory, the disk or the sharer.
    private func bytes(ofBlock block: Int) async throws(CowatchError) -> [UInt8] {
        guard !closed else { throw Self.closedError }
        if let bytes = blocks.bytes(ofBlock: block) ?? bytesFromDisk(block) {
            if blocks.wantsReadAhead { startLinkIfNeeded() }
            pump()
            return bytes
        }
        if let heldOff, SystemClock.monotonicSeconds() < heldOff.until { throw heldOff.error }
        blocks.want(block)
        let id = nextWaiterID
        nextWaiterID += 1
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<[UInt8], CowatchError>, Never>) in
                guard !Task.isCancelled else {
                    continuation.resume(returning: .failure(Self.cancelledError))
                    return
                }
                // Isolated to this actor, as the closure it is made in.
                let deadline = Task { [timing] in
                    try? await Task.sleep(for: .seconds(timing.readDeadline))
                    guard !Task.isCancelled else { return }
                    self.expire(id, block: block)
                }
                waiters[block, default: []].append(Waiter(id: id, continuation: continuation, deadline: deadline))
                startLinkIfNeeded()
                pump()
            }
        } onCancel: {
            Task { await self.finishWaiter(id, block: block, with: Self.cancelledError) }
        }
        if case .failure = result, waiters[block] == nil { blocks.unwant(block) }
        return try result.get()
    }

    /// `block`'s bytes from the disk tier, cached again; nil when it is not there or the read
    /// failed (then it is forgotten there, and fetched from the sharer).
    private func bytesFromDisk(_ block: Int) -> [UInt8]? {
        guard let disk, let slot = blocks.diskSlot(ofBlock: block) else { return nil }
        do {
            let bytes = try disk.read(slot: slot, count: blocks.range(ofBlock: block).count)
            blocks.loadedFromDisk(block: block, bytes: bytes)
            writeToDisk()
            return bytes
        } catch {
            blocks.diskReadFailed(block: block)
            logger.debug("stream disk read failed", metadata: ["cowatch.stream.block": "\(block)", "cowatch.stream.error": "\(error)"])
            return nil
        }
    }

    /// Writes what the cache moved to disk, right after the call that moved it (its rule: a
    /// slot may be reused by the next call). Synchronously, inside the actor: a block is 1 MiB
    /// into the page cache, well under a millisecond, and at most one or two per block received
    /// or loaded; a thread of its own would cost more than it saves.
    private func writeToDisk() {
        for write in blocks.takeDiskWrites() {
            do {
                guard let disk else { throw Self.closedError }
                try disk.write(write.bytes, slot: write.slot)
            } catch {
                blocks.diskWriteFailed(write)
                logger.debug(
                    "stream disk write failed", metadata: ["cowatch.stream.block": "\(write.block)", "cowatch.stream.error": "\(error)"])
            }
        }
    }

    private func expire(_ id: Int, block: Int) {
        let error = CowatchError(.timeout, "bytes \(blocks.range(ofBlock: block)) did not come within \(Int(timing.readDeadline)) s")
        if finishWaiter(id, block: block, with: error) {
            lastError = error
            logger.debug("stream read timed out", metadata: ["cowatch.stream.block": "\(block)"])
        }
    }

    /// Ends one reader's wait with `error`. Returns whether it was still waiting.
    @discardableResult
    private func finishWaiter(_ id: Int, block: Int, with error: CowatchError) -> Bool {
        guard let index = waiters[block]?.firstIndex(where: { $0.id == id }), let waiter = waiters[block]?.remove(at: index) else {
            return false
        }
        if waiters[block]?.isEmpty == true {
            waiters[block] = nil
            blocks.unwant(block)
        }
        waiter.deadline.cancel()
        waiter.continuation.resume(returning: .failure(error))
        return true
    }

    /// Ends every wait for `block` with `result`.
    private func finishBlock(_ block: Int, with result: Result<[UInt8], CowatchError>) {
        for waiter in waiters.removeValue(forKey: block) ?? [] {
            waiter.deadline.cancel()
            waiter.continuation.resume(returning: result)
        }
    }

    /// Ends every wait with `error`.
    private func failAll(_ error: CowatchError) {
        for block in Array(waiters.keys) {
            finishBlock(block, with: .failure(error))
            blocks.unwant(block)
        }
    }

    /// Sends what the cache decides to ask for now, when the link is up.
    private func pump() {
        guard let outbox else { return }
        for block in blocks.nextRequests() {
            let range = blocks.range(ofBlock: block)
            outbox.yield(StreamFrame.read(offset: range.lowerBound, length: range.count).encoded())
            lastSent = SystemClock.monotonicSeconds()
        }
    }

    // MARK: Status and end

    public func stats() -> StreamReceiverStats {
        let now = SystemClock.monotonicSeconds()
        samples.removeAll { now - $0.time > 5 }
        let span = min(5, max(1, now - (linkedSince ?? now)))
        return StreamReceiverStats(
            receivedBytes: receivedBytes, bytesPerSecond: Double(samples.reduce(0) { $0 + $1.bytes }) / span,
            bufferedAhead: blocks.bufferedAhead, connected: outbox != nil, lastError: lastError,
            diskCachedBytes: disk == nil ? 0 : blocks.diskCachedBytes)
    }

    /// Ends the connection, fails the waiting reads (`io-error`), and closes the disk tier's file
    /// (its space goes back); later reads fail too.
    public func close() async {
        guard !closed else { return }
        closed = true
        disk?.close()
        disk = nil
        generation += 1
        outbox?.finish()
        outbox = nil
        channel?.close(promise: nil)
        channel = nil
        let task = connection
        connection = nil
        task?.cancel()
        failAll(Self.closedError)
        await task?.value
        logger.debug("stream closed", metadata: ["cowatch.stream.received": "\(receivedBytes)"])
    }

    /// Blocks cached now (for tests: the cache's bound).
    var cachedBytes: Int { blocks.cachedBytes }

    /// Read-ahead requests on the connection at once: 3 MiB keep a loopback or LAN link busy
    /// (1 076 Mbit/s measured with 8), while a seek's block waits behind at most 3 MiB, not 8 —
    /// 0.6 s rather than 1.7 s at 40 Mbit/s (`cowatch-bench share --link-rate`).
    static let aheadOutstanding = 3

    private static let closedError = CowatchError(.ioError, "the stream was closed")
    private static let cancelledError = CowatchError(.ioError, "the read was cancelled")

    // MARK: The link

    /// Starts the connection task when none runs (and we did not just give up).
    private func startLinkIfNeeded() {
        guard !closed, connection == nil else { return }
        if let heldOff, SystemClock.monotonicSeconds() < heldOff.until { return }
        generation += 1
        let generation = generation
        connection = Task { await self.keepLinked(generation) }
    }

    /// Connects, and connects again after a drop, until `dropped` says to stop.
    private nonisolated func keepLinked(_ generation: Int) async {
        while true {
            let error: CowatchError
            do {
                try await linkOnce(generation)
                error = CowatchError(.ioError, "the room server closed the stream")
            } catch let thrown {
                error = thrown
            }
            guard let delay = await dropped(generation, error) else { return }
            try? await Task.sleep(for: .seconds(delay))
            guard await isCurrent(generation) else { return }
        }
    }

    /// One connection: the request line, `stream_ready`, then frames until it ends.
    private nonisolated func linkOnce(_ generation: Int) async throws(CowatchError) {
        let request = StreamRequest(
            room: endpoint.room, name: endpoint.name, token: endpoint.token, from: offer.by, fingerprint: offer.file.fingerprint)
        let expected = size
        try await TransferClient.connected(endpoint) { inbound, outbound, channel, stamp in
            try await outbound.write(ByteBuffer(bytes: ClientMessage.stream(request).encoded()))
            var reader = TransferClient.LineReader(inbound, progress: stamp)
            guard case .streamReady(let size) = try await reader.message() else {
                throw CowatchError(.protocolViolation, "the server did not answer the stream with stream_ready")
            }
            guard size == expected else {
                throw CowatchError(.mediaUnavailable, "the shared file has \(size) bytes, not the \(expected) offered")
            }
            let (frames, outbox) = AsyncStream.makeStream(of: [UInt8].self)
            try await withThrowingTaskGroup(of: Void.self) { group in
                defer {
                    outbox.finish()
                    group.cancelAll()
                }
                group.addTask {
                    for await frame in frames { try await outbound.write(ByteBuffer(bytes: frame)) }
                }
                group.addTask {
                    while true {
                        try await Task.sleep(for: .seconds(min(1, self.timing.pingInterval / 4)))
                        await self.pingIfIdle(generation)
                    }
                }
                guard await self.linked(generation, outbox: outbox, channel: channel) else { return }
                var decoder = StreamFrameDecoder(accepting: .receiver)
                while let chunk = try await reader.chunk() {
                    decoder.append(chunk.readableBytesView)
                    while let frame = try decoder.next() {
                        try await self.arrived(frame, generation)
                    }
                }
            }
        }
    }

    private func isCurrent(_ generation: Int) -> Bool { generation == self.generation && !closed }

    /// The link is up: ask for what waits. False when the receiver moved on (closed).
    private func linked(_ generation: Int, outbox: AsyncStream<[UInt8]>.Continuation, channel: any Channel) -> Bool {
        guard isCurrent(generation) else { return false }
        self.outbox = outbox
        self.channel = channel
        heldOff = nil
        linkedSince = SystemClock.monotonicSeconds()
        lastSent = SystemClock.monotonicSeconds()
        logger.debug("stream linked", metadata: ["cowatch.stream.failures": "\(failures)"])
        pump()
        return true
    }

    private func pingIfIdle(_ generation: Int) {
        guard isCurrent(generation), let outbox else { return }
        let now = SystemClock.monotonicSeconds()
        guard now - lastSent >= timing.pingInterval else { return }
        outbox.yield(StreamFrame.ping.encoded())
        lastSent = now
        logger.trace("stream ping")
    }

    /// A frame from the sharer. Errors: `protocol-violation` (the link is then dropped).
    private func arrived(_ frame: StreamFrame, _ generation: Int) throws(CowatchError) {
        guard isCurrent(generation) else { return }
        // The sharer answers: the link works, whatever went wrong before.
        failures = 0
        switch frame {
        case .ping:
            return
        case .data(let offset, let bytes):
            let block = blocks.block(containing: offset)
            guard offset == blocks.range(ofBlock: block).lowerBound, bytes.count == blocks.range(ofBlock: block).count,
                blocks.arrived(block: block, bytes: bytes)
            else {
                throw CowatchError(.protocolViolation, "the sharer sent \(bytes.count) bytes at \(offset), which were not asked for")
            }
            let now = SystemClock.monotonicSeconds()
            receivedBytes += bytes.count
            samples.append((now, bytes.count))
            if samples.count > 512 { samples.removeFirst(samples.count - 512) }
            writeToDisk()
            lastError = nil
            logger.trace("stream block", metadata: ["cowatch.stream.block": "\(block)"])
            finishBlock(block, with: .success(bytes))
        case .refused(let offset, let error):
            let block = blocks.block(containing: offset)
            blocks.refused(block: block)
            lastError = error
            logger.debug("stream block refused", metadata: ["cowatch.stream.block": "\(block)", "cowatch.stream.error": "\(error)"])
            finishBlock(block, with: .failure(error))
        case .read:
            throw CowatchError(.protocolViolation, "a sharer does not ask for reads")
        }
        pump()
    }

    /// The link ended with `error`. Returns the seconds to wait before connecting again, or nil
    /// to stop: closed; a final error or 5 failures in a row (the waiting reads fail; misses fail
    /// too for the longest backoff); nobody waits (the next read connects).
    private func dropped(_ generation: Int, _ error: CowatchError) -> Double? {
        guard isCurrent(generation) else { return nil }
        outbox = nil
        channel = nil
        linkedSince = nil
        blocks.disconnected()
        lastError = error
        failures += 1
        let final = Self.isFinal(error.code) || failures > timing.backoff.count
        logger.debug(
            "stream link dropped",
            metadata: ["cowatch.stream.error": "\(error)", "cowatch.stream.failures": "\(failures)", "cowatch.stream.final": "\(final)"])
        if final {
            failures = 0
            heldOff = (error, SystemClock.monotonicSeconds() + (timing.backoff.last ?? 0))
            failAll(error)
        }
        guard !final, !waiters.isEmpty else {
            connection = nil
            return nil
        }
        return timing.backoff[failures - 1]
    }

    /// Errors that another try would meet again: the offer is gone, we may not, or never could.
    static func isFinal(_ code: CowatchError.Code) -> Bool {
        [.notFound, .authFailed, .notPermitted, .unsupported, .invalidRequest, .certificateMismatch, .mediaUnavailable].contains(code)
    }
}
