import CowatchClient
import CowatchCore
import Foundation
import NIOCore

/// One simulated participant, behaving on the wire like a daemon's `RoomCoordinator`: hello,
/// auth (re-sent if the room changes under it), a burst of 8 clock probes 50 ms apart, then one
/// probe and one report a second; it answers a hold with `ready`, and the room's actor sends
/// play/pause/seek. It reads the server's lines with a light scanner (`ServerLine`) rather than
/// the full decoder, so the generator stays cheap next to the server it loads.
///
/// Threading: confined to its process's one event loop (all its methods run there).
final class LoadClient: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    enum Phase { case connecting, handshaking, joined, closed }

    let index: Int
    let room: LoadRoom
    let name: String
    let source: String
    private let run: LoadRun
    private var context: ChannelHandlerContext?
    var phase = Phase.connecting
    private var pending = ByteBuffer()
    private var outstanding: [Int: Double] = [:]
    private var nextProbeID = 0
    private var burstLeft = 8
    private var nextProbeAt = 0.0
    private var nextReportAt = 0.0
    private var lastRTT: Double?
    /// The room action this client last timed (one sample per member per action).
    private var timedAction = 0
    private var byeSent = false

    /// Connection attempts so far (a busy server is tried again, as daemons do).
    let attempts: Int

    init(index: Int, room: LoadRoom, name: String, source: String, run: LoadRun, attempts: Int = 1) {
        self.attempts = attempts
        self.index = index
        self.room = room
        self.name = name
        self.source = source
        self.run = run
    }

    func channelActive(context: ChannelHandlerContext) {
        self.context = context
        phase = .handshaking
        let hello = ClientMessage.hello(.init(
            features: WireFeature.all, room: room.name, name: name, client: "cowatch-load", nonce: RoomSecret.nonce(),
            activity: Activity(url: "https://example.invalid/film.mkv", title: "film"), status: .init(ready: true)))
        send(hello.encoded())
    }

    func channelInactive(context: ChannelHandlerContext) {
        if phase == .joined, !run.stopping { run.lost += 1 }
        if phase == .handshaking { run.closedInHandshake += 1 }
        phase = .closed
        self.context = nil
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var chunk = unwrapInboundIn(data)
        pending.writeBuffer(&chunk)
        let now = monotonicNow()
        while let newline = pending.readableBytesView.firstIndex(of: 0x0A) {
            let length = newline - pending.readerIndex
            let line = pending.readSlice(length: length)!
            pending.moveReaderIndex(forwardBy: 1)
            handle(ServerLine(line), now: now)
        }
        pending.discardReadBytes()
    }

    private func handle(_ line: ServerLine, now: Double) {
        switch line.type {
        case "time_reply":
            guard let id = line.integer("id"), let sent = outstanding.removeValue(forKey: id) else { return }
            lastRTT = now - sent
            if run.inWindow(sent) {
                run.probeRTT.record(now - sent)
                run.probesAnswered += 1
                // One CLOCK_MONOTONIC on both sides: each leg of the exchange, and the offset a
                // daemon would estimate from it (the truth is 0), can be told apart.
                if let t2 = line.double("t2"), let t3 = line.double("t3") {
                    run.probeUp.record(max(0, t2 - sent))
                    run.probeServer.record(max(0, t3 - t2))
                    run.probeDown.record(max(0, now - t3))
                    run.probeOffsetError.record(abs(((t2 - sent) - (now - t3)) / 2))
                }
            }
        case "challenge":
            send(ClientMessage.auth(.init()).encoded())
        case "welcome":
            phase = .joined
            run.welcomed += 1
            nextProbeAt = now
            nextReportAt = now + Double.random(in: 0..<1)
            room.seq = max(room.seq, line.integer("seq") ?? 0)
            if room.actor == nil { room.actor = self }
        case "applied":
            let seq = line.integer("seq") ?? 0
            room.seq = max(room.seq, seq)
            if line.contains("\"notice\":"), room.actor !== self, room.actionCount > timedAction, let sent = room.actionSentAt {
                timedAction = room.actionCount
                if run.inWindow(sent) { run.fanout.record(now - sent) }
            }
            if line.contains("\"holding\":true") { send(Array("{\"seq\":\(seq),\"type\":\"ready\"}\n".utf8)) }
        case "error":
            let code = line.string("code") ?? "unknown"
            if phase == .handshaking, code == "server-busy", attempts < 10, !run.stopping {
                // As a daemon does: try again after a backoff.
                run.busyRetries += 1
                run.retry(self)
            } else {
                run.refused[code, default: 0] += 1
            }
            phase = .closed
            context?.close(promise: nil)
        default:
            break
        }
    }

    /// Called by the run's ticker: probes, reports and (the actor) actions when due.
    func tick(now: Double) {
        guard phase == .joined, !byeSent else { return }
        if now >= nextProbeAt {
            nextProbeID += 1
            // t1 as the write happens, not as the tick began (a tick sends for many clients).
            let sentAt = monotonicNow()
            outstanding[nextProbeID] = sentAt
            if outstanding.count > 64 { outstanding.removeValue(forKey: nextProbeID - 64) }
            // Counted as the reply is (by when it was sent), so sent and answered match.
            if run.inWindow(sentAt) { run.probesSent += 1 }
            send(Array("{\"id\":\(nextProbeID),\"t1\":\(sentAt),\"type\":\"time_request\"}\n".utf8))
            if burstLeft > 0 {
                burstLeft -= 1
                nextProbeAt = now + 0.05
            } else {
                nextProbeAt = now + 1
            }
        }
        if now >= nextReportAt {
            nextReportAt = now + 1
            let drift = Double.random(in: -0.002...0.002)
            let rtt = lastRTT.map { ",\"rtt\":\($0)" } ?? ""
            send(Array("{\"drift\":\(drift)\(rtt),\"type\":\"report\"}\n".utf8))
        }
        if room.active, room.actor === self, now >= room.nextActionAt {
            room.nextActionAt = now + run.actionInterval
            room.actionCount += 1
            room.actionSentAt = now
            send(room.nextAction(now: now))
        }
    }

    func bye() {
        guard phase == .joined, !byeSent else { return }
        byeSent = true
        send(Array("{\"type\":\"bye\"}\n".utf8))
    }

    func close() {
        context?.close(promise: nil)
    }

    private func send(_ bytes: [UInt8]) {
        guard let context else { return }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }
}

/// A room of the load: its members are all in this process, so fan-out can be timed on the
/// shared monotonic clock.
final class LoadRoom {
    let name: String
    /// One room in ten has an actor that plays, pauses and seeks.
    let active: Bool
    var actor: LoadClient?
    var seq = 0
    var actionCount = 0
    var actionSentAt: Double?
    var nextActionAt: Double
    private var step = 0

    init(name: String, active: Bool, firstActionAt: Double) {
        self.name = name
        self.active = active
        self.nextActionAt = firstActionAt
    }

    /// play, pause, seek (while paused), play, seek (while playing: a hold), pause, … with a deadline.
    func nextAction(now: Double) -> [UInt8] {
        step += 1
        let kinds = ["play", "pause", "seek", "play", "seek", "pause"]
        let kind = kinds[step % kinds.count]
        let position = kind == "play" ? "" : ",\"position\":\(Double(step % 600) + 0.5)"
        return Array("{\"deadline\":\(now + 2),\"id\":\(step),\"kind\":\"\(kind)\"\(position),\"type\":\"action\"}\n".utf8)
    }
}
