#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CowatchCore
import CowatchNet
import NIOCore
import NIOPosix
import NIOSSL

/// A fresh directory under /tmp; `remove()` deletes it with its contents.
struct TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/cowatch-net-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw CowatchError(.ioError, "mkdtemp failed") }
        path = String(cString: made)
    }

    func remove() {
        _ = system("rm -rf '\(path)'")
    }
}

/// Writes back whatever it reads.
final class EchoHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.writeAndFlush(data, promise: nil)
    }
}

/// On connect, writes `greeting` (if any) and closes when `closeAfterGreeting`; otherwise reads
/// and ignores everything.
final class PlaintextHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let greeting: String?
    let closeAfterGreeting: Bool

    init(greeting: String?, closeAfterGreeting: Bool) {
        self.greeting = greeting
        self.closeAfterGreeting = closeAfterGreeting
    }

    func channelActive(context: ChannelHandlerContext) {
        if let greeting {
            let future = context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: greeting)))
            if closeAfterGreeting {
                let channel = context.channel
                future.whenComplete { _ in channel.close(promise: nil) }
            }
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
}

enum TestServers {
    /// A TLS echo server on 127.0.0.1, any free port.
    static func tlsEcho(identity: ServerIdentity, handshakeTimeout: TimeAmount = .seconds(10)) async throws -> any Channel {
        try await tlsEcho(context: Locked(try identity.makeServerContext()), handshakeTimeout: handshakeTimeout)
    }

    /// A TLS echo server whose connections use whatever context `context` holds when they arrive
    /// (swap it to change the server's identity on the same port).
    static func tlsEcho(context: Locked<NIOSSLContext>, handshakeTimeout: TimeAmount = .seconds(10)) async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try PinnedTLS.addServerHandlers(to: channel, context: context.withLock { $0 }, handshakeTimeout: handshakeTimeout)
                    try channel.pipeline.syncOperations.addHandler(EchoHandler())
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    /// A plaintext server on 127.0.0.1.
    static func plaintext(greeting: String?, closeAfterGreeting: Bool) async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        PlaintextHandler(greeting: greeting, closeAfterGreeting: closeAfterGreeting))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    static func port(of server: any Channel) -> Int {
        server.localAddress!.port!
    }
}

enum TestClient {
    /// Connects with `tls`, waits for the handshake, sends a line through the echo server and
    /// checks it comes back; returns the verified fingerprint. Throws the handshake's error.
    static func echo(port: Int, tls: PinnedTLS.Client) async throws -> CertificateFingerprint {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(5))
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try tls.addHandlers(to: channel)
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            let fingerprint = try await tls.handshake()
            try await outbound.write(ByteBuffer(string: "ping\n"))
            var received = ""
            for try await chunk in inbound {
                received += String(buffer: chunk)
                if received.hasSuffix("\n") { break }
            }
            guard received == "ping\n" else { throw CowatchError(.ioError, "echo returned \(received.debugDescription)") }
            return fingerprint
        }
    }
}
