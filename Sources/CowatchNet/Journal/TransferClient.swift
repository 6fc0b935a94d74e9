import CowatchCore
import Foundation
import Logging
import NIOCore
import NIOPosix

/// The daemon's side of the journal's transfers: one connection per upload or download, to the
/// room server's port, under the same TLS pin as the room connection, proved by the session
/// token the room's welcome gave (`TransferRequest`).
///
/// Files are streamed in chunks (`ContentFile.chunkBytes`) with back-pressure both ways and
/// SHA-256 checked end to end: the server checks an upload before it announces it, and a
/// download is checked here before it is put in place (`DownloadPlacement`). A dropped transfer
/// resumes from what arrived: the server keeps an interrupted upload's bytes, and a download
/// keeps its partial file, in a private directory the caller names (`PartialDownloads`).
///
/// Threading: the functions may run concurrently from any task; their work runs on the
/// low-priority transfer thread (`TransferExecutor`), so bulk bytes yield to playback. Errors: `io-error` (the link;
/// retried by the callers with `resumingRetries`), `tls-failed`, `certificate-mismatch`,
/// `hash-mismatch`, and the server's refusals (`too-large`, `quota-exceeded`, `not-found`,
/// `auth-failed`, `server-busy`, `rate-limited`, …) with its message.
public enum TransferClient {
    /// Where and as whom to transfer.
    public struct Endpoint: Sendable {
        public var host: String
        public var port: Int
        public var security: RoomConnection.Security
        public var room: String
        public var name: String
        /// The session token of this participant's room connection.
        public var token: String
        /// Bytes a second one transfer may move (0: as fast as it goes); see `TransferPace`.
        public var rate: Double

        public init(
            host: String, port: Int, security: RoomConnection.Security, room: String, name: String, token: String, rate: Double = 0
        ) {
            self.rate = rate
            self.host = host
            self.port = port
            self.security = security
            self.room = room
            self.name = name
            self.token = token
        }
    }

    /// Called with bytes done and the total, after each chunk.
    public typealias Progress = @Sendable (_ done: Int, _ total: Int) -> Void

    /// The SHA-256 (hex) and size of a local file, read in chunks on the transfer thread
    /// (`TransferExecutor`).
    public static func hash(path: String) async throws(CowatchError) -> (id: String, size: Int) {
        try await withTaskExecutorPreference(TransferExecutor.shared) { () async throws(CowatchError) -> (id: String, size: Int) in
            try ContentFile.hash(path: path)
        }
    }

    /// Uploads the file at `path` (whose SHA-256 is `id` and size `size`) as `name`. Returns the
    /// attachment as the room sees it (the server may have had the content already).
    public static func upload(
        path: String, id: String, size: Int, name: String, meta: JSONValue?, to endpoint: Endpoint, progress: Progress
    ) async throws(CowatchError) -> Attachment {
        try await withTaskExecutorPreference(TransferExecutor.shared) { () async throws(CowatchError) -> Attachment in
            try await uploadOnTransferThread(path: path, id: id, size: size, name: name, meta: meta, to: endpoint, progress: progress)
        }
    }

    private static func uploadOnTransferThread(
        path: String, id: String, size: Int, name: String, meta: JSONValue?, to endpoint: Endpoint, progress: Progress
    ) async throws(CowatchError) -> Attachment {
        let request = TransferRequest(
            room: endpoint.room, name: endpoint.name, token: endpoint.token, kind: .upload, id: id, size: size,
            fileName: name, meta: meta)
        return try await connected(endpoint) { inbound, outbound, channel, stamp in
            try await outbound.write(ByteBuffer(bytes: ClientMessage.transfer(request).encoded()))
            var reader = LineReader(inbound, progress: stamp)
            switch try await reader.message() {
            case .transferDone(let attachment):
                progress(size, size)
                return attachment
            case .transferReady(let offset, let total):
                guard total == size else { throw CowatchError(.protocolViolation, "the server expects \(total) bytes, not \(size)") }
                let file = try ContentReader(path: path, offset: offset)
                var writer = WindowedWriter(channel: channel)
                var pace = TransferPace(bytesPerSecond: endpoint.rate)
                while file.offset < size {
                    let chunk = try file.next(limit: min(ContentFile.chunkBytes, size - file.offset), allocator: channel.allocator)
                    guard chunk.readableBytes > 0 else { throw CowatchError(.ioError, "\(path) shrank while it was sent") }
                    try await writer.write(chunk)
                    let wait = pace.delay(for: chunk.readableBytes, now: SystemClock.monotonicSeconds())
                    if wait > 0 { try await Task.sleep(for: .seconds(wait)) }
                    stamp.withLock { $0 = SystemClock.monotonicSeconds() }
                    progress(file.offset, size)
                }
                try await writer.drain()
                guard case .transferDone(let attachment) = try await reader.message() else {
                    throw CowatchError(.protocolViolation, "the server did not confirm the upload")
                }
                return attachment
            default:
                throw CowatchError(.protocolViolation, "unexpected answer to an upload")
            }
        }
    }

    /// Downloads `attachment` to `path` through the partial file `partial` (resumed if it
    /// exists; in a private directory, never beside `path`), checks its SHA-256 and puts it in
    /// place (`DownloadPlacement`: no link at `path` is followed). Returns the byte it resumed from.
    ///   - replacing: put the file in place even if one is there (else `already-exists`, and
    ///     the complete download stays in `partial`).
    @discardableResult
    public static func download(
        _ attachment: Attachment, to path: String, partial: String, from endpoint: Endpoint, replacing: Bool = false,
        progress: Progress
    ) async throws(CowatchError) -> Int {
        try await withTaskExecutorPreference(TransferExecutor.shared) { () async throws(CowatchError) -> Int in
            try await downloadOnTransferThread(
                attachment, to: path, partial: partial, from: endpoint, replacing: replacing, progress: progress)
        }
    }

    private static func downloadOnTransferThread(
        _ attachment: Attachment, to path: String, partial: String, from endpoint: Endpoint, replacing: Bool,
        progress: Progress
    ) async throws(CowatchError) -> Int {
        let writer = try ContentWriter(path: partial, size: attachment.size, resume: true)
        let start = writer.written
        let request = TransferRequest(
            room: endpoint.room, name: endpoint.name, token: endpoint.token, kind: .download, id: attachment.id,
            offset: start)
        try await connected(endpoint) { inbound, outbound, _, stamp in
            try await outbound.write(ByteBuffer(bytes: ClientMessage.transfer(request).encoded()))
            var reader = LineReader(inbound, progress: stamp)
            guard case .transferReady(let offset, let size) = try await reader.message() else {
                throw CowatchError(.protocolViolation, "unexpected answer to a download")
            }
            guard offset == start, size == attachment.size else {
                throw CowatchError(.protocolViolation, "the server offers bytes \(offset)–\(size), not \(start)–\(attachment.size)")
            }
            var pace = TransferPace(bytesPerSecond: endpoint.rate)
            while !writer.isComplete {
                guard let chunk = try await reader.chunk() else {
                    throw CowatchError(.ioError, "the transfer broke off at \(writer.written) of \(size) bytes")
                }
                try writer.append(chunk)
                // Reading slower makes TCP slow the server down: the pace holds end to end.
                let wait = pace.delay(for: chunk.readableBytes, now: SystemClock.monotonicSeconds())
                if wait > 0 {
                    try await Task.sleep(for: .seconds(wait))
                    stamp.withLock { $0 = SystemClock.monotonicSeconds() }
                }
                progress(writer.written, size)
            }
        }
        guard writer.digest() == attachment.id else {
            unlink(partial)
            throw CowatchError(.hashMismatch, "\(attachment.name) arrived with another SHA-256 than announced; discarded")
        }
        try DownloadPlacement.place(partial, at: path, replacing: replacing)
        progress(attachment.size, attachment.size)
        return start
    }

    /// Seconds without a byte moving (or an answer) before a transfer is given up as a broken
    /// link (`io-error`, so callers resume it).
    static let stallLimit = 30.0

    /// Runs `body` on a new connection to the endpoint (TLS pinned as configured). `body` stamps
    /// the clock it is given whenever bytes move; a link silent for `stallLimit` is closed.
    static func connected<Result: Sendable>(
        _ endpoint: Endpoint,
        _ body: (
            NIOAsyncChannelInboundStream<ByteBuffer>, NIOAsyncChannelOutboundWriter<ByteBuffer>, any Channel, Locked<Double>
        ) async throws -> Result
    ) async throws(CowatchError) -> Result {
        let tls: PinnedTLS.Client?
        if case .tls(let expected, let knownHosts) = endpoint.security {
            tls = try PinnedTLS.Client(host: endpoint.host, port: endpoint.port, expected: expected, knownHosts: knownHosts)
        } else {
            tls = nil
        }
        // Once TLS is up, any failure is the link breaking (resumable), not a TLS problem.
        let linked = Locked(false)
        do {
            let channel = try await ClientBootstrap(group: TransferExecutor.shared.loop)
                .connectTimeout(.seconds(5))
                .connect(host: endpoint.host, port: endpoint.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try tls?.addHandlers(to: channel)
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
            let progress = Locked(SystemClock.monotonicSeconds())
            let result = try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // The watchdog: a server that stops answering or moving bytes.
                    while !Task.isCancelled {
                        try await Task.sleep(for: .seconds(1))
                        if SystemClock.monotonicSeconds() - progress.withLock({ $0 }) > stallLimit {
                            channel.channel.close(promise: nil)
                            return
                        }
                    }
                }
                defer { group.cancelAll() }
                return try await channel.executeThenClose { inbound, outbound in
                    _ = try await tls?.handshake()
                    linked.withLock { $0 = true }
                    return try await body(inbound, outbound, channel.channel, progress)
                }
            }
            return result
        } catch let error as CowatchError {
            throw error
        } catch where linked.withLock({ $0 }) {
            throw CowatchError(.ioError, "the transfer connection to \(endpoint.host):\(endpoint.port) broke: \(error)")
        } catch {
            throw tls?.describe(error) ?? CowatchError(.ioError, "transfer to \(endpoint.host):\(endpoint.port): \(RoomConnection.describeConnectFailure(error))")
        }
    }

    /// Reads the server's lines (bounded) and the raw bytes after them.
    struct LineReader {
        static let maxLineBytes = 16_384
        var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
        /// Bytes that came after the last line read, in the same chunk.
        var leftover: ByteBuffer?

        /// Stamped whenever bytes arrive (the connection's watchdog reads it).
        let progress: Locked<Double>

        init(_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, progress: Locked<Double>) {
            iterator = inbound.makeAsyncIterator()
            self.progress = progress
        }

        /// The next line as a server message; an `error` is thrown as the error it names.
        mutating func message() async throws -> ServerMessage {
            var line: [UInt8] = []
            while true {
                var buffer: ByteBuffer
                if let rest = leftover {
                    buffer = rest
                    leftover = nil
                } else {
                    guard let chunk = try await iterator.next() else {
                        throw CowatchError(.ioError, "the room server closed the transfer")
                    }
                    progress.withLock { $0 = SystemClock.monotonicSeconds() }
                    buffer = chunk
                }
                let view = buffer.readableBytesView
                if let newline = view.firstIndex(of: UInt8(ascii: "\n")) {
                    line += view[view.startIndex..<newline]
                    buffer.moveReaderIndex(forwardBy: newline - view.startIndex + 1)
                    if buffer.readableBytes > 0 { leftover = buffer }
                    break
                }
                line += view
                guard line.count <= Self.maxLineBytes else { throw CowatchError(.protocolViolation, "the server sent an over-long line") }
            }
            let message = try ServerMessage.decode(line: line)
            if case .error(let code, let text) = message { throw CowatchError(CowatchError.Code(rawValue: code), text) }
            return message
        }

        /// The next chunk of raw bytes; nil when the server closed.
        mutating func chunk() async throws -> ByteBuffer? {
            if let rest = leftover {
                leftover = nil
                return rest
            }
            let chunk = try await iterator.next()
            progress.withLock { $0 = SystemClock.monotonicSeconds() }
            return chunk
        }
    }
}
