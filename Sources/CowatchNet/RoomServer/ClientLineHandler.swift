import CowatchCore
import NIOCore

/// What one read from a room connection carried, decoded, for the server's hub.
enum ClientLine: Sendable {
    case message(ClientMessage)
    /// A line that is not a valid client message: the connection is refused with this error.
    case invalid(CowatchError)
    /// A line over `wireMaxLineBytes` (the rest of it is discarded).
    case tooLong
    /// Bytes of a transfer or stream connection after its `transfer`, `stream` or `stream_serve`
    /// line, passed through untouched (an empty one right behind the line: bytes came before the
    /// server said to send them).
    case raw(ByteBuffer)
}

/// The first stop of a room connection's lines, on its event loop: frames and decodes them there
/// (in parallel across the event loop's threads, not inside the hub's single actor), answers
/// clock probes on the spot, passes on only every other drift report (`ReportGate`), and hands
/// everything else up as one batch per read.
///
/// A `time_request` is answered here with `t2` taken when the bytes came off the socket and `t3`
/// just before the reply is written: the rooms' work never sits between them, so a busy server
/// does not bias its participants' clock estimates. Probes answered here have their own budget
/// (the server's flood rate); beyond it they go up to the hub like any message, where the
/// sequencer's own budget applies (a probe flood is cut off there as before); reports dropped here
/// spend the same budget. Probes answered here do not count as signs of life: a peer that only
/// probes is closed by the idle timeout.
///
/// Threading: a channel handler; its channel's event loop only.
final class ClientLineHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = [ClientLine]
    typealias OutboundOut = ByteBuffer

    private var framer = LineFramer(maxLineBytes: wireMaxLineBytes)
    /// After a `transfer` line the rest of the connection is the attachment's bytes; after a
    /// `stream` or `stream_serve` line, a film stream's frames (relayed, never decoded here).
    private var passThrough = false
    private let outbox: ConnectionOutbox
    private let burst: Double
    private let rate: Double
    private var tokens: Double
    private var refilledAt: Double
    /// Thins the once-a-second reports to what participant lists can show (`ReportGate`).
    private var reports = ReportGate()

    /// The room's reference clock: stamps arrivals and answers clock probes.
    private let clock: any MonotonicClock

    init(outbox: ConnectionOutbox, floodBurst: Double, floodRate: Double, clock: any MonotonicClock) {
        self.clock = clock
        self.outbox = outbox
        burst = floodBurst
        rate = floodRate
        tokens = floodBurst
        refilledAt = clock.now()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let received = clock.now()
        let chunk = unwrapInboundIn(data)
        guard !passThrough else {
            context.fireChannelRead(wrapInboundOut([.raw(chunk)]))
            return
        }
        var batch: [ClientLine] = []
        let items = chunk.withUnsafeReadableBytes { framer.feed($0) }
        for (index, item) in items.enumerated() {
            switch item {
            case .tooLong:
                batch.append(.tooLong)
            case .line(let line):
                do {
                    let message = try ClientMessage.decode(line: line)
                    // A peer that does not read gets its replies through the outbox instead,
                    // whose bounds drop it.
                    if case .timeRequest(let id, let t1) = message, context.channel.isWritable, takeToken(now: received) {
                        reply(id: id, t1: t1, t2: received, context: context)
                    } else if case .report = message, !reports.pass(at: received), takeToken(now: received) {
                        // Dropped: the next one carries newer figures. Past the flood budget they go
                        // up like any message, so a flood of reports is still cut off there.
                    } else {
                        batch.append(.message(message))
                    }
                    if Self.handsOver(message) {
                        passThrough = true
                        if index < items.count - 1 || framer.pendingByteCount > 0 { batch.append(.raw(ByteBuffer())) }
                        context.fireChannelRead(wrapInboundOut(batch))
                        return
                    }
                } catch {
                    batch.append(.invalid(error))
                }
            }
        }
        if !batch.isEmpty { context.fireChannelRead(wrapInboundOut(batch)) }
    }

    /// Whether raw bytes follow `message` on its connection.
    private static func handsOver(_ message: ClientMessage) -> Bool {
        switch message {
        case .transfer, .stream, .streamServe: true
        default: false
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        outbox.writabilityChanged()
        context.fireChannelWritabilityChanged()
    }

    private func reply(id: Int, t1: Double, t2: Double, context: ChannelHandlerContext) {
        let line = ServerMessage.timeReply(id: id, t1: t1, t2: t2, t3: clock.now()).encoded()
        var buffer = context.channel.allocator.buffer(capacity: line.count)
        buffer.writeBytes(line)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    private func takeToken(now: Double) -> Bool {
        tokens = min(burst, tokens + max(0, now - refilledAt) * rate)
        refilledAt = now
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
