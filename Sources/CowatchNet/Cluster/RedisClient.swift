import CowatchCore
import Logging
import NIOCore
import NIOPosix

/// A small Redis client (RESP2 over one TCP connection) for the cluster's room directory.
///
/// Requests are pipelined on the connection and answered in order. Every request has a deadline
/// (`requestTimeout`); a request that misses it fails with `timeout` and the connection is closed
/// (a late answer would otherwise be taken for the next request's). A lost connection is made
/// again on the next request, at most once per `reconnectDelay`, so a dead Redis costs a quick
/// `io-error` rather than a pile of connection attempts. At most `maxInFlight` requests wait at
/// once; more fail at once with `server-busy`.
///
/// Threading: an actor; call from any task. Errors: `io-error` (cannot connect, connection lost),
/// `timeout`, `server-busy`, `protocol-violation` (Redis sent something malformed). A Redis error
/// reply is not thrown: it is returned as `.error`.
public actor RedisClient {
    public let host: String
    public let port: Int
    public let requestTimeout: Double
    public let maxInFlight: Int
    /// Seconds between connection attempts after a failure.
    public let reconnectDelay: Double
    private let logger: Logger
    private var channel: (any Channel)?
    private var connecting: Task<any Channel, any Error>?
    private var lastFailure: (at: ContinuousClock.Instant, error: CowatchError)?
    private var inFlight = 0

    public init(host: String, port: Int, requestTimeout: Double = 1, maxInFlight: Int = 256, reconnectDelay: Double = 0.5, logger: Logger) {
        self.host = host
        self.port = port
        self.requestTimeout = requestTimeout
        self.maxInFlight = maxInFlight
        self.reconnectDelay = reconnectDelay
        self.logger = logger
    }

    /// Sends one command (e.g. `["GET", key]`) and returns Redis's reply.
    public func send(_ words: [String]) async throws(CowatchError) -> RESPValue {
        guard inFlight < maxInFlight else { throw CowatchError(.serverBusy, "too many redis requests waiting") }
        inFlight += 1
        defer { inFlight -= 1 }
        let channel = try await connection()
        let promise = channel.eventLoop.makePromise(of: RESPValue.self)
        let timeout = CowatchError(.timeout, "redis at \(host):\(port) did not answer within \(requestTimeout) s")
        // Missing the deadline breaks the pairing of answers to requests: close the connection.
        let deadline = channel.eventLoop.scheduleTask(in: .nanoseconds(Int64(requestTimeout * 1e9))) {
            promise.fail(timeout)
            channel.close(promise: nil)
        }
        defer { deadline.cancel() }
        channel.writeAndFlush(RESPRequest(value: .command(words), promise: promise), promise: nil)
        do {
            return try await promise.futureResult.get()
        } catch let error as CowatchError {
            forget(channel)
            throw error
        } catch {
            forget(channel)
            throw CowatchError(.ioError, "redis at \(host):\(port): \(error)")
        }
    }

    /// Closes the connection (requests after this connect again).
    public func close() {
        channel?.close(promise: nil)
        channel = nil
        connecting?.cancel()
        connecting = nil
    }

    private func forget(_ failed: any Channel) {
        if channel === failed { channel = nil }
    }

    private func connection() async throws(CowatchError) -> any Channel {
        if let channel, channel.isActive { return channel }
        channel = nil
        if let lastFailure, ContinuousClock.now - lastFailure.at < .nanoseconds(Int64(reconnectDelay * 1e9)) {
            throw lastFailure.error
        }
        let task: Task<any Channel, any Error>
        if let connecting {
            task = connecting
        } else {
            let (host, port, timeout) = (host, port, requestTimeout)
            task = Task {
                try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .channelOption(.socketOption(.tcp_nodelay), value: 1)
                    .connectTimeout(.nanoseconds(Int64(timeout * 1e9)))
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(RESPClientHandler())
                        }
                    }
                    .connect(host: host, port: port).get()
            }
            connecting = task
        }
        do {
            let made = try await task.value
            if connecting == task { connecting = nil }
            channel = made
            lastFailure = nil
            return made
        } catch {
            if connecting == task { connecting = nil }
            let failure = CowatchError(.ioError, "cannot reach redis at \(host):\(port): \(RoomConnection.describeConnectFailure(error))")
            lastFailure = (ContinuousClock.now, failure)
            logger.debug("redis connect failed", metadata: ["cowatch.cluster.error": "\(failure.message)"])
            throw failure
        }
    }
}

/// One request on its way: the command and who waits for the answer.
struct RESPRequest: Sendable {
    var value: RESPValue
    var promise: EventLoopPromise<RESPValue>
}

/// Writes requests and pairs the replies with them, in order; fails every waiting request when
/// the connection ends or Redis sends something malformed. Lives on its channel's event loop.
final class RESPClientHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = RESPRequest
    typealias OutboundOut = ByteBuffer

    private var parser = RESPParser()
    private var waiting = CircularBuffer<EventLoopPromise<RESPValue>>()

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        waiting.append(request.promise)
        context.write(wrapOutboundOut(ByteBuffer(bytes: request.value.encoded())), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        do {
            for value in try parser.feed(bytes.readableBytesView) {
                guard let promise = waiting.popFirst() else {
                    throw CowatchError(.protocolViolation, "redis answered a request nobody sent")
                }
                promise.succeed(value)
            }
        } catch {
            failAll(error)
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        failAll(CowatchError(.ioError, "the redis connection closed"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failAll(CowatchError(.ioError, "redis connection: \(error)"))
        context.close(promise: nil)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        failAll(CowatchError(.ioError, "the redis connection closed"))
    }

    private func failAll(_ error: any Error) {
        while let promise = waiting.popFirst() { promise.fail(error) }
    }
}
