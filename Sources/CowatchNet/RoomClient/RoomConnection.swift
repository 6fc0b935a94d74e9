import CowatchCore
import Logging
import NIOCore
import NIOPosix

/// One connection to a room server, as a pair of async sequences of wire messages.
///
/// `connect` opens the socket (TCP_NODELAY: the clock exchange and scheduled actions are
/// latency-sensitive), runs TLS with the server's key pinned (`Security.tls`) unless told
/// `.plaintext`, and hands `body` an inbound sequence of decoded `ServerMessage`s, a function to
/// send `ClientMessage`s, and the server certificate's verified fingerprint (`sha256:…`, empty
/// without TLS; the room handshake binds it into its proof). Nothing is sent before TLS is up.
/// The connection closes when `body` returns.
///
/// Threading: `send` may be called from any task; messages go out in call order.
/// Errors: connection failures throw `io-error`; TLS failures `tls-failed` or
/// `certificate-mismatch` (nothing was sent); a line that is not a valid server message throws
/// `protocol-violation` from the inbound sequence.
public enum RoomConnection {
    public typealias Send = @Sendable (ClientMessage) -> Void

    /// A server message and the instant its bytes were read from the socket (`now` of
    /// `connect`): a clock probe's reply is stamped there, before the hops to whoever handles it.
    public struct Arrival: Sendable {
        public let message: ServerMessage
        public let at: Double
    }

    /// Messages queued either way before the link is given up (inbound) or a message dropped
    /// (outbound); unreliable messenger messages take `LinkQueueAllowance.unreliableAllowance` of
    /// them at most, and are dropped beyond it.
    static let queueLimit = 4096

    /// How the link is protected.
    public enum Security: Sendable, Equatable {
        /// TLS; the server's key must be `expected` (from an invite), else the one `knownHosts`
        /// remembers, else it is trusted on first use and remembered there.
        case tls(expected: CertificateFingerprint?, knownHosts: KnownHosts?)
        /// No TLS (`--no-tls`): for loopback and tests only.
        case plaintext
    }

    /// `alternates` are more addresses of the same server (an invite's `alt=`): they are raced
    /// with `host:port` the way browsers race IPv6 and IPv4 — each starts `raceStagger` after
    /// the one before it, or at once when that one failed — and the first connection wins;
    /// `onReached` hears which one (only when there was a choice). When none can be reached the
    /// error names each address with why it failed.
    public static func connect<Result: Sendable>(
        host: String, port: Int, alternates: [Endpoint] = [], security: Security, logger: Logger,
        now: @escaping @Sendable () -> Double = SystemClock.monotonicSeconds,
        onReached: (@Sendable (Endpoint) -> Void)? = nil,
        _ body: @Sendable (
            _ inbound: AsyncThrowingStream<Arrival, any Error>, _ send: @escaping Send, _ fingerprint: String
        ) async throws -> Result
    ) async throws -> Result {
        var endpoints = [Endpoint(host: host, port: port)]
        for alternate in alternates where !endpoints.contains(alternate) { endpoints.append(alternate) }
        let (channel, tls, reached) = try await race(endpoints, security: security, logger: logger)
        if endpoints.count > 1 { onReached?(reached) }
        return try await channel.executeThenClose { inbound, outbound in
            let fingerprint = try await tls?.handshake().text ?? ""
            // Both bounded: a server that floods us, or one that stops reading, cannot grow us.
            let (outgoing, outgoingContinuation) = AsyncStream.makeStream(
                of: ClientMessage.self, bufferingPolicy: .bufferingOldest(Self.queueLimit))
            let (messages, messagesContinuation) = AsyncThrowingStream.makeStream(
                of: Arrival.self, bufferingPolicy: .bufferingOldest(Self.queueLimit))
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await message in outgoing {
                        try await outbound.write(ByteBuffer(bytes: message.encoded()))
                    }
                }
                group.addTask {
                    var framer = LineFramer(maxLineBytes: wireMaxLineBytes)
                    var allowance = LinkQueueAllowance(limit: Self.queueLimit)
                    do {
                        for try await chunk in inbound {
                            let at = now()
                            for item in chunk.withUnsafeReadableBytes({ framer.feed($0) }) {
                                guard case .line(let line) = item else {
                                    throw CowatchError(.protocolViolation, "the server sent an over-long line")
                                }
                                let message = try ServerMessage.decode(line: line)
                                // A peer's unreliable stream takes its own share of the queue, and is dropped beyond it.
                                if message.isUnreliableMessage, !allowance.admitsUnreliable { continue }
                                guard allowance.yielded(messagesContinuation.yield(Arrival(message: message, at: at))) else {
                                    throw CowatchError(.flooding, "the room server sent faster than we can follow")
                                }
                            }
                        }
                        messagesContinuation.finish(throwing: CowatchError(.ioError, "the room server closed the connection"))
                    } catch {
                        messagesContinuation.finish(throwing: tls?.describe(error) ?? error)
                    }
                }
                defer {
                    outgoingContinuation.finish()
                    group.cancelAll()
                }
                let sending = Locked(LinkQueueAllowance(limit: Self.queueLimit))
                return try await body(messages, { message in
                    sending.withLock { allowance in
                        // Our unreliable messages wait in their own share of the queue, and are dropped beyond it.
                        if message.isUnreliableMessage, !allowance.admitsUnreliable { return }
                        _ = allowance.yielded(outgoingContinuation.yield(message))
                    }
                }, fingerprint)
            }
        }
    }
}

extension RoomConnection {
    /// How long a connection attempt has before the next address is tried beside it.
    static let raceStagger = 0.25

    private typealias Opened = (channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>, tls: PinnedTLS.Client?, endpoint: Endpoint)

    /// The first of `endpoints` that connects; the others are closed (or never started).
    private static func race(_ endpoints: [Endpoint], security: Security, logger: Logger) async throws -> Opened {
        if endpoints.count == 1 { return try await open(endpoints[0], security: security, logger: logger) }
        let failures = Locked<[Int: String]>([:])
        let winner: Opened? = await withTaskGroup(of: Opened?.self) { group in
            // Each attempt is released by a failure before it or by the stagger, whichever comes first.
            let released = (0..<endpoints.count).map { _ in Reply<Void>() }
            for (index, endpoint) in endpoints.enumerated() {
                group.addTask {
                    if index > 0 { await released[index - 1].wait(timeout: raceStagger, orElse: ()) }
                    guard !Task.isCancelled else { return nil }
                    do {
                        return try await open(endpoint, security: security, logger: logger)
                    } catch {
                        failures.withLock { $0[index] = (error as? CowatchError)?.message ?? "\(error)" }
                        released[index].resume(())
                        return nil
                    }
                }
            }
            var first: Opened?
            for await opened in group {
                guard let opened else { continue }
                if first == nil {
                    first = opened
                    group.cancelAll()
                } else {
                    // A slower connection that made it anyway: closed, properly.
                    try? await opened.channel.executeThenClose { _, _ in }
                }
            }
            return first
        }
        if let winner { return winner }
        let said = failures.withLock { $0 }
        let reasons = endpoints.indices.map { index in
            "\(Invite.authority(host: endpoints[index].host, port: endpoints[index].port)) (\(said[index].map(Self.reason) ?? "not tried"))"
        }
        throw CowatchError(.ioError, "cannot reach the room server at any of its addresses: " + reasons.joined(separator: "; "))
    }

    /// The part of a connect failure after the address ("cannot reach … at X: refused" → "refused").
    private static func reason(_ message: String) -> String {
        guard let range = message.range(of: ": ") else { return message }
        return String(message[range.upperBound...])
    }

    /// One TCP connection with the TLS handlers in place (the handshake runs later).
    private static func open(_ endpoint: Endpoint, security: Security, logger: Logger) async throws -> Opened {
        let host = endpoint.host
        let port = endpoint.port
        let tls: PinnedTLS.Client?
        if case .tls(let expected, let knownHosts) = security {
            tls = try PinnedTLS.Client(host: host, port: port, expected: expected, knownHosts: knownHosts) { key in
                // Trust on first use is only as good as a person comparing the key, once.
                logger.warning("first connection to \(host):\(port): its key \(key.text) is trusted from now on; compare it with the one its host sees")
            }
        } else {
            tls = nil
        }
        do {
            let channel = try await connect(host: host, port: port, tls: tls)
            return (channel, tls, endpoint)
        } catch {
            throw CowatchError(.ioError, "cannot reach the room server at \(Invite.authority(host: host, port: port)): \(Self.describeConnectFailure(error))")
        }
    }
}

extension RoomConnection {
    /// A TCP connection to `host:port` with `tls`'s handlers in place, ended by cancellation.
    ///
    /// NIO's connect does not end when its task is cancelled: an attempt that lost the race to an
    /// address that never answers would hold the join up for the whole connect timeout. So
    /// cancelling closes the channel being connected, which fails the connect at once.
    private static func connect(host: String, port: Int, tls: PinnedTLS.Client?) async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
        let attempt = Locked<ConnectAttempt>(ConnectAttempt())
        let initializer: @Sendable (any Channel) -> EventLoopFuture<NIOAsyncChannel<ByteBuffer, ByteBuffer>> = { channel in
            let cancelled = attempt.withLock { state -> Bool in
                state.channel = channel
                return state.cancelled
            }
            if cancelled { return channel.eventLoop.makeFailedFuture(CancellationError()) }
            return channel.eventLoop.makeCompletedFuture {
                try tls?.addHandlers(to: channel)
                return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
        }
        return try await withTaskCancellationHandler {
            try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(5))
                .connect(host: host, port: port, channelInitializer: initializer)
        } onCancel: {
            let channel = attempt.withLock { state -> (any Channel)? in
                state.cancelled = true
                return state.channel
            }
            channel?.close(promise: nil)
        }
    }

    private struct ConnectAttempt {
        var channel: (any Channel)?
        var cancelled = false
    }
}

extension RoomConnection {
    /// A connect failure in a person's words (NIO's own text names internal types).
    static func describeConnectFailure(_ error: any Error) -> String {
        let text = "\(error)"
        let known: [(String, String)] = [
            ("Connection refused", "connection refused (is cowatch-server running there, on that port?)"),
            ("No route to host", "no route to host"),
            ("Network is unreachable", "the network is unreachable"),
            ("timed out", "timed out"),
            ("Name or service not known", "unknown host name"),
            ("nodename nor servname", "unknown host name"),
        ]
        for (needle, words) in known where text.contains(needle) { return words }
        return text
    }
}
