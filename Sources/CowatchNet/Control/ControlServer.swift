import CowatchCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// The local control socket: newline-delimited JSON requests in, replies and events out.
///
/// `run()` binds the Unix socket (mode 0600, its directory 0700), serves any number of clients at
/// once until graceful shutdown or cancellation, then removes the socket file. Each line is decoded
/// with `ControlRequest.decode` and handed to the handler; replies go back in request order per
/// connection, interleaved with events from the hub. Bad input gets an error reply and the
/// connection stays usable, except for a line over `controlMaxLineBytes`, which closes it.
///
/// Threading: a `Service`; `run()` once.
public struct ControlServer: Service {
    public let path: String
    private let handler: any ControlRequestHandler
    private let events: EventHub
    private let logger: Logger
    private let ready: (@Sendable () -> Void)?

    /// - Parameter ready: called once the socket accepts connections.
    public init(
        path: String, handler: any ControlRequestHandler, events: EventHub, logger: Logger,
        ready: (@Sendable () -> Void)? = nil
    ) {
        self.path = path
        self.handler = handler
        self.events = events
        self.logger = logger
        self.ready = ready
    }

    public func run() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 64)
            // `echo … | socat` half-closes after sending: still answer it.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: false) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        chmod(path, 0o600)
        defer { unlink(path) }
        logger.debug("control socket listening", metadata: ["cowatch.control.path": "\(path)"])
        ready?()

        // On shutdown, close the listening socket: the accept loop then ends after handing out
        // every connection already accepted (each NIOAsyncChannel must be run to be finished),
        // and the connections are cancelled, so clients that stay connected cannot hold the
        // daemon up.
        try await withShutdownClosing(server.channel) {
            try await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { inbound in
                    for try await connection in inbound {
                        group.addTask { await serve(connection) }
                    }
                }
                group.cancelAll()
            }
        }
    }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        let subscription = events.subscribe()
        let (outgoing, outgoingContinuation) = AsyncStream.makeStream(of: JSONValue.self, bufferingPolicy: .unbounded)
        do {
            try await connection.executeThenClose { inbound, outbound in
                await withTaskGroup(of: Void.self) { group in
                    // The only writer: replies and events never interleave within a line.
                    group.addTask {
                        var failed = false
                        for await value in outgoing where !failed {
                            var buffer = ByteBuffer(bytes: value.encoded())
                            buffer.writeInteger(UInt8(ascii: "\n"))
                            do { try await outbound.write(buffer) } catch { failed = true }
                        }
                    }
                    group.addTask {
                        for await event in subscription.events { outgoingContinuation.yield(event.json) }
                    }
                    await readRequests(inbound, reply: { outgoingContinuation.yield($0) })
                    // Ends the event relay and lets the writer drain and stop.
                    events.unsubscribe(subscription.id)
                    outgoingContinuation.finish()
                }
            }
        } catch {
            logger.trace("control connection ended", metadata: ["cowatch.control.error": "\(error)"])
            events.unsubscribe(subscription.id)
            outgoingContinuation.finish()
        }
    }

    private func readRequests(
        _ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, reply: (JSONValue) -> Void
    ) async {
        var framer = LineFramer(maxLineBytes: controlMaxLineBytes)
        do {
            for try await chunk in inbound {
                for item in framer.feed(chunk.readableBytesView) {
                    switch item {
                    case .tooLong:
                        let error = CowatchError(
                            .lineTooLong, "request lines are limited to \(controlMaxLineBytes) bytes; closing")
                        reply(ControlReply.failure(.null, error).json)
                        return
                    case .line(let line):
                        if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) { continue }
                        switch ControlRequest.decode(line: line) {
                        case .request(let request):
                            reply(await handler.handle(request).json)
                        case .failure(let requestID, let error):
                            reply(ControlReply.failure(requestID, error).json)
                        }
                    }
                }
            }
        } catch {
            logger.trace("control read ended", metadata: ["cowatch.control.error": "\(error)"])
        }
    }
}
