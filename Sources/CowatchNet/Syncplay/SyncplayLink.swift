import CowatchCore
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// One connection to a Syncplay server, handed to the room session as if it were a Cowatch room
/// server's: `connect` gives `body` the same inbound sequence of `ServerMessage`s and the same
/// `send` of `ClientMessage`s as `RoomConnection.connect`, and `SyncplayBridge` translates
/// between the two protocols in between.
///
/// TLS is Syncplay's STARTTLS: asked for first, started in place when the server says yes,
/// verified against the system's certificate authorities (and `Settings.extraTrustRoots`) and
/// the server's host name. A server without TLS is used in plaintext with a warning, or refused
/// (`SyncplayClient.Configuration.requireTLS`).
///
/// Threading: `send` may be called from any task; one driver task owns the bridge and carries
/// out its actions in order. Errors: `io-error` (cannot connect, closed); `certificate-mismatch`
/// (the server's certificate fails verification: retrying cannot help); `tls-failed`; and from
/// the inbound sequence, what the bridge gives up with (`timeout` for a silent server,
/// `protocol-violation`, `unknown-command`). A refusal the daemon must not retry (a wrong
/// server password; TLS required and not offered) arrives as a room `error` message first.
public enum SyncplayLink {
    public struct Settings: Sendable {
        public var host: String
        public var port: Int
        public var client: SyncplayClient.Configuration
        /// A PEM file of certificate authorities trusted besides the system's (a server with a
        /// private authority); nil: the system's only.
        public var extraTrustRoots: String?
        /// This machine's file of a shared playlist's name (by the daemon's media directories
        /// and its own media), if it has one. Called on the driver's task between events: it must
        /// answer promptly (look up, never wait for a scan).
        public var identify: @Sendable (String) async -> MediaIdentity?
        /// What lasts across connections (the managed room this daemon made, which a reconnect
        /// joins instead of `client.room`) and `manage` for the connection that is up.
        public var control: SyncplayLinkControl

        public init(
            host: String, port: Int, client: SyncplayClient.Configuration, extraTrustRoots: String? = nil,
            control: SyncplayLinkControl = SyncplayLinkControl(),
            identify: @escaping @Sendable (String) async -> MediaIdentity? = { _ in nil }
        ) {
            self.host = host
            self.port = port
            self.client = client
            self.extraTrustRoots = extraTrustRoots
            self.control = control
            self.identify = identify
        }
    }

    /// Events queued for the driver before a flood is given up on.
    static let queueLimit = 4096
    /// How often the driver looks for a silent server.
    static let tickInterval = 0.5
    /// Lines that may wait for a server that does not read, and how long (seconds) the oldest may.
    static let writeQueueLimit = 256
    static let writeTimeout = 15.0

    enum Event: Sendable {
        case line([UInt8])
        case tooLong
        case closed((any Error)?)
        case daemon(ClientMessage)
        case tick
        /// `SyncplayLinkControl.manage`, answered once the server says we control the new room.
        case manage(password: String, answer: SyncplayLinkControl.Answer)
    }

    public static func connect<Result: Sendable>(
        settings: Settings, logger: Logger, clock: any MonotonicClock,
        _ body: @Sendable (
            _ inbound: AsyncThrowingStream<RoomConnection.Arrival, any Error>, _ send: @escaping RoomConnection.Send,
            _ fingerprint: String
        ) async throws -> Result
    ) async throws -> Result {
        let channel = try await open(settings)
        return try await channel.executeThenClose { inbound, outbound in
            let (events, eventsContinuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingOldest(queueLimit))
            let (messages, messagesContinuation) = AsyncThrowingStream.makeStream(
                of: RoomConnection.Arrival.self, bufferingPolicy: .bufferingOldest(queueLimit))
            return try await withThrowingTaskGroup(of: Void.self) { group in
                // A server that sends faster than the driver follows fills the queue: its lines are
                // not dropped unseen; the driver ends the connection at its next event.
                let overflowed = NIOLockedValueBox(false)
                group.addTask {
                    let end = await SyncplayLineReader.read(inbound) { line in
                        if case .dropped = eventsContinuation.yield(.line(line)) {
                            overflowed.withLockedValue { $0 = true }
                            return false
                        }
                        return true
                    }
                    switch end {
                    case .tooLong: eventsContinuation.yield(.tooLong)
                    case .closed(let error): eventsContinuation.yield(.closed(error))
                    case .overflow: break
                    }
                }
                group.addTask {
                    while true {
                        try await clock.sleep(seconds: tickInterval)
                        eventsContinuation.yield(.tick)
                    }
                }
                let writer = PeerWriter(limit: writeQueueLimit)
                group.addTask { await writer.run(outbound) }
                group.addTask {
                    var driver = Driver(
                        settings: settings, logger: logger, clock: clock, channel: channel.channel, writer: writer,
                        overflowed: overflowed, messages: messagesContinuation)
                    await driver.run(events)
                    writer.finish()
                }
                settings.control.attach { event in
                    if case .enqueued = eventsContinuation.yield(event) { return true }
                    return false
                }
                defer {
                    settings.control.detach()
                    eventsContinuation.finish()
                    group.cancelAll()
                }
                return try await body(messages, { message in eventsContinuation.yield(.daemon(message)) }, "")
            }
        }
    }

    /// The TCP connection (TLS comes later, if the server says yes).
    private static func open(_ settings: Settings) async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
        do {
            return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(5))
                .connect(host: settings.host, port: settings.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw CowatchError(
                .ioError,
                "cannot reach the Syncplay server at \(Invite.authority(host: settings.host, port: settings.port)): \(RoomConnection.describeConnectFailure(error))")
        }
    }
}

extension SyncplayLink {
    /// Owns the bridge: feeds it the server's lines, the daemon's messages and the ticks, and
    /// carries out what it says.
    struct Driver {
        let settings: Settings
        let logger: Logger
        let clock: any MonotonicClock
        let channel: any Channel
        let writer: PeerWriter
        let overflowed: NIOLockedValueBox<Bool>
        let messages: AsyncThrowingStream<RoomConnection.Arrival, any Error>.Continuation
        var bridge: SyncplayBridge
        var startedTLS = false
        /// Callers of `manage` waiting for the server's answer.
        var waitingForManage: [SyncplayLinkControl.Answer] = []

        init(
            settings: Settings, logger: Logger, clock: any MonotonicClock, channel: any Channel,
            writer: PeerWriter, overflowed: NIOLockedValueBox<Bool>,
            messages: AsyncThrowingStream<RoomConnection.Arrival, any Error>.Continuation
        ) {
            self.settings = settings
            self.logger = logger
            self.clock = clock
            self.channel = channel
            self.writer = writer
            self.overflowed = overflowed
            self.messages = messages
            bridge = SyncplayBridge(configuration: settings.control.configuration(settings.client))
        }

        var authority: String { Invite.authority(host: settings.host, port: settings.port) }

        mutating func run(_ events: AsyncStream<Event>) async {
            do {
                try await perform(bridge.connected(now: clock.now()))
                for await event in events {
                    let now = clock.now()
                    if overflowed.withLockedValue({ $0 }) {
                        throw CowatchError(.flooding, "the Syncplay server at \(authority) sent faster than we can follow")
                    }
                    switch event {
                    case .line(let line):
                        do {
                            let commands = try SyncplayCodec.decode(line: line)
                            logger.trace("syncplay line", metadata: ["cowatch.syncplay.commands": "\(commands.count)"])
                            try await perform(bridge.received(commands, now: now))
                        } catch let error as CowatchError {
                            try await perform(bridge.receivedBadLine(error))
                        }
                    case .tooLong:
                        throw CowatchError(.protocolViolation, "the Syncplay server sent a line longer than \(SyncplayCodec.maxLineBytes) bytes")
                    case .closed(let error):
                        throw describe(error)
                    case .daemon(let message):
                        try await perform(bridge.fromDaemon(message, now: now))
                    case .tick:
                        if writer.waited(now: now) > writeTimeout {
                            throw CowatchError(.timeout, "the Syncplay server at \(authority) read nothing for \(Int(writeTimeout)) s")
                        }
                        try await perform(bridge.tick(now: now))
                    case .manage(let password, let answer):
                        let actions: [SyncplayBridge.Action]
                        do {
                            actions = try bridge.manage(password: password, now: now)
                        } catch {
                            answer.resume(.failure(error))
                            continue
                        }
                        waitingForManage.append(answer)
                        try await perform(actions)
                    }
                }
                messages.finish(throwing: CancellationError())
            } catch {
                messages.finish(throwing: error)
            }
            answerManage(.failure(.syncplayNotConnected("the connection to the Syncplay server at \(authority) ended before it answered")))
        }

        private mutating func answerManage(_ result: Result<SyncplayControlledRoom, CowatchError>) {
            for answer in waitingForManage { answer.resume(result) }
            waitingForManage = []
        }

        private mutating func perform(_ actions: [SyncplayBridge.Action]) async throws {
            for action in actions {
                switch action {
                case .syncplay(let commands):
                    try send(.bytes(ByteBuffer(bytes: SyncplayCodec.encode(commands))))
                case .startTLS:
                    try startTLS()
                case .deliver(let message):
                    if case .dropped = messages.yield(RoomConnection.Arrival(message: message, at: clock.now())) {
                        throw CowatchError(.flooding, "the Syncplay server sent faster than we can follow")
                    }
                case .plaintext:
                    logger.warning(
                        "the Syncplay server at \(authority) offers no TLS: names, chat and the server password go in clear (--syncplay-require-tls refuses such servers)")
                case .identify(let names):
                    var found: [String: MediaIdentity] = [:]
                    for name in names.prefix(SyncplayCodec.maxPlaylistFiles) {
                        if let identity = await settings.identify(name) { found[name] = identity }
                    }
                    try await perform(bridge.identified(found, now: clock.now()))
                case .managedRoomCreated(let room, let password):
                    // The password stays in memory (reconnects claim control with it), never in a log.
                    settings.control.remember(SyncplayControlledRoom(room: room, password: password, created: true))
                    logger.notice("the Syncplay server made the managed room \(room) for us: others join it by that name")
                case .managed(let made):
                    answerManage(.success(made))
                case .manageRefused(let error):
                    answerManage(.failure(error))
                case .fail(let error):
                    if error.code == .authFailed || error.code == .tlsFailed {
                        // The daemon stays out instead of retrying the same refusal.
                        _ = messages.yield(RoomConnection.Arrival(message: .error(code: error.code.rawValue, message: error.message), at: clock.now()))
                    }
                    throw error
                }
            }
        }

        private func send(_ item: PeerWriter.Item) throws {
            switch writer.enqueue(item, now: clock.now()) {
            case .queued: return
            case .full: throw CowatchError(.flooding, "the Syncplay server at \(authority) does not read what we send")
            case .failed: throw CowatchError(.ioError, "cannot write to the Syncplay server at \(authority)")
            }
        }

        /// STARTTLS: TLS goes in front of everything in the pipeline, after the lines already
        /// queued and before the next one (a step of the writer, so the order holds).
        private mutating func startTLS() throws {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.minimumTLSVersion = .tlsv12
            configuration.certificateVerification = .fullVerification
            if let extra = settings.extraTrustRoots {
                configuration.additionalTrustRoots = [.file(extra)]
            }
            let context: NIOSSLContext
            do {
                context = try NIOSSLContext(configuration: configuration)
            } catch {
                throw CowatchError(.tlsFailed, "cannot set up TLS for the Syncplay server: \(error)")
            }
            // An address has no name to verify or send (SNI); the certificate must still be valid.
            let name: String? = IPAddressBytes(text: settings.host) == nil ? settings.host : nil
            let channel = channel
            try send(.step {
                try await channel.eventLoop.submit {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: name), position: .first)
                }.get()
            })
            startedTLS = true
        }

        /// Why the connection ended, in a person's words.
        private func describe(_ error: (any Error)?) -> CowatchError {
            guard let error else { return CowatchError(.ioError, "the Syncplay server at \(authority) closed the connection") }
            if let error = error as? CowatchError { return error }
            let text = String(describing: error)
            if startedTLS, error is NIOSSLError || text.contains("CERTIFICATE_VERIFY_FAILED") {
                if text.contains("CERTIFICATE_VERIFY_FAILED") || text.contains("certificate verify failed") {
                    return CowatchError(
                        .certificateMismatch,
                        "the Syncplay server at \(authority) has a certificate that is not valid for \(settings.host) or not signed by an authority this machine trusts (--syncplay-ca-file adds one): not connecting")
                }
                return CowatchError(.tlsFailed, "the TLS handshake with the Syncplay server at \(authority) failed: \(text)")
            }
            return CowatchError(.ioError, "the connection to the Syncplay server at \(authority) failed: \(text)")
        }
    }
}
