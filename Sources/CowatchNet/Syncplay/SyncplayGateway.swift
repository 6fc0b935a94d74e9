import CowatchCore
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle

/// Takes stock Syncplay clients into Cowatch rooms (`cowatch-server --syncplay-listen`): a
/// listener for Syncplay's protocol beside the room server. Each client gets a `SyncplayGuest`
/// and, once it said which room, a room connection of its own to the room server (TLS, pinned to
/// the server's own key), so the room treats it as any participant: admission, roles, budgets.
///
/// Bounds: `maxGuests` at once, `maxGuestsPerAddress` from one address; a client has
/// `helloTimeout` to say hello; a line longer than Syncplay's 16 KiB closes it; every queue is
/// bounded; a client that stops reading is closed once `writeQueueLimit` lines wait for it or the
/// oldest has waited `writeTimeout` (its task never waits on its socket); one that sends faster
/// than it is served is slowed (its reader waits, its lines stay in its socket).
///
/// Threading: a `Service`; one task per client owns its guest. Errors: `run` throws what binding
/// the port throws (`ListenError`).
public struct SyncplayGateway: Service {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        /// Where the room server listens (127.0.0.1 and its port) and its key.
        public var roomPort: @Sendable () async -> Int?
        public var roomKey: CertificateFingerprint?
        public var guest: SyncplayGuest.Configuration
        public var maxGuests = 256
        public var maxGuestsPerAddress = 8
        public var helloTimeout = 10.0
        /// Lines that may wait for a client that does not read, and how long (seconds) the oldest may.
        public var writeQueueLimit = 256
        public var writeTimeout = 15.0
        /// TLS for the clients that ask (STARTTLS), with a certificate they accept (one an
        /// authority signed: `--tls-cert`); nil: STARTTLS is answered "false". Set `guest.tls` with it.
        public var tls: NIOSSLContext?
        /// The verifier (salt and scrypt key) the room server keeps for a room, read in-process
        /// from its own state, for the rooms with a secret `guest.secretRooms` lets Syncplay
        /// clients into; nil: none is looked up (such rooms turn them away). Never logged.
        public var roomVerifier: (@Sendable (String) async -> RoomVerifier?)?

        public init(
            host: String, port: Int, roomPort: @escaping @Sendable () async -> Int?, roomKey: CertificateFingerprint?,
            guest: SyncplayGuest.Configuration = .init()
        ) {
            self.host = host
            self.port = port
            self.roomPort = roomPort
            self.roomKey = roomKey
            self.guest = guest
        }
    }

    /// The kernel's send buffer for each Syncplay client.
    static let sendBufferBytes = 65_536

    let configuration: Configuration
    let logger: Logger
    let clock: any MonotonicClock
    let onBound: (@Sendable (String, Int) -> Void)?

    public init(
        configuration: Configuration, logger: Logger, clock: any MonotonicClock = SystemClock(),
        onBound: (@Sendable (String, Int) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.logger = logger
        self.clock = clock
        self.onBound = onBound
    }

    public func run() async throws {
        // After the room server: its lines come first on standard output, where scripts read them.
        _ = await configuration.roomPort()
        let server: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>
        do {
            server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.backlog, value: 64)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                // A Syncplay client needs a few lines a second: a bounded kernel buffer each (not
                // megabytes, autotuned), so 256 clients cost little and one that stops reading
                // shows it soon (`writeTimeout`).
                .childChannelOption(.socketOption(.so_sndbuf), value: SyncplayGateway.sendBufferBytes)
                .bind(host: configuration.host, port: configuration.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw ListenError.describe(error, host: configuration.host, port: configuration.port)
        }
        onBound?(configuration.host, server.channel.localAddress?.port ?? configuration.port)
        let counts = NIOLockedValueBox([String: Int]())
        // A Syncplay client proves nothing but its address: a reconnect from the same address
        // under the same name gets its session token back (its name stays its own).
        let tokens = NIOLockedValueBox([String: String]())
        try await withShutdownClosing(server.channel) {
            try await withThrowingDiscardingTaskGroup { group in
                try await server.executeThenClose { inbound in
                    for try await connection in inbound {
                        let address = connection.channel.remoteAddress?.ipAddress ?? "unknown"
                        let admitted = counts.withLockedValue { counts -> Bool in
                            let total = counts.values.reduce(0, +)
                            guard total < configuration.maxGuests, counts[address, default: 0] < configuration.maxGuestsPerAddress else { return false }
                            counts[address, default: 0] += 1
                            return true
                        }
                        guard admitted else {
                            group.addTask { await Self.turnAway(connection) }
                            continue
                        }
                        group.addTask {
                            await SyncplayGuestConnection(configuration: configuration, logger: logger, clock: clock, tokens: tokens, address: address)
                                .serve(connection)
                            counts.withLockedValue { counts in
                                counts[address, default: 1] -= 1
                                if counts[address] == 0 { counts[address] = nil }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Too many Syncplay clients: one line in Syncplay's words, then closed.
    private static func turnAway(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        try? await connection.executeThenClose { _, outbound in
            try await outbound.write(ByteBuffer(bytes: SyncplayCodec.encode(.error("This Cowatch server takes no more Syncplay clients now"))))
        }
    }
}

/// One Syncplay client: its guest machine, its room connection, and the events between them.
struct SyncplayGuestConnection {
    let configuration: SyncplayGateway.Configuration
    let logger: Logger
    let clock: any MonotonicClock
    let tokens: NIOLockedValueBox<[String: String]>
    let address: String
    /// Tokens kept at most (the oldest are not told apart: the map is cleared when full).
    static let tokenLimit = 4096

    enum Event: Sendable {
        case line([UInt8])
        case tooLong
        case clientClosed
        case roomUp(RoomConnection.Send, fingerprint: String)
        case room(ServerMessage)
        case roomClosed(String)
        /// The verifier the room server keeps for the guest's room (`lookUpVerifier`).
        case verifier(RoomVerifier?)
        case tick
    }

    static let queueLimit = 1024
    /// Lines of the client that may wait for the guest (the rest of the queue is for the room's
    /// messages and the ticks).
    static let lineQueueLimit = 256

    func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        try? await connection.executeThenClose { inbound, outbound -> Void in
            let (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingOldest(Self.queueLimit))
            let writer = PeerWriter(limit: configuration.writeQueueLimit)
            await withTaskGroup(of: Void.self) { group -> Void in
                group.addTask { await writer.run(outbound) }
                // A client that sends faster than it is served is slowed, not dropped: past
                // `lineQueueLimit` lines waiting, the reader waits (and so reads nothing more from
                // its socket, which then fills up to the client).
                let waitingLines = NIOLockedValueBox(0)
                group.addTask {
                    let end = await SyncplayLineReader.read(inbound) { line in
                        while waitingLines.withLockedValue({ $0 }) >= Self.lineQueueLimit {
                            guard (try? await clock.sleep(seconds: 0.005)) != nil else { return false }
                        }
                        waitingLines.withLockedValue { $0 += 1 }
                        if case .dropped = continuation.yield(.line(line)) { return false }
                        return true
                    }
                    switch end {
                    case .tooLong: continuation.yield(.tooLong)
                    case .closed, .overflow: continuation.yield(.clientClosed)
                    }
                }
                group.addTask {
                    while (try? await clock.sleep(seconds: 0.25)) != nil {
                        continuation.yield(.tick)
                    }
                }
                var guest = SyncplayGuest(configuration: configuration.guest)
                var room: RoomConnection.Send?
                let started = clock.now()
                var closing: CowatchError?
                func leave(_ why: CowatchError) {
                    logger.debug("syncplay guest left", metadata: ["cowatch.syncplay.reason": "\(why.message)"])
                    room?(.bye)
                }
                _ = guest.connected(now: started)
                for await event in events {
                    let now = clock.now()
                    var actions: [SyncplayGuest.Action] = []
                    switch event {
                    case .line(let line):
                        waitingLines.withLockedValue { $0 -= 1 }
                        do {
                            let commands = try SyncplayCodec.decode(line: line)
                            logger.trace("syncplay client line", metadata: ["cowatch.syncplay.line": "\(commands)"])
                            actions = guest.received(commands, now: now)
                        } catch let error as CowatchError {
                            actions = guest.receivedBadLine(error)
                        } catch {
                            actions = guest.receivedBadLine(CowatchError(.protocolViolation, "\(error)"))
                        }
                    case .tooLong:
                        actions = guest.receivedBadLine(CowatchError(.protocolViolation, "a line longer than \(SyncplayCodec.maxLineBytes) bytes"))
                    case .clientClosed:
                        closing = CowatchError(.ioError, "the Syncplay client left")
                    case .roomUp(let send, let fingerprint):
                        room = send
                        guest.nonce = RoomSecret.nonce()
                        guest.serverFingerprint = fingerprint
                        let key = "\(address)|\(guest.name ?? "")|\(guest.room ?? "")"
                        guest.token = tokens.withLockedValue { $0[key] }
                        actions = guest.roomConnected(now: now)
                    case .room(let message):
                        actions = guest.fromRoom(message, now: now)
                    case .roomClosed(let why):
                        actions = [.syncplay([.error("The Cowatch room closed the connection: \(why)")]), .close(CowatchError(.ioError, why))]
                    case .verifier(let verifier):
                        actions = guest.storedVerifier(verifier, now: now)
                    case .tick:
                        if writer.waited(now: now) > configuration.writeTimeout {
                            closing = CowatchError(.timeout, "the Syncplay client read nothing for \(Int(configuration.writeTimeout)) s")
                        } else if guest.name == nil, now - started > configuration.helloTimeout {
                            actions = [.close(CowatchError(.timeout, "no Syncplay hello within \(Int(configuration.helloTimeout)) s"))]
                        } else {
                            actions = guest.tick(now: now)
                        }
                    }
                    for action in actions {
                        switch action {
                        case .syncplay([.tls(.accepted)]):
                            // Said with the switch to TLS, below: one step on the event loop.
                            break
                        case .syncplay(let commands):
                            switch writer.enqueue(.bytes(ByteBuffer(bytes: SyncplayCodec.encode(commands))), now: now) {
                            case .queued: break
                            case .full: closing = CowatchError(.flooding, "the Syncplay client does not read what it is sent")
                            case .failed: closing = CowatchError(.ioError, "cannot write to the Syncplay client")
                            }
                        case .startTLS:
                            guard let tls = configuration.tls else {
                                closing = CowatchError(.tlsFailed, "TLS for Syncplay clients is not offered")
                                break
                            }
                            // "true" goes out in clear, and TLS is in front of the pipeline before the
                            // next read: in one task on the event loop, so the client's handshake
                            // (which follows our "true") never reaches the line reader.
                            let channel = connection.channel
                            let yes = ByteBuffer(bytes: SyncplayCodec.encode([.tls(.accepted)]))
                            let step = writer.enqueue(.step {
                                try await channel.eventLoop.submit {
                                    channel.writeAndFlush(yes, promise: nil)
                                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls), position: .first)
                                }.get()
                            }, now: now)
                            if step != .queued { closing = CowatchError(.ioError, "cannot start TLS with the Syncplay client") }
                        case .connectRoom(let name):
                            group.addTask { await self.roomLink(room: name, events: continuation) }
                        case .cowatch(let message):
                            room?(message)
                        case .close(let error):
                            closing = error
                        case .lookUpVerifier(let room):
                            // Off the guest's task: the room server's actor answers in its turn.
                            let lookUp = configuration.roomVerifier
                            group.addTask { continuation.yield(.verifier(await lookUp?(room))) }
                        case .keepToken(let token):
                            let key = "\(address)|\(guest.name ?? "")|\(guest.room ?? "")"
                            tokens.withLockedValue { tokens in
                                if tokens.count >= Self.tokenLimit { tokens.removeAll() }
                                tokens[key] = token
                            }
                        }
                        if closing != nil { break }
                    }
                    if let closing {
                        leave(closing)
                        break
                    }
                }
                writer.finish()
                await writer.drained(within: 1, clock: clock)
                continuation.finish()
                group.cancelAll()
            }
        }
    }

    /// The guest's connection to the room server, until either side ends it.
    private func roomLink(room: String, events: AsyncStream<Event>.Continuation) async {
        guard let port = await configuration.roomPort() else {
            events.yield(.roomClosed("the room server is not listening"))
            return
        }
        let security: RoomConnection.Security = configuration.roomKey.map { .tls(expected: $0, knownHosts: nil) } ?? .plaintext
        do {
            try await RoomConnection.connect(host: "127.0.0.1", port: port, security: security, logger: logger, now: { clock.now() }) {
                inbound, send, fingerprint in
                events.yield(.roomUp(send, fingerprint: fingerprint))
                for try await arrival in inbound { events.yield(.room(arrival.message)) }
            }
            events.yield(.roomClosed("the room server closed the connection"))
        } catch {
            events.yield(.roomClosed((error as? CowatchError)?.message ?? "\(error)"))
        }
    }
}
