import CowatchCore
import Foundation
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
/// decoded on its event loop (`ClientLineHandler`, which also answers clock probes there) and
/// go to the sequencer in arrival order, a read's worth at a time; its outputs are encoded once
/// per broadcast and go out through one bounded outbox per connection, written on the
/// connection's event loop, so a peer that stops reading is dropped instead of stalling the
/// room. A peer that sends garbage, an over-long line or floods is disconnected alone. The
/// journal's transfers and the film streams' connections hand their raw bytes, after their first
/// line, to `ServerTransfer` and `StreamRelay`, off the rooms' actor. With a
/// `state` directory, the token key and the rooms' secrets and roles survive a restart (saved
/// at most once a second, and on shutdown).
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
    /// The SCHED_FIFO priority the event loops were put under (`RealtimeScheduling`), if any: the
    /// rooms' timer then watches that they are not starved (`RealtimeGuard`).
    private let realtimePriority: Int32?
    /// The room's reference clock: every stamp and deadline of the rooms (a manual one in tests).
    private let clock: any MonotonicClock
    /// The film streams' relay waits (shorter in tests).
    var relayLimits = StreamRelay.Limits()
    /// The rooms' secret verifiers, read in-process while the server runs (`cowatch-server
    /// --syncplay-secret-rooms`).
    public let verifiers = RoomVerifiers()

    /// - Parameter identity: the TLS certificate and key; nil serves plaintext (`--no-tls`).
    /// - Parameter cluster: share rooms with other servers through Redis (see `ClusterGate`).
    public init(
        host: String, port: Int, configuration: RoomSequencer.Configuration = .init(), state: RoomServerState? = nil,
        identity: ServerIdentity?, cluster: ClusterConfiguration? = nil, realtimePriority: Int32? = nil, logger: Logger,
        onBound: (@Sendable (String, Int) -> Void)? = nil, clock: any MonotonicClock = SystemClock()
    ) {
        self.clock = clock
        self.cluster = cluster
        self.realtimePriority = realtimePriority
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
        let server: NIOAsyncChannel<RoomHub.Accepted?, Never>
        let admission = configuration.admission
        // Room connections are capped per address by the admission, with a clear line; every
        // socket (transfers and streams too) at twice that, before any TLS work.
        let gate = AcceptGate(perAddress: admission.maxConnectionsPerAddress * 2)
        do {
            server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
                .bind(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        guard try gate.admit(channel) else { return nil }
                        if let tls { try PinnedTLS.addServerHandlers(to: channel, context: tls) }
                        // Lines are decoded, clock probes answered and replies written on the event loop.
                        let outbox = ConnectionOutbox(channel: channel)
                        try channel.pipeline.syncOperations.addHandler(
                            ClientLineHandler(
                                outbox: outbox, floodBurst: admission.floodBurst, floodRate: admission.floodRate, clock: clock))
                        return RoomHub.Accepted(
                            connection: AcceptedChannel(try RoomHub.Connection(wrappingChannelSynchronously: channel)),
                            outbox: outbox)
                    }
                }
        } catch {
            throw ListenError.describe(error, host: host, port: port)
        }
        let boundPort = server.channel.localAddress?.port ?? port
        logger.debug("room server listening", metadata: ["cowatch.room.address": "\(host):\(boundPort)"])
        onBound?(host, boundPort)

        var configuration = configuration
        configuration.certificateFingerprint = identity?.fingerprint.text ?? ""
        var records: [String: RoomSequencer.RoomRecord] = [:]
        if let state {
            configuration.tokenKey = try state.tokenKey()
            records = try state.loadRecords(now: clock.now(), wallNow: Date().timeIntervalSince1970)
        }
        let sequencer = RoomSequencer(configuration: configuration, records: records, now: clock.now())
        // Attachments live with their rooms: a fresh store each run.
        let store = try AttachmentStore(stateDirectory: state?.directory)
        defer { if state == nil { store.removeAll() } }
        let clusterGate = cluster.map { ClusterGate(configuration: $0, logger: logger) }
        let hub = RoomHub(
            sequencer: sequencer, state: state, store: store, cluster: clusterGate,
            realtime: realtimePriority.map { ($0, MultiThreadedEventLoopGroup.singleton) }, clock: clock,
            relayLimits: relayLimits, logger: logger)
        verifiers.attach(hub)
        defer { verifiers.attach(nil) }
        try await withShutdownClosing(server.channel) {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { try? await hub.runTimers() }
                if let clusterGate { group.addTask { await clusterGate.run(hub: hub) } }
                try await server.executeThenClose { inbound in
                    for try await connection in inbound {
                        guard let connection else { continue }  // refused by the gate, closing
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
    /// A connection as the hub sees it: decoded lines in (a batch per read); encoded lines go
    /// out through its outbox, which writes on the channel's event loop.
    typealias Connection = NIOAsyncChannel<[ClientLine], ByteBuffer>

    struct Accepted: Sendable {
        /// Finished even if the accept loop drops it (see `AcceptedChannel`).
        var connection: AcceptedChannel<[ClientLine], ByteBuffer>
        var outbox: ConnectionOutbox
    }

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
    /// The film streams (issue 25): what each stream connection relays, where its two legs
    /// meet, and how long they wait.
    private var streamPlans: [Int: StreamRelay.Plan] = [:]
    private let rendezvous = StreamRendezvous()
    private let relayLimits: StreamRelay.Limits
    /// The rooms' records changed since they were last saved.
    private var recordsChanged = false
    private var nextSave = 0.0
    /// The event loops' real-time priority and group, and the guard that steps them down when the
    /// rooms' work is starved.
    private let realtime: (priority: Int32, loops: any EventLoopGroup)?
    private var realtimeGuard: RealtimeGuard?
    /// The room's reference clock (the server's).
    let clock: any MonotonicClock

    init(
        sequencer: RoomSequencer, state: RoomServerState?, store: AttachmentStore, cluster: ClusterGate? = nil,
        realtime: (priority: Int32, loops: any EventLoopGroup)? = nil, clock: any MonotonicClock = SystemClock(),
        relayLimits: StreamRelay.Limits = .init(), logger: Logger
    ) {
        self.relayLimits = relayLimits
        self.clock = clock
        self.realtime = realtime
        realtimeGuard = realtime.map { _ in RealtimeGuard() }
        self.sequencer = sequencer
        self.cluster = cluster
        self.state = state
        self.store = store
        self.logger = logger
    }

    func serve(_ accepted: Accepted) async {
        guard let connection = accepted.connection.take() else { return }
        nextID += 1
        let id = nextID
        let outbox = accepted.outbox
        outbox.onWritten { [weak self] markers in
            guard let self else { return }
            Task { await self.written(markers, on: id) }
        }
        outgoing[id] = outbox
        channels[id] = connection.channel
        let address = connection.channel.remoteAddress?.ipAddress ?? "unknown"
        perform(sequencer.connected(id, address: address, now: clock.now()))
        logger.trace("room connection", metadata: ["cowatch.room.connection": "\(id)"])
        do {
            try await connection.executeThenClose { inbound, outbound in
                // Runs on the hub (executeThenClose inherits its isolation): one resume per read,
                // with every line it carried, decoded.
                var placed = self.cluster == nil
                var batches = inbound.makeAsyncIterator()
                reading: while let lines = try await batches.next() {
                    if placed, !lines.contains(where: Self.isHandover) {
                        if !self.handle(lines, from: id) { break reading }
                        continue
                    }
                    // In a cluster, lines pass the gate one by one until the hello is placed; a
                    // transfer or stream line hands the rest of the connection to the transfer or
                    // the relay.
                    for (index, line) in lines.enumerated() {
                        if !placed, let cluster = self.cluster {
                            guard case .message(let message) = line else {
                                if !self.handle([line], from: id) { break reading }
                                continue
                            }
                            guard let hello = await cluster.admit(message, from: id, hub: self) else { break reading }
                            placed = hello
                        }
                        if !self.handle([line], from: id) { break reading }
                        if let plan = self.takeTransferPlan(id) {
                            // Raw bytes follow its one line, and only once told to send them.
                            guard index == lines.count - 1 else {
                                self.refuseEarlyBytes(id, before: "transfer_ready")
                                break reading
                            }
                            switch await ServerTransfer.run(
                                plan, store: self.store, chunks: &batches, outbound: outbound, channel: connection.channel)
                            {
                            case .uploaded(let verified): self.uploadFinished(id, verified: verified)
                            case .interrupted(let received): self.sequencer.uploadInterrupted(id, received: received)
                            case .downloaded: break
                            }
                            break reading
                        }
                        if let relay = self.takeStreamPlan(id) {
                            guard index == lines.count - 1 else {
                                self.refuseEarlyBytes(id, before: "stream_ready")
                                break reading
                            }
                            let outcome = await StreamRelay.run(
                                relay, rendezvous: self.rendezvous, limits: self.relayLimits, chunks: &batches,
                                channel: connection.channel, logger: self.logger)
                            if outcome == .earlyBytes { self.refuseEarlyBytes(id, before: "stream_ready") }
                            break reading
                        }
                    }
                }
                // The peer left, or was refused or dropped: what is queued (such as the error) is
                // written, then the channel closes (bounded: a peer that reads nothing is not waited for).
                self.finishOutgoing(id)
                await outbox.drained()
            }
        } catch {
            logger.trace("room connection ended", metadata: ["cowatch.room.error": "\(error)"])
        }
        perform(sequencer.disconnected(id, now: clock.now()))
        outgoing.removeValue(forKey: id)?.finish()
        channels[id] = nil
        transferPlans[id] = nil
        streamPlans[id] = nil
        acknowledge(deliveries.ended(id))
    }

    /// A write that carried these markers completed.
    private func written(_ tokens: [Int], on id: Int) {
        acknowledge(tokens.compactMap { deliveries.written($0, to: id) })
    }

    /// The server is shutting down (see `isStopping`).
    func stopping() {
        isStopping = true
        // Where each group is, for the next run.
        if state != nil { saveRecords() }
    }

    private func acknowledge(_ acks: [(RoomSequencer.ConnectionID, ServerMessage)]) {
        guard !isStopping else { return }
        perform(acks.map { .sendMessage($0.0, $0.1, reliable: true) })
    }

    /// The lines of one read, in order. Returns false when the connection must stop reading (it
    /// was closed).
    private func handle(_ lines: [ClientLine], from id: Int) -> Bool {
        let now = clock.now()
        for line in lines {
            guard outgoing[id] != nil else { return false }
            switch line {
            case .message(let message):
                if cluster != nil, Self.isStreamLine(message) {
                    perform(StreamRelay.refusedInCluster(id))
                    continue
                }
                perform(sequencer.received(message, from: id, now: now))
            case .invalid(let error):
                perform(sequencer.rejected(id, error, now: now))
            case .tooLong:
                perform(sequencer.rejected(id, CowatchError(.protocolViolation, "line longer than \(wireMaxLineBytes) bytes"), now: now))
            case .raw:
                // Only after an accepted transfer or stream line, which the connection loop hands over.
                perform(sequencer.rejected(id, CowatchError(.protocolViolation, "bytes where a line was expected"), now: now))
            }
        }
        return outgoing[id] != nil
    }

    /// A line after which the connection carries raw bytes (a transfer's or a stream's).
    private static func isHandover(_ line: ClientLine) -> Bool {
        guard case .message(let message) = line else { return false }
        if case .transfer = message { return true }
        return isStreamLine(message)
    }

    private static func isStreamLine(_ message: ClientMessage) -> Bool {
        switch message {
        case .stream, .streamServe: true
        default: false
        }
    }

    private func takeTransferPlan(_ id: Int) -> ServerTransfer.Plan? {
        transferPlans.removeValue(forKey: id)
    }

    private func takeStreamPlan(_ id: Int) -> StreamRelay.Plan? {
        streamPlans.removeValue(forKey: id)
    }

    /// A transfer or stream connection left the handshake's admission, so this is said here.
    private func refuseEarlyBytes(_ id: Int, before ready: String) {
        perform([.send(id, .error(code: CowatchError.Code.protocolViolation.rawValue, message: "bytes before \(ready)")), .close(id)])
    }

    private func uploadFinished(_ id: Int, verified: Bool) {
        perform(sequencer.uploadFinished(id, verified: verified, now: clock.now()))
    }

    private func finishOutgoing(_ id: Int) {
        _ = outgoing[id]?.push(nil, lane: .sync)
        outgoing.removeValue(forKey: id)?.finish()
    }

    func perform(_ outputs: [RoomSequencer.Output]) {
        // A broadcast comes as one output per member with the same message, one after another:
        // encoded once, and the same buffer queued for each.
        var lastMessage: ServerMessage?
        var lastLine = ByteBuffer()
        for output in outputs {
            switch output {
            case .send(let id, let message), .sendMessage(let id, let message, _):
                guard let outbox = outgoing[id] else { continue }
                var lane = ConnectionOutbox.Lane.sync
                if case .sendMessage(_, _, let reliable) = output { lane = reliable ? .message : .droppable }
                if message != lastMessage {
                    lastMessage = message
                    lastLine = ByteBuffer(bytes: message.encoded())
                }
                if outbox.push(lastLine, lane: lane) == .full {
                    logger.debug("dropping a peer that does not read", metadata: ["cowatch.room.connection": "\(id)"])
                    perform(sequencer.disconnected(id, now: clock.now()))
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
                // Written by the timer at most once a second: a thousand rooms created in a burst
                // would otherwise rewrite the whole file a thousand times.
                recordsChanged = true
            case .receiveUpload(let id, let content, let size, let resume):
                transferPlans[id] = .upload(id: content, size: size, resume: resume)
            case .sendDownload(let id, let content, let size, let offset):
                transferPlans[id] = .download(id: content, size: size, offset: offset)
            case .deleteStored(let content):
                store.delete(content)
            case .relayStream(let id, let stream, let size):
                streamPlans[id] = StreamRelay.Plan(stream: stream, size: size)
            }
        }
    }

    private func saveRecords() {
        recordsChanged = false
        guard let state else { return }
        do {
            let now = clock.now()
            try state.saveRecords(sequencer.recordsForSaving(now: now), now: now, wallNow: Date().timeIntervalSince1970)
            sequencer.markTimelinesSaved()
        } catch {
            logger.warning("cannot save the rooms", metadata: ["cowatch.room.error": "\(error)"])
        }
    }

    /// Runs the sequencer's deadlines (seek holds, participant lists).
    func runTimers() async throws {
        while !Task.isCancelled {
            let now = clock.now()
            // 5 ms at least: deadlines are holds and lists, and waking more often only costs.
            let wait = min(0.1, max(0.005, (sequencer.nextDeadline() ?? now + 0.1) - now))
            try await clock.sleep(until: now + wait)
            let tickAt = clock.now()
            let lateness = tickAt - now - wait
            if let action = realtimeGuard?.woke(lateness: lateness, at: tickAt) { await apply(action, lateness: lateness) }
            perform(sequencer.tick(now: tickAt))
            // Roles and secrets change the records; a moving timeline is saved once a second too.
            if recordsChanged || sequencer.timelinesChanged, tickAt >= nextSave {
                nextSave = tickAt + 1
                saveRecords()
            }
        }
    }
}

extension RoomHub {
    /// Carries out a `RealtimeGuard` decision on the event loops.
    fileprivate func apply(_ action: RealtimeGuard.Action, lateness: Double) async {
        guard let realtime else { return }
        let metadata: Logger.Metadata = ["cowatch.room.lateness_ms": "\(Int(lateness * 1000))"]
        do {
            switch action {
            case .stepDown:
                // A warning, not debug: the operator asked for real time and is not getting it.
                logger.warning("event loops leave real-time scheduling: the rooms' work was starved", metadata: metadata)
                try await RealtimeScheduling.apply(nil, on: realtime.loops)
            case .stepUp:
                logger.notice("event loops back under real-time scheduling", metadata: metadata)
                try await RealtimeScheduling.apply(realtime.priority, on: realtime.loops)
            }
        } catch {
            logger.warning("real-time scheduling unchanged: \(error)")
        }
    }
}


/// ServiceLifecycle logs each service's description at debug level when the group starts: the
/// default one would print the configuration, the token key and the host's reserved-room token
/// among it. Only where the server listens is said.
extension RoomServer: CustomStringConvertible {
    public var description: String { "RoomServer(\(Invite.authority(host: host, port: port)))" }
}
