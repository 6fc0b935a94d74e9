import CowatchCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// The room server on TCP: one `RoomSequencer` behind an actor, many connections.
///
/// Used by `cowatch-server` and embedded in `cowatchd --host`. Each connection's lines are
/// decoded here (`WireCodec`) and go to the sequencer in arrival order; its outputs go out
/// through one bounded writer per connection, so a peer that stops reading is dropped instead
/// of stalling the room. A peer that sends garbage, an over-long line or floods is
/// disconnected alone. With a `state` directory, the token key and the rooms' secrets and roles
/// survive a restart.
///
/// Threading: a `Service`; `run()` once. `onBound` reports the actual port (useful with port 0).
/// Errors: `run()` throws `io-error` when it cannot listen, `invalid-configuration` for a bad
/// state directory.
public struct RoomServer: Service {
    public let host: String
    public let port: Int
    private let configuration: RoomSequencer.Configuration
    private let state: RoomServerState?
    private let identity: ServerIdentity?
    private let logger: Logger
    private let onBound: (@Sendable (String, Int) -> Void)?
    private let cluster: ClusterConfiguration?

    /// - Parameter identity: the TLS certificate and key; nil serves plaintext (`--no-tls`).
    /// - Parameter cluster: share rooms with other servers through Redis (see `ClusterGate`).
    public init(
        host: String, port: Int, configuration: RoomSequencer.Configuration = .init(), state: RoomServerState? = nil,
        identity: ServerIdentity?, cluster: ClusterConfiguration? = nil, logger: Logger, onBound: (@Sendable (String, Int) -> Void)? = nil
    ) {
        self.cluster = cluster
        self.identity = identity
        self.host = host
        self.port = port
        self.configuration = configuration
        self.state = state
        self.logger = logger
        self.onBound = onBound
    }

    public func run() async throws {
        let tls = try identity?.makeServerContext()
        let server: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>
        do {
            server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .bind(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let tls { try PinnedTLS.addServerHandlers(to: channel, context: tls) }
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw CowatchError(.ioError, "cannot listen on \(host):\(port): \(error)")
        }
        let boundPort = server.channel.localAddress?.port ?? port
        logger.debug("room server listening", metadata: ["cowatch.room.address": "\(host):\(boundPort)"])
        onBound?(host, boundPort)

        var configuration = configuration
        configuration.certificateFingerprint = identity?.fingerprint.text ?? ""
        var records: [String: RoomSequencer.RoomRecord] = [:]
        if let state {
            configuration.tokenKey = try state.tokenKey()
            records = try state.loadRecords()
        }
        let sequencer = RoomSequencer(configuration: configuration, records: records, now: monotonicSeconds())
        // Attachments live with their rooms: a fresh store each run.
        let store = try AttachmentStore(stateDirectory: state?.directory)
        defer { if state == nil { store.removeAll() } }
        let gate = cluster.map { ClusterGate(configuration: $0, logger: logger) }
        let hub = RoomHub(sequencer: sequencer, state: state, store: store, cluster: gate, logger: logger)
        try await withShutdownClosing(server.channel) {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { try? await hub.runTimers() }
                if let gate { group.addTask { await gate.run(hub: hub) } }
                try await server.executeThenClose { inbound in
                    for try await connection in inbound {
                        group.addTask { await hub.serve(connection) }
                    }
                }
                await hub.stopping()
                group.cancelAll()
            }
        }
    }
}

/// Owns the sequencer and the connections' outgoing queues.
actor RoomHub {
    var sequencer: RoomSequencer
    private let state: RoomServerState?
    /// In a cluster: places each connection's hello (serve, claim or redirect) before the sequencer sees it.
    let cluster: ClusterGate?
    private let logger: Logger
    private var outgoing: [Int: ConnectionOutbox] = [:]
    /// Each connection's channel, to close it outright when its peer must go (a blocked write or
    /// a peer that never sends would otherwise keep it open).
    private var channels: [Int: any Channel] = [:]
    /// Reliable messages whose acknowledgement waits for their copies' writes.
    private var deliveries = RoomSequencer.DeliveryTracker()
    /// Set when the server shuts down: no more acknowledgements, since the connections end
    /// before their copies are written and the senders must send those messages again.
    private var isStopping = false
    private var nextID = 0
    /// The journal's attachment bytes, and what each transfer connection is to do.
    let store: AttachmentStore
    private var transferPlans: [Int: ServerTransfer.Plan] = [:]

    init(sequencer: RoomSequencer, state: RoomServerState?, store: AttachmentStore, cluster: ClusterGate? = nil, logger: Logger) {
        self.sequencer = sequencer
        self.cluster = cluster
        self.state = state
        self.store = store
        self.logger = logger
    }

    func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        nextID += 1
        let id = nextID
        let outbox = ConnectionOutbox()
        outgoing[id] = outbox
        channels[id] = connection.channel
        let address = connection.channel.remoteAddress?.ipAddress ?? "unknown"
        perform(sequencer.connected(id, address: address, now: monotonicSeconds()))
        logger.trace("room connection", metadata: ["cowatch.room.connection": "\(id)"])
        do {
            try await connection.executeThenClose { inbound, outbound in
                enum Side { case reader, writer }
                try await withThrowingTaskGroup(of: Side.self) { group in
                    group.addTask {
                        // Whatever is queued goes out in one write (one flush), sync lane first.
                        writing: while true {
                            let batch = await outbox.next()
                            if batch.isEmpty { break }
                            var buffer = ByteBuffer()
                            var close = false
                            for message in batch.messages {
                                guard let message else {
                                    close = true
                                    break
                                }
                                buffer.writeBytes(message.encoded())
                            }
                            if buffer.readableBytes > 0 { try await outbound.write(buffer) }
                            if !batch.markers.isEmpty { await self.written(batch.markers, on: id) }
                            if close { break writing }
                        }
                        return .writer
                    }
                    group.addTask {
                        var framer = LineFramer(maxLineBytes: wireMaxLineBytes)
                        var placed = self.cluster == nil
                        var chunks = inbound.makeAsyncIterator()
                        reading: while let chunk = try await chunks.next() {
                            let items = framer.feed(chunk.readableBytesView)
                            for (index, item) in items.enumerated() {
                                switch item {
                                case .line(let line):
                                    if !placed, let cluster = self.cluster {
                                        guard let hello = await cluster.admit(line: line, from: id, hub: self) else { break reading }
                                        placed = hello
                                    }
                                    if await !self.handle(line: line, from: id) { break reading }
                                    if let plan = await self.takeTransferPlan(id) {
                                        // A transfer connection: raw bytes after its one line, and
                                        // only once told to send them.
                                        guard index == items.count - 1, framer.pendingByteCount == 0 else {
                                            await self.refuseEarlyBytes(id)
                                            break reading
                                        }
                                        let verified = await ServerTransfer.run(
                                            plan, store: self.store, chunks: &chunks, outbound: outbound, channel: connection.channel)
                                        if let verified { await self.uploadFinished(id, verified: verified) }
                                        break reading
                                    }
                                case .tooLong:
                                    await self.refuseOverlong(id)
                                    break reading
                                }
                            }
                        }
                        return .reader
                    }
                    // The peer left or was refused (reader ends first): let the writer flush what is
                    // queued, such as the error, then stop. We closed it (writer ends first): stop
                    // reading too, or a peer that never sends would hold the connection open.
                    let first = try await group.next()
                    self.finishOutgoing(id)
                    if first == .writer { group.cancelAll() }
                    _ = try await group.next()
                }
            }
        } catch {
            logger.trace("room connection ended", metadata: ["cowatch.room.error": "\(error)"])
        }
        perform(sequencer.disconnected(id, now: monotonicSeconds()))
        outgoing.removeValue(forKey: id)?.finish()
        channels[id] = nil
        acknowledge(deliveries.ended(id))
    }

    /// A write that carried these markers completed.
    private func written(_ tokens: [Int], on id: Int) {
        acknowledge(tokens.compactMap { deliveries.written($0, to: id) })
    }

    /// The server is shutting down (see `isStopping`).
    func stopping() {
        isStopping = true
    }

    private func acknowledge(_ acks: [(RoomSequencer.ConnectionID, ServerMessage)]) {
        guard !isStopping else { return }
        perform(acks.map { .sendMessage($0.0, $0.1, reliable: true) })
    }

    /// Returns false when the connection must stop reading (it was closed).
    private func handle(line: [UInt8], from id: Int) -> Bool {
        let now = monotonicSeconds()
        do {
            perform(sequencer.received(try ClientMessage.decode(line: line), from: id, now: now))
        } catch {
            perform(sequencer.rejected(id, error, now: now))
        }
        return outgoing[id] != nil
    }

    private func takeTransferPlan(_ id: Int) -> ServerTransfer.Plan? {
        transferPlans.removeValue(forKey: id)
    }

    /// A transfer connection left the handshake's admission, so this is said here.
    private func refuseEarlyBytes(_ id: Int) {
        perform([.send(id, .error(code: CowatchError.Code.protocolViolation.rawValue, message: "bytes before transfer_ready")), .close(id)])
    }

    private func uploadFinished(_ id: Int, verified: Bool) {
        perform(sequencer.uploadFinished(id, verified: verified, now: monotonicSeconds()))
    }

    private func refuseOverlong(_ id: Int) {
        perform(sequencer.rejected(id, CowatchError(.protocolViolation, "line longer than \(wireMaxLineBytes) bytes"), now: monotonicSeconds()))
    }

    private func finishOutgoing(_ id: Int) {
        _ = outgoing[id]?.push(nil, lane: .sync)
        outgoing.removeValue(forKey: id)?.finish()
    }

    func perform(_ outputs: [RoomSequencer.Output]) {
        for output in outputs {
            switch output {
            case .send(let id, let message), .sendMessage(let id, let message, _):
                guard let outbox = outgoing[id] else { continue }
                var lane = ConnectionOutbox.Lane.sync
                if case .sendMessage(_, _, let reliable) = output { lane = reliable ? .message : .droppable }
                if outbox.push(message, lane: lane) == .full {
                    logger.debug("dropping a peer that does not read", metadata: ["cowatch.room.connection": "\(id)"])
                    perform(sequencer.disconnected(id, now: monotonicSeconds()))
                    outgoing.removeValue(forKey: id)?.finish()
                    channels[id]?.close(promise: nil)
                }
            case .acknowledgeWhenWritten(let receipt):
                let (token, due) = deliveries.expect(receipt)
                for recipient in receipt.recipients {
                    // A recipient already gone will report `ended` (or has): it is not named.
                    outgoing[recipient.id]?.pushMarker(token)
                }
                acknowledge(due)
            case .close(let id):
                finishOutgoing(id)
            case .saveRecords:
                saveRecords()
            case .receiveUpload(let id, let content, let size):
                transferPlans[id] = .upload(id: content, size: size)
            case .sendDownload(let id, let content, let size, let offset):
                transferPlans[id] = .download(id: content, size: size, offset: offset)
            case .deleteStored(let content):
                store.delete(content)
            }
        }
    }

    private func saveRecords() {
        guard let state else { return }
        do {
            try state.saveRecords(sequencer.records)
        } catch {
            logger.warning("cannot save the rooms", metadata: ["cowatch.room.error": "\(error)"])
        }
    }

    /// Runs the sequencer's deadlines (seek holds, participant lists).
    func runTimers() async throws {
        while !Task.isCancelled {
            let now = monotonicSeconds()
            let wait = min(0.1, max(0.001, (sequencer.nextDeadline() ?? now + 0.1) - now))
            try await Task.sleep(for: .seconds(wait))
            perform(sequencer.tick(now: monotonicSeconds()))
        }
    }
}

/// Seconds of CLOCK_MONOTONIC: the room's reference clock.
func monotonicSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) * 1e-9
}
