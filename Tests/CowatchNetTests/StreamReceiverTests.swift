import CowatchCore
@testable import CowatchNet
import Foundation
import Logging
import NIOCore
import NIOPosix
import Testing

/// Issue 25: the receiver's side of a film stream, against a stand-in for the room server and
/// the sharer behind it (plain TCP on 127.0.0.1): the bytes, read-ahead, the cache's bound, the
/// disk tier, a dropped link, refusals and the server's errors.
@Suite("Stream receiver: a shared film's bytes through the relay")
struct StreamReceiverTests {
    static let block = StreamFrame.maxReadBytes

    static func film(_ size: Int) -> [UInt8] { PatternedFilm.bytes(size) }

    func receiver(
        _ server: FakeStreamServer, cacheBytes: Int = 64 << 20, disk: StreamReceiver.DiskCache? = nil,
        timing: StreamReceiver.Timing = .init()
    ) -> StreamReceiver {
        let identity = MediaIdentity(size: server.file.count, fingerprint: String(repeating: "ab", count: 32), name: "night.mkv")
        let endpoint = TransferClient.Endpoint(
            host: "127.0.0.1", port: server.port, security: .plaintext, room: "movie-night", name: "bob", token: "0123abcd.ef")
        return StreamReceiver(
            endpoint: endpoint, offer: SharedMedia(by: "alice", file: identity), cacheBytes: cacheBytes, disk: disk, timing: timing,
            logger: Logger(label: "test"))
    }

    @Test("whole-file reads, in pieces that straddle blocks and in one, give the file's bytes; one stream line")
    func wholeFile() async throws {
        let file = Self.film(5 * Self.block + 12_345)
        let server = try await FakeStreamServer.start(file: file)
        defer { Task { await server.stop() } }
        let receiver = receiver(server)
        var offset = 0
        var read: [UInt8] = []
        while offset < file.count {
            let piece = try await receiver.read(offset: offset, length: 300_000)
            #expect(piece.count == min(300_000, file.count - offset))
            read += piece
            offset += piece.count
        }
        #expect(read == file)
        #expect(try await receiver.read(offset: 0, length: file.count + 10) == file, "fewer only at the end")
        let stats = await receiver.stats()
        #expect(stats.receivedBytes == file.count, "each block came once (the cache holds the file)")
        #expect(stats.connected)
        #expect(stats.lastError == nil)
        let seen = server.seen.withLock { $0 }
        #expect(seen.connections == 1)
        #expect(seen.requests.first == StreamRequest(
            room: "movie-night", name: "bob", token: "0123abcd.ef", from: "alice", fingerprint: String(repeating: "ab", count: 32)))
        await receiver.close()
    }

    @Test("random reads, four readers at once, each get the right bytes; a read outside the file is invalid-request")
    func randomReads() async throws {
        let file = Self.film(7 * Self.block + 999)
        let server = try await FakeStreamServer.start(file: file)
        defer { Task { await server.stop() } }
        // A cache of 3 blocks: blocks come and go while the readers jump about.
        let receiver = receiver(server, cacheBytes: 3 * Self.block)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for reader in 0..<4 {
                group.addTask {
                    var random = SeededRandom(seed: UInt64(reader + 1))
                    for _ in 0..<40 {
                        let offset = Int.random(in: 0..<file.count, using: &random)
                        let length = Int.random(in: 1...(2 * Self.block), using: &random)
                        let bytes = try await receiver.read(offset: offset, length: length)
                        #expect(bytes == Array(file[offset..<min(file.count, offset + length)]), "\(offset)+\(length)")
                    }
                }
            }
            try await group.waitForAll()
        }
        for (offset, length) in [(-1, 10), (0, 0), (file.count, 1), (5, -3)] {
            await #expect(throws: CowatchError(.invalidRequest, "")) { try await receiver.read(offset: offset, length: length) }
        }
        await receiver.close()
    }

    @Test("read-ahead: after a read, the next blocks come without being read, and are served with the server silent")
    func readAheadServesFromCache() async throws {
        let file = Self.film(12 * Self.block)
        let server = try await FakeStreamServer.start(file: file)
        defer { Task { await server.stop() } }
        // 8 blocks of cache: read-ahead keeps the block read in and 4 after it.
        let receiver = receiver(server, cacheBytes: 8 * Self.block)
        #expect(try await receiver.read(offset: 0, length: 1000) == Array(file[0..<1000]))
        try await waitUntil("5 blocks buffered ahead") { await receiver.stats().bufferedAhead >= 5 * Self.block - 1000 }
        let askedBefore = server.seen.withLock { $0.reads.count }
        server.behavior.withLock { $0.silent = true }
        // Everything up to the end of block 4 is there without the server answering.
        let bytes = try await receiver.read(offset: 1000, length: 5 * Self.block - 1000)
        #expect(bytes == Array(file[1000..<(5 * Self.block)]))
        #expect(askedBefore == 5, "block 0 and 4 ahead")
        #expect(server.seen.withLock { Array($0.reads.prefix(5)) } == (0..<5).map { $0 * Self.block })
        await receiver.close()
    }

    @Test("readers of one block share one request; read-ahead keeps 3 requests on the link; a seek's block goes at once, behind those only")
    func sharedRequestsAndSeek() async throws {
        let file = Self.film(40 * Self.block)
        let server = try await FakeStreamServer.start(file: file)
        defer { Task { await server.stop() } }
        server.behavior.withLock { $0.holding = true }
        let receiver = receiver(server)
        let readers = (0..<5).map { index in
            Task { try await receiver.read(offset: 100 * index, length: 100) }
        }
        try await waitUntil("block 0 and 3 ahead") { server.seen.withLock { $0.reads.count } >= 1 + StreamReceiver.aheadOutstanding }
        try await Task.sleep(for: .milliseconds(200))  // room for a wrong fifth request to show
        #expect(server.seen.withLock { $0.reads.count } == 1 + StreamReceiver.aheadOutstanding, "never more read-ahead on the link")
        #expect(server.seen.withLock { $0.reads.filter { $0 == 0 }.count } == 1, "5 readers of block 0, one request")
        // A seek far ahead while those wait: asked for at once, not after more read-ahead.
        let seek = Task { try await receiver.read(offset: 30 * Self.block + 7, length: 10) }
        try await waitUntil("the seek's block asked for") { server.seen.withLock { $0.reads.count } >= 2 + StreamReceiver.aheadOutstanding }
        #expect(server.seen.withLock { $0.reads[1 + StreamReceiver.aheadOutstanding] } == 30 * Self.block, "the seek's block next")
        server.behavior.withLock { $0.holding = false }
        server.release(count: .max)
        for (index, reader) in readers.enumerated() {
            #expect(try await reader.value == Array(file[(100 * index)..<(100 * index + 100)]))
        }
        #expect(try await seek.value == Array(file[(30 * Self.block + 7)..<(30 * Self.block + 17)]))
        await receiver.close()
    }

    @Test("the cache keeps to its bound while a whole film is read through it")
    func cacheBound() async throws {
        let file = Self.film(12 * Self.block + 5)
        let server = try await FakeStreamServer.start(file: file)
        defer { Task { await server.stop() } }
        let receiver = receiver(server, cacheBytes: 3 * Self.block)
        var offset = 0
        while offset < file.count {
            let bytes = try await receiver.read(offset: offset, length: 256 << 10)
            #expect(bytes == Array(file[offset..<(offset + bytes.count)]))
            offset += bytes.count
            let cached = await receiver.cachedBytes
            #expect(cached <= 3 * Self.block, "\(cached) bytes cached at \(offset)")
        }
        // Read-ahead never asked for more than the cache holds, so nothing was fetched twice.
        #expect(server.seen.withLock { Set($0.reads).count == $0.reads.count })
        await receiver.close()
    }

    @Test("a link dropped with requests outstanding is opened again and they are asked again", arguments: [1, 4])
    func reconnects(dropAt: Int) async throws {
        let file = Self.film(10 * Self.block + 77)
        let server = try await FakeStreamServer.start(file: file)
        defer { Task { await server.stop() } }
        server.behavior.withLock { $0.dropAtRead = dropAt }
        let receiver = receiver(server, timing: .init(backoff: [0.05, 0.1, 0.2, 0.4]))
        #expect(try await receiver.read(offset: 0, length: file.count) == file)
        #expect(server.seen.withLock { $0.connections } == 2)
        #expect(await receiver.stats().lastError == nil, "bytes flowed again")
        await receiver.close()
    }

    @Test("a refused block fails its reads with the sharer's code and message; other blocks still come")
    func refusal() async throws {
        let file = Self.film(6 * Self.block)
        let server = try await FakeStreamServer.start(file: file)
        defer { Task { await server.stop() } }
        server.behavior.withLock { $0.refused[2 * Self.block] = CowatchError(.mediaUnavailable, "the disk is gone") }
        let receiver = receiver(server)
        do {
            _ = try await receiver.read(offset: 2 * Self.block + 10, length: 10)
            Issue.record("a refused block was read")
        } catch {
            #expect(error.code == .mediaUnavailable)
            #expect(error.message == "the disk is gone")
        }
        #expect(try await receiver.read(offset: 3 * Self.block, length: 10) == Array(file[(3 * Self.block)..<(3 * Self.block + 10)]))
        #expect(await receiver.stats().connected)
        #expect(server.seen.withLock { $0.connections } == 1)
        await receiver.close()
    }

    @Test("the server's not-found fails the read at once, and reads do not connect again for a while")
    func notFoundWithoutRetries() async throws {
        let server = try await FakeStreamServer.start(file: Self.film(1000))
        defer { Task { await server.stop() } }
        server.behavior.withLock { $0.answer = .error(.notFound, "alice offers no such file now") }
        let receiver = receiver(server)
        for _ in 0..<3 {
            do {
                _ = try await receiver.read(offset: 0, length: 10)
                Issue.record("read from an offer that is not there")
            } catch {
                #expect(error.code == .notFound)
            }
        }
        #expect(server.seen.withLock { $0.connections } == 1)
        let stats = await receiver.stats()
        #expect(stats.lastError?.code == .notFound)
        #expect(!stats.connected)
        await receiver.close()
    }

    @Test("5 failed connections in a row fail the waiting read with the last error")
    func givesUp() async throws {
        let server = try await FakeStreamServer.start(file: Self.film(1000))
        defer { Task { await server.stop() } }
        server.behavior.withLock { $0.answer = .closeAtOnce }
        let receiver = receiver(server, timing: .init(backoff: [0.01, 0.02, 0.03, 0.04]))
        await #expect(throws: CowatchError(.ioError, "")) { try await receiver.read(offset: 0, length: 10) }
        #expect(server.seen.withLock { $0.connections } == 5)
        await receiver.close()
    }

    @Test("a block that does not come in time fails its read with timeout; the stream lives on")
    func readDeadline() async throws {
        let file = Self.film(3 * Self.block)
        let server = try await FakeStreamServer.start(file: file)
        defer { Task { await server.stop() } }
        server.behavior.withLock { $0.silent = true }
        let receiver = receiver(server, timing: .init(readDeadline: 0.5))
        await #expect(throws: CowatchError(.timeout, "")) { try await receiver.read(offset: 0, length: 10) }
        #expect(await receiver.stats().lastError?.code == .timeout)
        server.behavior.withLock { $0.silent = false }
        server.release(count: .max)
        try await waitUntil("the late block arrives") { await receiver.stats().receivedBytes > 0 }
        #expect(try await receiver.read(offset: 0, length: 10) == Array(file[0..<10]))
        await receiver.close()
    }

    @Test("an idle stream pings; close fails a waiting read and every later one with io-error")
    func pingsAndClose() async throws {
        let server = try await FakeStreamServer.start(file: Self.film(2 * Self.block))
        defer { Task { await server.stop() } }
        // A cache of one block: nothing is read ahead of block 0 but block 0.
        let receiver = receiver(server, cacheBytes: Self.block, timing: .init(pingInterval: 0.2))
        _ = try await receiver.read(offset: 0, length: 10)
        try await waitUntil("2 pings") { server.seen.withLock { $0.pings } >= 2 }
        server.behavior.withLock { $0.silent = true }
        let waiting = Task { try await receiver.read(offset: Self.block + 5, length: 10) }
        try await waitUntil("the read is asked for") { server.seen.withLock { $0.reads.contains(Self.block) } }
        await receiver.close()
        await #expect(throws: CowatchError(.ioError, "")) { try await waiting.value }
        await #expect(throws: CowatchError(.ioError, "")) { try await receiver.read(offset: 0, length: 10) }
        #expect(await !receiver.stats().connected)
    }

    @Test("with a disk tier, a seek back to what was received is served locally; the tier's file is never seen in its directory")
    func diskTierServesSeekBack() async throws {
        let file = Self.film(10 * Self.block + 4321)
        let server = try await FakeStreamServer.start(file: file)
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // 4 blocks in memory, 16 on disk: the whole film is kept, most of it on disk.
        let receiver = receiver(
            server, cacheBytes: 4 * Self.block, disk: .init(directory: directory.path, bytes: 16 * Self.block))
        #expect(try await receiver.read(offset: 0, length: file.count) == file)
        let fetched = server.seen.withLock { $0.reads }
        #expect(fetched.sorted() == (0...10).map { $0 * Self.block }, "each block once")
        #expect(await receiver.stats().diskCachedBytes >= 7 * Self.block, "what memory let go is on disk")
        #expect(await receiver.cachedBytes <= 4 * Self.block)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty, "unlinked at once")
        // Back to the start, and through the film again in pieces that straddle blocks.
        var offset = 0
        while offset < file.count {
            let piece = try await receiver.read(offset: offset, length: 700_000)
            #expect(piece == Array(file[offset..<(offset + piece.count)]), "at \(offset)")
            offset += piece.count
        }
        let middle = 3 * Self.block + 5
        #expect(try await receiver.read(offset: middle, length: 10) == Array(file[middle..<(middle + 10)]))
        #expect(server.seen.withLock { $0.reads } == fetched, "the sharer was not asked again")
        #expect(await receiver.stats().receivedBytes == file.count)
        await receiver.close()
        #expect(await receiver.stats().diskCachedBytes == 0, "the tier went with close")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("a disk tier whose directory does not exist leaves the receiver memory-only, reading as before")
    func diskTierUnavailable() async throws {
        let file = Self.film(6 * Self.block + 99)
        let server = try await FakeStreamServer.start(file: file)
        defer { Task { await server.stop() } }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let receiver = receiver(
            server, cacheBytes: 2 * Self.block, disk: .init(directory: directory.path + "/absent", bytes: 64 * Self.block))
        #expect(try await receiver.read(offset: 0, length: file.count) == file)
        #expect(try await receiver.read(offset: 0, length: file.count) == file, "a seek back")
        #expect(await receiver.stats().diskCachedBytes == 0)
        #expect(server.seen.withLock { $0.reads.count } > 7, "memory only: the seek back was fetched again")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/absent"))
        await receiver.close()
    }

    @Test("the disk tier's file: whole slots written and read back, the last one short; unlinked; closed, it fails")
    func diskFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let disk = try StreamDiskFile(directory: directory.path, blockBytes: 1000, maxBytes: 4500)
        #expect(disk.slots == 4, "whole slots within the cap")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        let blocks = (0..<4).map { slot in (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ slot) } }
        for slot in [3, 0, 2] { try disk.write(blocks[slot], slot: slot) }
        try disk.write(Array(blocks[1][0..<400]), slot: 1)
        #expect(try disk.read(slot: 0, count: 1000) == blocks[0])
        #expect(try disk.read(slot: 3, count: 1000) == blocks[3])
        #expect(try disk.read(slot: 1, count: 400) == Array(blocks[1][0..<400]))
        try disk.write(blocks[0], slot: 2)
        #expect(try disk.read(slot: 2, count: 1000) == blocks[0], "a slot written again")
        #expect(throws: CowatchError(.ioError, ""), "no such directory") {
            try StreamDiskFile(directory: directory.path + "/absent", blockBytes: 1000, maxBytes: 4500)
        }
        #expect(throws: CowatchError(.ioError, ""), "not one slot") {
            try StreamDiskFile(directory: directory.path, blockBytes: 1000, maxBytes: 999)
        }
        disk.close()
        #expect(throws: CowatchError(.ioError, "")) { try disk.read(slot: 0, count: 1000) }
    }

    @Test("a cancelled read returns at once")
    func cancelledRead() async throws {
        let server = try await FakeStreamServer.start(file: Self.film(2 * Self.block))
        defer { Task { await server.stop() } }
        server.behavior.withLock { $0.silent = true }
        let receiver = receiver(server)
        let waiting = Task { try await receiver.read(offset: 0, length: 10) }
        try await waitUntil("the read is asked for") { server.seen.withLock { $0.reads.count } >= 1 }
        waiting.cancel()
        await #expect(throws: CowatchError(.ioError, "")) { try await waiting.value }
        await receiver.close()
    }
}

/// Polls `condition` every 5 ms for up to 20 s (a noisy machine); fails the test after.
private func waitUntil(_ what: String, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(20)
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw CowatchError(.timeout, "not within 20 s: \(what)") }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// A reproducible random source (SplitMix64).
private struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The room server and the sharer behind it, as a receiver sees them: takes the `stream` line,
/// answers `stream_ready` (or an error), then answers `read`s from `file` in order and pings.
/// What it does can be changed while it runs (`behavior`), and it records what it saw (`seen`).
final class FakeStreamServer: Sendable {
    enum Answer: Sendable {
        case ready
        case error(CowatchError.Code, String)
        /// Closes the connection without a word.
        case closeAtOnce
    }

    struct Behavior: Sendable {
        var answer = Answer.ready
        /// Reads (and pings) wait until `release`.
        var holding = false
        /// Nothing is answered, ever: reads are kept for `release` after it is lifted.
        var silent = false
        /// The connection closes when the read of this number (1 for the first, over all
        /// connections) comes, unanswered; once.
        var dropAtRead: Int?
        /// Offsets whose reads are refused.
        var refused: [Int: CowatchError] = [:]
    }

    struct Seen: Sendable {
        var connections = 0
        var requests: [StreamRequest] = []
        /// Offsets of every read, in order.
        var reads: [Int] = []
        var pings = 0
    }

    /// The connection now and what it has not answered yet.
    private struct Link: Sendable {
        var channel: any Channel
        var waiting: [StreamFrame] = []
        var released = 0
    }

    let file: [UInt8]
    let port: Int
    let behavior = Locked(Behavior())
    let seen = Locked(Seen())
    private let link = Locked<Link?>(nil)
    private let serving: Task<Void, Never>

    private init(file: [UInt8], port: Int, serving: Task<Void, Never>) {
        self.file = file
        self.port = port
        self.serving = serving
    }

    static func start(file: [UInt8]) async throws -> FakeStreamServer {
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    AcceptedChannel(try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel))
                }
            }
        let box = Locked<FakeStreamServer?>(nil)
        let serving = Task<Void, Never> {
            try? await withThrowingDiscardingTaskGroup { group in
                try await withTaskCancellationHandler {
                    try await listener.executeThenClose { inbound in
                        for try await accepted in inbound {
                            group.addTask {
                                guard let connection = accepted.take(), let server = box.withLock({ $0 }) else { return }
                                await server.serve(connection)
                            }
                        }
                    }
                } onCancel: {
                    listener.channel.close(promise: nil)
                }
                group.cancelAll()
            }
        }
        let server = FakeStreamServer(file: file, port: listener.channel.localAddress?.port ?? 0, serving: serving)
        box.withLock { $0 = server }
        return server
    }

    func stop() async {
        link.withLock { $0?.channel.close(promise: nil) }
        serving.cancel()
        await serving.value
    }

    /// Answers `count` more of the held reads (and everything once holding is off).
    func release(count: Int) {
        link.withLock { link in
            guard link != nil else { return }
            link!.released = count == .max ? .max : link!.released + count
        }
        pump()
    }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        seen.withLock { $0.connections += 1 }
        let channel = connection.channel
        try? await connection.executeThenClose { inbound, _ in
            var line: [UInt8] = []
            var decoder: StreamFrameDecoder?
            for try await chunk in inbound {
                var bytes = Array(chunk.readableBytesView)
                if decoder == nil {
                    line += bytes
                    guard let newline = line.firstIndex(of: UInt8(ascii: "\n")) else { continue }
                    bytes = Array(line[(newline + 1)...])
                    guard case .stream(let request) = try ClientMessage.decode(line: line[..<newline]) else { return }
                    seen.withLock { $0.requests.append(request) }
                    switch behavior.withLock({ $0.answer }) {
                    case .closeAtOnce:
                        return
                    case .error(let code, let message):
                        try await channel.writeAndFlush(ByteBuffer(bytes: ServerMessage.error(code: code.rawValue, message: message).encoded()))
                        return
                    case .ready:
                        link.withLock { $0 = Link(channel: channel) }
                        try await channel.writeAndFlush(ByteBuffer(bytes: ServerMessage.streamReady(size: file.count).encoded()))
                        decoder = StreamFrameDecoder(accepting: .sharer)
                    }
                }
                decoder?.append(bytes)
                while let frame = try decoder?.next() {
                    if dropsNow(frame) {
                        channel.close(promise: nil)
                        return
                    }
                    link.withLock { $0?.waiting.append(frame) }
                    pump()
                }
            }
        }
    }

    /// Records `frame`; whether the connection is to drop on it.
    private func dropsNow(_ frame: StreamFrame) -> Bool {
        guard case .read(let offset, _) = frame else {
            if frame == .ping { seen.withLock { $0.pings += 1 } }
            return false
        }
        let count = seen.withLock { seen in
            seen.reads.append(offset)
            return seen.reads.count
        }
        return behavior.withLock { behavior in
            guard behavior.dropAtRead == count else { return false }
            behavior.dropAtRead = nil
            return true
        }
    }

    /// Answers what may be answered now, in order.
    private func pump() {
        let behavior = behavior.withLock { $0 }
        link.withLock { link in
            guard var current = link, !behavior.silent else { return }
            while !current.waiting.isEmpty, !behavior.holding || current.released > 0 {
                let frame = current.waiting.removeFirst()
                if behavior.holding, current.released != .max { current.released -= 1 }
                switch frame {
                case .read(let offset, let length):
                    let answer: StreamFrame
                    if let error = behavior.refused[offset] {
                        answer = .refused(offset: offset, error)
                    } else {
                        answer = .data(offset: offset, bytes: Array(file[offset..<min(file.count, offset + length)]))
                    }
                    current.channel.writeAndFlush(ByteBuffer(bytes: answer.encoded()), promise: nil)
                case .ping:
                    current.channel.writeAndFlush(ByteBuffer(bytes: StreamFrame.ping.encoded()), promise: nil)
                default:
                    break
                }
            }
            link = current
        }
    }
}
