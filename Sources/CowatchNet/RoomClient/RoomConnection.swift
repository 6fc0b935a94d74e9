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

    /// Messages queued either way before the link is given up (inbound) or a message dropped (outbound).
    static let queueLimit = 4096

    /// How the link is protected.
    public enum Security: Sendable, Equatable {
        /// TLS; the server's key must be `expected` (from an invite), else the one `knownHosts`
        /// remembers, else it is trusted on first use and remembered there.
        case tls(expected: CertificateFingerprint?, knownHosts: KnownHosts?)
        /// No TLS (`--no-tls`): for loopback and tests only.
        case plaintext
    }

    public static func connect<Result: Sendable>(
        host: String, port: Int, security: Security, logger: Logger,
        _ body: @Sendable (
            _ inbound: AsyncThrowingStream<ServerMessage, any Error>, _ send: @escaping Send, _ fingerprint: String
        ) async throws -> Result
    ) async throws -> Result {
        let tls: PinnedTLS.Client?
        if case .tls(let expected, let knownHosts) = security {
            tls = try PinnedTLS.Client(host: host, port: port, expected: expected, knownHosts: knownHosts) { key in
                // Trust on first use is only as good as a person comparing the key, once.
                logger.warning("first connection to \(host):\(port): its key \(key.text) is trusted from now on; compare it with the one its host sees")
            }
        } else {
            tls = nil
        }
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(5))
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try tls?.addHandlers(to: channel)
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw CowatchError(.ioError, "cannot reach the room server at \(host):\(port): \(Self.describeConnectFailure(error))")
        }
        return try await channel.executeThenClose { inbound, outbound in
            let fingerprint = try await tls?.handshake().text ?? ""
            // Both bounded: a server that floods us, or one that stops reading, cannot grow us.
            let (outgoing, outgoingContinuation) = AsyncStream.makeStream(
                of: ClientMessage.self, bufferingPolicy: .bufferingOldest(Self.queueLimit))
            let (messages, messagesContinuation) = AsyncThrowingStream.makeStream(
                of: ServerMessage.self, bufferingPolicy: .bufferingOldest(Self.queueLimit))
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await message in outgoing {
                        try await outbound.write(ByteBuffer(bytes: message.encoded()))
                    }
                }
                group.addTask {
                    var framer = LineFramer(maxLineBytes: wireMaxLineBytes)
                    do {
                        for try await chunk in inbound {
                            for item in chunk.withUnsafeReadableBytes({ framer.feed($0) }) {
                                guard case .line(let line) = item else {
                                    throw CowatchError(.protocolViolation, "the server sent an over-long line")
                                }
                                if case .dropped = messagesContinuation.yield(try ServerMessage.decode(line: line)) {
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
                return try await body(messages, { outgoingContinuation.yield($0) }, fingerprint)
            }
        }
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
