import CowatchCore
import Logging
import NIOCore

/// The server's relay of a film stream (issue 25), once the sequencer accepted a connection's
/// `stream` or `stream_serve` line (`Output.relayStream`): the connection meets the other one
/// of the same stream number (`StreamRendezvous`), both are told `stream_ready`, and each one's
/// bytes go to the other untouched, until either ends — then both close.
///
/// Memory stays bounded whatever the two ends' speeds: a leg reads its connection only as fast
/// as its partner's socket takes the bytes (`WindowedWriter`: at most a few reads in flight,
/// each awaited), so a slow receiver slows the sharer through TCP, and nothing is kept on disk.
/// A leg waits at most `Limits.pairing` seconds for its partner (the sequencer's serve deadline
/// closes a waiting receiver sooner); bytes before `stream_ready` are a protocol violation; no
/// byte either way for `Limits.idle` seconds closes both (receivers ping every 10 s).
///
/// Threading: `run` is called from the hub's connection loop; a nonisolated async function, so
/// the bytes never pass through the rooms' actor. The TLS records are sealed and opened on the
/// connections' event loops.
enum StreamRelay {
    /// What the sequencer said of the connection.
    struct Plan: Sendable, Equatable {
        var stream: Int
        var size: Int
    }

    /// The relay's waits; shorter ones in tests.
    struct Limits: Sendable {
        /// Seconds a leg waits for its partner: the sequencer gives a sharer 10 s to come
        /// (`StreamBook.serveDeadline`), plus time for its line to be handled.
        var pairing = 15.0
        /// Seconds without a byte either way before both legs are closed.
        var idle = 60.0
    }

    enum Outcome: Equatable {
        case ended
        /// Bytes came before `stream_ready`: the hub says so and closes the connection.
        case earlyBytes
    }

    /// The refusal of stream lines in a cluster: the two legs of a stream could reach
    /// different servers, which share no relay.
    static func refusedInCluster(_ id: Int) -> [RoomSequencer.Output] {
        [.send(id, .error(code: CowatchError.Code.unsupported.rawValue, message: "streams need both members on one server")), .close(id)]
    }

    /// Relays connection `channel` (whose raw bytes `chunks` yields) as one leg of `plan`'s
    /// stream, until either leg ends.
    static func run(
        _ plan: Plan, rendezvous: StreamRendezvous, limits: Limits,
        chunks: inout NIOAsyncChannelInboundStream<[ClientLine]>.AsyncIterator, channel: any Channel, logger: Logger
    ) async -> Outcome {
        var logger = logger
        logger[metadataKey: "cowatch.stream.number"] = "\(plan.stream)"
        let leg: StreamLeg
        switch rendezvous.join(plan.stream, channel: channel, now: SystemClock.monotonicSeconds(), pairingLimit: limits.pairing) {
        case .partnerGone:
            logger.debug("stream leg came after its partner left")
            channel.close(promise: nil)
            return .ended
        case .waiting(let first):
            leg = first
            logger.trace("stream leg waits for its partner")
            // Bounded: a partner that never comes closes this leg (its loop below then ends).
            channel.eventLoop.scheduleTask(in: .milliseconds(Int64(limits.pairing * 1000))) {
                if !first.link.isPaired { channel.close(promise: nil) }
            }
        case .paired(let second):
            leg = second
            link(second, plan: plan, limits: limits, on: channel.eventLoop)
            logger.debug("stream relay linked", metadata: ["cowatch.stream.size": "\(plan.size)"])
        }
        let (outcome, relayed) = await pump(leg, chunks: &chunks, logger: logger)
        rendezvous.leave(leg, now: SystemClock.monotonicSeconds())
        logger.debug("stream leg ended", metadata: ["cowatch.stream.relayed": "\(relayed)", "cowatch.stream.outcome": "\(outcome)"])
        return outcome
    }

    /// Both legs are there: each is told `stream_ready`, and an idle watchdog starts.
    private static func link(_ leg: StreamLeg, plan: Plan, limits: Limits, on loop: any EventLoop) {
        let ready = ServerMessage.streamReady(size: plan.size).encoded()
        for side in 0..<2 { leg.link.channel(side)?.writeAndFlush(ByteBuffer(bytes: ready), promise: nil) }
        let link = leg.link
        let check = TimeAmount.milliseconds(Int64(min(1, limits.idle / 4) * 1000))
        link.watch(
            loop.scheduleRepeatedTask(initialDelay: check, delay: check) { task in
                guard link.idle(now: SystemClock.monotonicSeconds()) > limits.idle else { return }
                task.cancel()
                link.closeBoth()
            })
    }

    /// This leg's inbound bytes to its partner, with back-pressure. Returns how it ended and the
    /// bytes relayed.
    private static func pump(
        _ leg: StreamLeg, chunks: inout NIOAsyncChannelInboundStream<[ClientLine]>.AsyncIterator, logger: Logger
    ) async -> (Outcome, Int) {
        var writer: WindowedWriter?
        var relayed = 0
        do {
            while let batch = try await chunks.next() {
                for item in batch {
                    // After the stream line, `ClientLineHandler` passes everything through raw.
                    guard case .raw(let bytes) = item, bytes.readableBytes > 0 else { continue }
                    if writer == nil {
                        // Before its partner came, this leg was told nothing: it must not send.
                        guard let partner = leg.partner() else { return (.earlyBytes, relayed) }
                        writer = WindowedWriter(channel: partner)
                    }
                    try await writer?.write(bytes)
                    relayed += bytes.readableBytes
                    leg.link.touch(now: SystemClock.monotonicSeconds())
                }
            }
            try await writer?.drain()
        } catch {
            logger.trace("stream leg broke", metadata: ["cowatch.stream.error": "\(error)"])
        }
        return (.ended, relayed)
    }
}
