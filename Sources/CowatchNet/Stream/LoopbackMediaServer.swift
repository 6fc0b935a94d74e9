import CowatchCore
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// A small HTTP/1.1 server on 127.0.0.1 that serves published files to the local player (issue
/// 25: a streamed film is opened by mpv as `http://127.0.0.1:PORT/TOKEN/NAME`).
///
/// Each file is published under a URL with 128 random bits in it (other users of the machine
/// can reach the port, not guess the URL) and read through the closure it was published with.
/// GET and HEAD; one `Range` of bytes (`N-`, `N-M`, `-K`) gets 206 with `Content-Range`, no
/// `Range` 200; always `Accept-Ranges: bytes`, `Content-Length` and `Connection: close` (one
/// request per connection: the player opens a new one for each seek anyway). A range outside
/// the file, or a `Range` that is not one byte range, gets 416 with `Content-Range: bytes
/// */SIZE`; an unknown or withdrawn URL 404; another method 405; a request NIO cannot parse 400.
///
/// The body is read in `chunkBytes` pieces aligned to `chunkBytes` and written with at most
/// `writeWindow` of them queued on the connection, so a player that reads slowly holds the
/// reads back and a connection never buffers more than ~1.5 MiB. A player that closes the
/// connection cancels the read in progress and stops the rest; a read that fails (or returns
/// too few bytes) closes the connection with the body cut short (the player asks again from
/// where it got).
///
/// Threading: `publish` and `withdraw` may be called from any thread, also while requests are
/// served; a response already under way keeps its read closure. Use it as a `Service` (it stops
/// on graceful shutdown) or call `stop()`. Errors: `start` throws `io-error` when it cannot bind.
public final class LoopbackMediaServer: Service, Sendable {
    /// Bytes asked of a file's `read` at once (the body is cut at multiples of it).
    static let chunkBytes = 512 << 10
    /// Chunks written and not yet taken by the socket, per connection.
    static let writeWindow = 2

    /// What a published URL serves.
    struct Published: Sendable {
        var name: String
        var size: Int
        var read: @Sendable (Int, Int) async throws -> [UInt8]
    }

    /// The port it listens on, at 127.0.0.1.
    public let port: Int
    private let files: Locked<[String: Published]>
    private let serving: Task<Void, Never>
    private let logger: Logger

    private init(port: Int, files: Locked<[String: Published]>, serving: Task<Void, Never>, logger: Logger) {
        self.port = port
        self.files = files
        self.serving = serving
        self.logger = logger
    }

    /// Binds 127.0.0.1 on a port the system picks and serves until `stop()`.
    public static func start(logger: Logger) async throws(CowatchError) -> LoopbackMediaServer {
        let files = Locked<[String: Published]>([:])
        let listener: NIOAsyncChannel<AcceptedChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>
        do {
            listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.backlog, value: 16)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .bind(host: "127.0.0.1", port: 0) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        // No pipelining help: one request per connection, then it closes.
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline(withPipeliningAssistance: false)
                        return AcceptedChannel(
                            try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: channel))
                    }
                }
        } catch {
            throw ListenError.describe(error, host: "127.0.0.1", port: 0)
        }
        let port = listener.channel.localAddress?.port ?? 0
        let serving = Task<Void, Never> {
            try? await withShutdownClosing(listener.channel) {
                try await withThrowingDiscardingTaskGroup { group in
                    try await listener.executeThenClose { inbound in
                        for try await accepted in inbound {
                            group.addTask {
                                guard let connection = accepted.take() else { return }
                                await serve(connection, files: files, logger: logger)
                            }
                        }
                    }
                    group.cancelAll()
                }
            }
        }
        logger.debug("loopback media server listening", metadata: ["cowatch.stream.port": "\(port)"])
        return LoopbackMediaServer(port: port, files: files, serving: serving, logger: logger)
    }

    /// Serves `size` bytes read by `read(offset, length)` (it must return `length` bytes, fewer
    /// only at the end; it is cancelled when the player goes away). Returns the URL to open.
    public func publish(name: String, size: Int, read: @escaping @Sendable (Int, Int) async throws -> [UInt8]) -> String {
        var generator = SystemRandomNumberGenerator()
        let token = (0..<16).map { _ in
            let byte = UInt8.random(in: 0...255, using: &generator)
            return (byte < 16 ? "0" : "") + String(byte, radix: 16)
        }.joined()
        files.withLock { $0[token] = Published(name: name, size: max(0, size), read: read) }
        logger.debug("loopback media published", metadata: ["cowatch.stream.file": "\(name)", "cowatch.stream.size": "\(size)"])
        return "http://127.0.0.1:\(port)/\(token)/\(Self.escaped(name))"
    }

    /// The URL answers 404 from now on (responses under way finish or fail on their own).
    public func withdraw(_ url: String) {
        guard let token = Self.token(in: url) else { return }
        files.withLock { $0[token] = nil }
    }

    /// Stops on graceful shutdown (or cancellation).
    public func run() async throws {
        try? await gracefulShutdown()
        await stop()
    }

    /// Closes the port and every connection; returns once they are gone.
    public func stop() async {
        serving.cancel()
        await serving.value
    }

    // MARK: URLs

    /// The name percent-escaped as one path segment (unreserved characters kept).
    static func escaped(_ name: String) -> String {
        var text = ""
        for byte in name.utf8 {
            let unreserved =
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || Array("-._~".utf8).contains(byte)
            if unreserved {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return text
    }

    /// The token of a URL (or a request's path): the first path segment.
    static func token(in url: String) -> String? {
        var path = Substring(url)
        if let scheme = path.range(of: "://") {
            path = path[scheme.upperBound...]
            guard let slash = path.firstIndex(of: "/") else { return nil }
            path = path[slash...]
        }
        let segments = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0].split(separator: "/")
        return segments.first.map(String.init)
    }

    // MARK: Requests

    /// What a request gets, decided before any byte of the file is read.
    enum Answer: Equatable {
        case status(HTTPResponseStatus)
        /// Bytes `range` of the file: 206 when `partial`, else 200.
        case bytes(Range<Int>, partial: Bool)
        /// 416: the file's size for `Content-Range: bytes */SIZE`.
        case unsatisfiable
    }

    /// The answer to `method` on a file of `size` bytes with the `Range` header `range` (nil: none).
    static func answer(method: HTTPMethod, size: Int, range: String?) -> Answer {
        guard method == .GET || method == .HEAD else { return .status(.methodNotAllowed) }
        guard let range else { return .bytes(0..<size, partial: false) }
        guard let bytes = byteRange(range, size: size) else { return .unsatisfiable }
        return .bytes(bytes, partial: true)
    }

    /// The bytes one `Range: bytes=…` names within a file of `size` (nil: not one byte range, or
    /// none of it inside the file).
    static func byteRange(_ header: String, size: Int) -> Range<Int>? {
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes=") else { return nil }
        let spec = text.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let first = parts[0].trimmingCharacters(in: .whitespaces)
        let last = parts[1].trimmingCharacters(in: .whitespaces)
        let digits = { (text: String) in !text.isEmpty && text.count <= 18 && text.allSatisfy(\.isASCII) && text.allSatisfy(\.isNumber) }
        if first.isEmpty {
            // A suffix: the last K bytes.
            guard digits(last), let count = Int(last), count > 0, size > 0 else { return nil }
            return max(0, size - count)..<size
        }
        guard digits(first), let start = Int(first), start < size else { return nil }
        if last.isEmpty { return start..<size }
        guard digits(last), let end = Int(last), end >= start else { return nil }
        return start..<min(size, end + 1)
    }

    private static func serve(
        _ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, files: Locked<[String: Published]>,
        logger: Logger
    ) async {
        let channel = connection.channel
        do {
            try await connection.executeThenClose { inbound, _ in
                var head: HTTPRequestHead?
                for try await part in inbound {
                    switch part {
                    case .head(let request): head = request
                    case .body: continue
                    case .end:
                        guard let head else { return }
                        let file = token(in: head.uri).flatMap { token in files.withLock { $0[token] } }
                        // The player closing the connection ends the response (and its read).
                        let responding = Task { await respond(to: head, file: file, on: channel, logger: logger) }
                        channel.closeFuture.whenComplete { _ in responding.cancel() }
                        await withTaskCancellationHandler { await responding.value } onCancel: { responding.cancel() }
                        return
                    }
                }
            }
        } catch {
            logger.trace("loopback connection ended", metadata: ["cowatch.stream.error": "\(error)"])
        }
    }

    private static func respond(to request: HTTPRequestHead, file: Published?, on channel: any Channel, logger: Logger) async {
        var headers = HTTPHeaders([("Connection", "close"), ("Accept-Ranges", "bytes")])
        let answer: Answer
        if let file {
            answer = Self.answer(method: request.method, size: file.size, range: request.headers.first(name: "Range"))
        } else {
            answer = .status(.notFound)
        }
        let status: HTTPResponseStatus
        var body: Range<Int>?
        switch answer {
        case .status(let code):
            status = code
            if code == .methodNotAllowed { headers.add(name: "Allow", value: "GET, HEAD") }
            headers.add(name: "Content-Length", value: "0")
        case .unsatisfiable:
            status = .rangeNotSatisfiable
            headers.add(name: "Content-Range", value: "bytes */\(file?.size ?? 0)")
            headers.add(name: "Content-Length", value: "0")
        case .bytes(let range, let partial):
            status = partial ? .partialContent : .ok
            if partial { headers.add(name: "Content-Range", value: "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(file?.size ?? 0)") }
            headers.add(name: "Content-Type", value: "application/octet-stream")
            headers.add(name: "Content-Length", value: "\(range.count)")
            if request.method == .GET { body = range }
        }
        logger.debug(
            "loopback request",
            metadata: [
                "cowatch.stream.method": "\(request.method)", "cowatch.stream.range": "\(request.headers.first(name: "Range") ?? "-")",
                "cowatch.stream.status": "\(status.code)",
            ])
        do {
            let head = HTTPResponseHead(version: .http1_1, status: status, headers: headers)
            try await channel.writeAndFlush(HTTPServerResponsePart.head(head)).get()
            if let body, let file { try await stream(body, of: file, on: channel) }
            try await channel.writeAndFlush(HTTPServerResponsePart.end(nil)).get()
        } catch {
            logger.debug("loopback response cut short", metadata: ["cowatch.stream.error": "\(error)"])
        }
        try? await channel.close()
    }

    /// Writes `range` of `file` as the body, `writeWindow` chunks in flight at most.
    private static func stream(_ range: Range<Int>, of file: Published, on channel: any Channel) async throws {
        var offset = range.lowerBound
        var inFlight: [EventLoopFuture<Void>] = []
        while offset < range.upperBound {
            try Task.checkCancellation()
            let length = min(chunkBytes - offset % chunkBytes, range.upperBound - offset)
            let bytes = try await file.read(offset, length)
            guard bytes.count == length else {
                throw CowatchError(.ioError, "\(file.name): \(bytes.count) bytes at \(offset), not \(length)")
            }
            inFlight.append(channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(bytes: bytes)))))
            if inFlight.count >= writeWindow { try await inFlight.removeFirst().get() }
            offset += length
        }
        for write in inFlight { try await write.get() }
    }
}
