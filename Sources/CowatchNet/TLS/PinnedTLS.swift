import CowatchCore
import NIOCore
import NIOSSL
import NIOTLS

/// TLS for the room link, with the server's key pinned instead of checked against certificate
/// authorities.
///
/// Client: one `PinnedTLS.Client` per connection attempt. Its `init` decides what to trust (the
/// invite's fingerprint, else the `known_hosts` line, else the first key seen), `addHandlers(to:)`
/// goes in the bootstrap's channel initializer, and `handshake()` waits for the handshake and
/// returns the server's verified fingerprint (which the room handshake binds into its proof).
/// Send nothing before `handshake()` has returned.
///
///     let tls = try PinnedTLS.Client(host: host, port: port, expected: invite.fingerprint, knownHosts: knownHosts)
///     let channel = try await ClientBootstrap(group: group).connect(host: host, port: port) { channel in
///         channel.eventLoop.makeCompletedFuture {
///             try tls.addHandlers(to: channel)
///             return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
///         }
///     }
///     let fingerprint = try await tls.handshake()   // throws certificate-mismatch, tls-failed, …
///
/// Server: `PinnedTLS.addServerHandlers(to:context:)` in the child channel initializer, with the
/// context from `ServerIdentity.makeServerContext()`.
///
/// Both sides speak TLS 1.3 only and give up on a handshake that has not finished within
/// `handshakeTimeout` (closing the connection), so a peer that never answers cannot hang a join
/// or hold a server slot.
public enum PinnedTLS {
    /// Why the client accepts the server's key.
    public enum Trust: Sendable, Equatable {
        /// The invite's `fp=`: only that key.
        case invite(CertificateFingerprint)
        /// The `known_hosts` line for this server: only that key.
        case knownHosts(CertificateFingerprint)
        /// Nothing known yet: the first key seen is accepted and remembered in `known_hosts`
        /// (when one is given) once the handshake succeeds.
        case firstUse
    }

    public static let defaultHandshakeTimeout: TimeAmount = .seconds(10)

    /// The client context shared by all connections: TLS 1.3, no certificate-authority roots
    /// loaded (verification is the pin check alone), no hostname check.
    static let clientContext: Result<NIOSSLContext, CowatchError> = {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv13
        // `.none` would skip the custom callback; `.noHostnameVerification` calls it and lets it
        // decide alone.
        configuration.certificateVerification = .noHostnameVerification
        configuration.trustRoots = .certificates([])
        do {
            return .success(try NIOSSLContext(configuration: configuration))
        } catch {
            return .failure(CowatchError(.tlsFailed, "cannot set up TLS: \(error)"))
        }
    }()

    /// Adds the server side of TLS to a freshly accepted channel: `NIOSSLServerHandler` and a
    /// deadline that closes the connection when the handshake has not finished within
    /// `handshakeTimeout`. Call it on the channel's event loop (in `ServerBootstrap`'s child
    /// channel initializer), before wrapping the channel in a `NIOAsyncChannel`:
    ///
    ///     .bind(host: host, port: port) { channel in
    ///         channel.eventLoop.makeCompletedFuture {
    ///             try PinnedTLS.addServerHandlers(to: channel, context: sslContext)
    ///             return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
    ///         }
    ///     }
    ///
    /// A client that is not speaking TLS (an old or `--no-tls` cowatch, a port scanner) makes
    /// the handshake fail: the channel's inbound sequence throws and the channel closes.
    public static func addServerHandlers(
        to channel: any Channel, context: NIOSSLContext, handshakeTimeout: TimeAmount = defaultHandshakeTimeout
    ) throws {
        let operations = channel.pipeline.syncOperations
        try operations.addHandler(NIOSSLServerHandler(context: context))
        try operations.addHandler(ServerHandshakeDeadline(timeout: handshakeTimeout))
    }
}

extension PinnedTLS {
    /// The client side of one connection attempt: the pin check, the handshake's outcome and the
    /// verified fingerprint.
    ///
    /// Threading: `Sendable`. `init` reads `known_hosts` (blocking; call it off the event loops).
    /// `addHandlers(to:)` runs on the channel's event loop, once. `handshake()` may be awaited
    /// from any task, any number of times; after success it may write `known_hosts` (first use),
    /// which blocks briefly.
    /// Errors (all `CowatchError`): `certificate-mismatch` when the server's key is not the
    /// pinned one (nothing was sent); `tls-failed` when the server does not speak TLS, closes,
    /// does not answer within the timeout, or the handshake fails otherwise; from `init` and
    /// `handshake()` also `known_hosts` errors (`invalid-configuration`, `unsafe-path`,
    /// `io-error`, and `certificate-mismatch` when another connection remembered a different key
    /// for this server meanwhile).
    public final class Client: Sendable {
        public let host: String
        public let port: Int
        public let trust: Trust
        public let knownHosts: KnownHosts?
        /// Told once, when a key is trusted for the first time (so a person can compare it).
        private let onFirstTrust: (@Sendable (CertificateFingerprint) -> Void)?
        private let handshakeTimeout: TimeAmount
        private let context: NIOSSLContext
        private let serverName: String?
        private let state = Locked(State())

        private struct State {
            var channel: (any Channel)?
            var presented: CertificateFingerprint?
            /// Set by the verification callback when it refuses, before the handshake fails.
            var refusal: CowatchError?
            /// The start of what the server sent when it was not TLS.
            var plaintext: String?
            var outcome: Result<CertificateFingerprint, CowatchError>?
            var waiters: [CheckedContinuation<Result<CertificateFingerprint, CowatchError>, Never>] = []
        }

        /// - Parameters:
        ///   - expected: the invite's fingerprint; when set, only that key is accepted and
        ///     `known_hosts` is neither read nor written.
        ///   - knownHosts: where remembered keys live; nil to trust any key (first use every time).
        ///   - onFirstTrust: called with the key when `knownHosts` remembers it for the first time.
        public init(
            host: String, port: Int, expected: CertificateFingerprint?, knownHosts: KnownHosts?,
            handshakeTimeout: TimeAmount = PinnedTLS.defaultHandshakeTimeout,
            onFirstTrust: (@Sendable (CertificateFingerprint) -> Void)? = nil
        ) throws(CowatchError) {
            self.onFirstTrust = onFirstTrust
            self.host = host
            self.port = port
            self.knownHosts = knownHosts
            self.handshakeTimeout = handshakeTimeout
            if let expected {
                trust = .invite(expected)
            } else if let known = try knownHosts?.lookup(host: host, port: port) {
                trust = .knownHosts(known)
            } else {
                trust = .firstUse
            }
            context = try PinnedTLS.clientContext.get()
            // SNI carries names only; an IP address or an odd name is simply not sent.
            let looksLikeAddress = host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." }
            serverName = looksLikeAddress || host.isEmpty || host.utf8.count > 255 || host.utf8.contains(0) ? nil : host
        }

        /// `HOST:PORT` as messages and `known_hosts` write it.
        public var authority: String { KnownHosts.key(host: host, port: port) }

        /// The verified fingerprint, once `handshake()` has succeeded; nil before and on failure.
        public var fingerprint: CertificateFingerprint? {
            state.withLock { try? $0.outcome?.get() }
        }

        /// Adds the TLS client handler (with the pin check) and the handshake watchers to a new
        /// channel. Call it once, on the channel's event loop, in the bootstrap's channel
        /// initializer, before any other handler.
        public func addHandlers(to channel: any Channel) throws {
            let attached = state.withLock { state in
                defer { state.channel = channel }
                return state.channel == nil
            }
            guard attached else { throw CowatchError(.tlsFailed, "PinnedTLS.Client.addHandlers(to:) called twice; use one Client per connection") }
            let handler = try NIOSSLClientHandler(
                context: context, serverHostname: serverName,
                customVerificationCallback: { [self] (certificates: [NIOSSLCertificate], promise: EventLoopPromise<NIOSSLVerificationResult>) in
                    promise.succeed(verify(certificates))
                })
            let operations = channel.pipeline.syncOperations
            try operations.addHandler(PlaintextSniffer(client: self))
            try operations.addHandler(handler)
            try operations.addHandler(HandshakeWatcher(client: self, timeout: handshakeTimeout))
        }

        /// Waits for the TLS handshake and returns the server's verified fingerprint. On first use
        /// with a `knownHosts`, remembers the key there before returning. Cancelling the waiting
        /// task closes the connection and throws `tls-failed`.
        public func handshake() async throws(CowatchError) -> CertificateFingerprint {
            let result = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Result<CertificateFingerprint, CowatchError>, Never>) in
                    let ready: Result<CertificateFingerprint, CowatchError>? = state.withLock { state in
                        if let outcome = state.outcome { return outcome }
                        guard state.channel != nil else {
                            return .failure(CowatchError(
                                .tlsFailed, "no TLS connection to \(authority): addHandlers(to:) must run in the channel initializer"))
                        }
                        state.waiters.append(continuation)
                        return nil
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            } onCancel: {
                finish(.failure(CowatchError(.tlsFailed, "the TLS handshake with \(authority) was cancelled")))
                state.withLock { $0.channel }?.close(promise: nil)
            }
            let fingerprint = try result.get()
            if case .firstUse = trust, let knownHosts {
                if try knownHosts.remember(host: host, port: port, fingerprint: fingerprint) { onFirstTrust?(fingerprint) }
            }
            return fingerprint
        }

        /// What an error from this connection means for people: the recorded pin refusal if
        /// there was one, else a `tls-failed` explaining the likely cause. For errors the
        /// channel's inbound sequence throws during the handshake; `handshake()` applies it itself.
        public func describe(_ error: any Error) -> CowatchError {
            let (refusal, plaintext) = state.withLock { ($0.refusal, $0.plaintext) }
            if let refusal { return refusal }
            if let error = error as? CowatchError { return error }
            if let plaintext {
                return CowatchError(
                    .tlsFailed,
                    "the server at \(authority) answered without TLS (\(plaintext)): it may be a cowatch server started with --no-tls (then the invite needs notls=1) or another service on that port")
            }
            let text = String(describing: error)
            if let error = error as? NIOSSLError {
                switch error {
                case .uncleanShutdown, .handshakeFailed(.sslError([])), .handshakeFailed(.syscallError):
                    return closedDuringHandshake()
                default:
                    if text.contains("EOF during handshake") { return closedDuringHandshake() }
                    if text.contains("PROTOCOL_VERSION") || text.contains("UNSUPPORTED_PROTOCOL") {
                        return CowatchError(
                            .tlsFailed, "the server at \(authority) does not offer TLS 1.3 (is it a cowatch room server?): \(text)")
                    }
                }
            }
            // The server closed or reset the connection (a reset when it closed with our hello unread).
            if error is ChannelError || error is IOError { return closedDuringHandshake() }
            return CowatchError(.tlsFailed, "the TLS handshake with \(authority) failed: \(text)")
        }

        // MARK: - Called on the event loop by the handlers

        /// The pin check, run by BoringSSL once per handshake with the chain as presented.
        private func verify(_ certificates: [NIOSSLCertificate]) -> NIOSSLVerificationResult {
            guard let leaf = certificates.first, let spki = try? leaf.extractPublicKey().toSPKIBytes() else {
                state.withLock { $0.refusal = CowatchError(.tlsFailed, "the server at \(authority) presented no usable certificate") }
                return .failed
            }
            let presented = CertificateFingerprint(spkiDER: spki)
            let refusal: CowatchError?
            switch trust {
            case .invite(let expected):
                refusal = expected.matches(presented) ? nil : CowatchError(
                    .certificateMismatch,
                    "the server at \(authority) presented \(presented.text) but the invite says \(expected.text); someone may be in the middle, nothing was sent. If the server really changed its certificate, ask for a new invite")
            case .knownHosts(let known):
                let file = knownHosts?.path ?? "known_hosts"
                refusal = known.matches(presented) ? nil : CowatchError(
                    .certificateMismatch,
                    "the server at \(authority) presented \(presented.text) but \(file) says \(known.text); someone may be in the middle, nothing was sent. If the host really changed its certificate, remove the line for \(authority) from \(file)")
            case .firstUse:
                refusal = nil
            }
            state.withLock {
                $0.presented = presented
                $0.refusal = refusal
            }
            return refusal == nil ? .certificateVerified : .failed
        }

        fileprivate func notePlaintext(_ description: String) {
            state.withLock { $0.plaintext = description }
        }

        fileprivate func handshakeCompleted() {
            let presented = state.withLock { $0.presented }
            finish(presented.map { .success($0) } ?? .failure(CowatchError(.tlsFailed, "the TLS handshake with \(authority) finished without a certificate check")))
        }

        fileprivate func handshakeFailed(_ error: any Error) {
            finish(.failure(describe(error)))
        }

        fileprivate func closed() {
            finish(.failure(describe(ChannelError.eof)))
        }

        fileprivate func timedOut() {
            finish(.failure(CowatchError(
                .tlsFailed,
                "no TLS answer from \(authority) within \(Double(handshakeTimeout.nanoseconds) / 1e9) s: it may be a cowatch server started with --no-tls (then the invite needs notls=1) or another service on that port")))
        }

        private func closedDuringHandshake() -> CowatchError {
            CowatchError(
                .tlsFailed,
                "the server at \(authority) closed the connection during the TLS handshake: it may be a cowatch server started with --no-tls (then the invite needs notls=1), an older cowatch, or another service on that port")
        }

        /// The first outcome wins; waiters are resumed outside the lock.
        private func finish(_ outcome: Result<CertificateFingerprint, CowatchError>) {
            let waiters = state.withLock { state -> [CheckedContinuation<Result<CertificateFingerprint, CowatchError>, Never>] in
                guard state.outcome == nil else { return [] }
                state.outcome = outcome
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: state.withLock { $0.outcome! }) }
        }
    }
}

/// Before the TLS handler: notes what the server sent when its first byte is not a TLS record
/// (handshake 0x16 or alert 0x15), for `describe`. Looks at the first read only.
private final class PlaintextSniffer: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let client: PinnedTLS.Client
    private var looked = false

    init(client: PinnedTLS.Client) {
        self.client = client
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !looked {
            let buffer = unwrapInboundIn(data)
            if let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) {
                looked = true
                if first != 0x16 && first != 0x15 {
                    let bytes = buffer.getBytes(at: buffer.readerIndex, length: min(buffer.readableBytes, 40)) ?? []
                    let printable = bytes.prefix { (0x20...0x7E).contains($0) }
                    client.notePlaintext(
                        printable.count >= 3
                            ? "it sent \"\(String(decoding: printable, as: UTF8.self))…\""
                            : "its first byte is 0x\(String(first, radix: 16)), not a TLS record")
                }
            }
        }
        context.fireChannelRead(data)
    }
}

/// After the TLS handler: reports the handshake's end (success, error, close, timeout) to the
/// client. The timeout starts when the TCP connection is up.
private final class HandshakeWatcher: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let client: PinnedTLS.Client
    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?
    private var done = false

    init(client: PinnedTLS.Client, timeout: TimeAmount) {
        self.client = client
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startDeadline(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        startDeadline(context: context)
        context.fireChannelActive()
    }

    private func startDeadline(context: ChannelHandlerContext) {
        guard deadline == nil, !done else { return }
        let client = self.client
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: timeout) {
            client.timedOut()
            channel.close(promise: nil)
        }
    }

    private func end() {
        done = true
        deadline?.cancel()
        deadline = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !done, let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            end()
            client.handshakeCompleted()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !done {
            end()
            client.handshakeFailed(error)
        }
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            end()
            client.closed()
        }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if !done {
            end()
            client.closed()
        }
    }
}

/// After the server's TLS handler: closes a connection whose handshake has not finished within
/// the timeout.
private final class ServerHandshakeDeadline: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?
    private var done = false

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard deadline == nil, !done else { return }
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    private func end() {
        done = true
        deadline?.cancel()
        deadline = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event { end() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        end()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        end()
    }
}
