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
/// Memory per client is bounded whatever the client does: a client that does not read loses its
/// oldest events beyond 1024 waiting (a peer's unreliable messages first, and beyond 64 of them
/// waiting: they never push out a reliable message or a notice), and its requests are not read while 64 replies wait for it
/// (`ControlOutbox`), so one that pipelines requests without reading is slowed by its own socket.
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
                    AcceptedChannel(try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel))
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
                    for try await accepted in inbound {
                        group.addTask {
                            guard let connection = accepted.take() else { return }
                            await serve(connection)
                        }
                    }
                }
                group.cancelAll()
            }
        }
    }

    /// What one client is sent. An event is kept as the hub's `ControlEvent`, whose storage every
    /// client shares, and encoded only when written.
    private enum Outgoing: Sendable {
        case reply(JSONValue)
        case event(ControlEvent)

        var line: ByteBuffer {
            var buffer: ByteBuffer
            switch self {
            case .reply(let json): buffer = ByteBuffer(bytes: json.encoded())
            case .event(let event): buffer = ByteBuffer(bytes: event.json.encoded())
            }
            buffer.writeInteger(UInt8(ascii: "\n"))
            return buffer
        }
    }

    /// A peer's unreliable message: the first event a slow client loses (`ControlOutbox`).
    private static func isDroppable(_ event: ControlEvent) -> Bool {
        if case .message(let message) = event { return !message.reliable }
        return false
    }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        // The one queue between the daemon and this client, bounded both ways: events past the
        // limit drop the oldest, and requests are not read while too many replies wait.
        let outbox = ControlOutbox<Outgoing>()
        let subscription = events.subscribe { outbox.pushEvent(.event($0), droppable: Self.isDroppable($0)) }
        do {
            try await connection.executeThenClose { inbound, outbound in
                await withTaskGroup(of: Void.self) { group in
                    // The only writer: replies and events never interleave within a line. Its
                    // writes wait while the socket is full, so messages wait in the outbox.
                    group.addTask {
                        while let message = await outbox.next() {
                            do {
                                try await outbound.write(message.line)
                            } catch {
                                outbox.cancel()  // the client is gone: stop queueing, free the reader
                            }
                        }
                    }
                    await readRequests(inbound, outbox: outbox)
                    // No more events; the writer drains the replies and stops.
                    events.unsubscribe(subscription)
                    outbox.finish()
                }
            }
        } catch {
            logger.trace("control connection ended", metadata: ["cowatch.control.error": "\(error)"])
            events.unsubscribe(subscription)
            outbox.cancel()
        }
    }

    /// Reads, carries out and answers requests in order until the client stops sending. Before
    /// each request it waits until fewer than `outbox.replyLimit` replies wait: meanwhile
    /// nothing is read, so NIO stops reading the socket and the client's sends block.
    private func readRequests(
        _ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, outbox: ControlOutbox<Outgoing>
    ) async {
        let reply = { (value: JSONValue) in outbox.pushReply(.reply(value)) }
        var framer = LineFramer(maxLineBytes: controlMaxLineBytes)
        do {
            for try await chunk in inbound {
                for item in chunk.withUnsafeReadableBytes({ framer.feed($0) }) {
                    switch item {
                    case .tooLong:
                        let error = CowatchError(
                            .lineTooLong, "request lines are limited to \(controlMaxLineBytes) bytes; closing")
                        reply(ControlReply.failure(.null, error).json)
                        return
                    case .line(let line):
                        await outbox.awaitReplyRoom()
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
