import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import NIOCore
import NIOPosix

/// One load process: connects its participants at a steady rate, ticks them every 5 ms, and
/// counts what happens inside the measurement window (`windowStart` …+`duration`, on
/// CLOCK_MONOTONIC, shared with the benchmark and the server).
///
/// Threading: everything runs on one event loop (`loop`); `LoadRun` is only touched there.
final class LoadRun {
    struct Settings {
        var port: Int
        var firstParticipant: Int
        var participants: Int
        var roomSize: Int
        var activeEvery: Int
        var connectRate: Double
        var windowStart: Double
        var duration: Double
        var actionInterval: Double
    }

    let settings: Settings
    let loop: any EventLoop
    var clients: [LoadClient] = []
    var stopping = false
    var actionInterval: Double { settings.actionInterval }

    // Counted inside the window.
    var probeRTT = LatencyHistogram()
    var fanout = LatencyHistogram()
    /// The probe's legs: generator to server read (t2 − t1), inside the server (t3 − t2), server
    /// write to generator read (t4 − t3); and |offset error| = |(up − down) / 2|.
    var probeUp = LatencyHistogram()
    var probeServer = LatencyHistogram()
    var probeDown = LatencyHistogram()
    var probeOffsetError = LatencyHistogram()
    var probesSent = 0
    var probesAnswered = 0
    // Counted over the whole run.
    var welcomed = 0
    var lost = 0
    var closedInHandshake = 0
    var connectFailed = 0
    var refused: [String: Int] = [:]
    var busyRetries = 0

    init(settings: Settings, loop: any EventLoop) {
        self.settings = settings
        self.loop = loop
    }

    func inWindow(_ time: Double) -> Bool {
        time >= settings.windowStart && time < settings.windowStart + settings.duration
    }

    /// Source address of participant `index`: each has its own loopback address, as real
    /// participants come from their own homes (the server's per-address caps stay meaningful).
    static func source(of index: Int) -> String {
        "127.\(1 + index / 62_500).\((index / 250) % 250).\(index % 250 + 1)"
    }

    func start(onDone: @escaping @Sendable () -> Void) {
        var rooms: [String: LoadRoom] = [:]
        for offset in 0..<settings.participants {
            let index = settings.firstParticipant + offset
            let roomIndex = index / settings.roomSize
            let name = "load-\(roomIndex)"
            let room = rooms[name] ?? LoadRoom(
                name: name, active: roomIndex % settings.activeEvery == 0,
                firstActionAt: settings.windowStart - 2 + Double.random(in: 0..<settings.actionInterval))
            rooms[name] = room
            clients.append(LoadClient(index: index, room: room, name: "p\(index % settings.roomSize)", source: Self.source(of: index), run: self))
        }
        let loopBound = NIOLoopBound(self, eventLoop: loop)
        // Connect at a steady rate.
        for offset in clients.indices {
            let delay = Double(offset) / settings.connectRate
            loop.scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) {
                let run = loopBound.value
                run.connect(run.clients[offset])
            }
        }
        loop.scheduleRepeatedTask(initialDelay: .milliseconds(5), delay: .milliseconds(5)) { task in
            let run = loopBound.value
            let now = monotonicNow()
            if now >= run.settings.windowStart + run.settings.duration {
                task.cancel()
                run.stop(onDone: onDone)
                return
            }
            for client in run.clients { client.tick(now: now) }
        }
    }

    /// Replaces a client the server found busy with a fresh one, connected after a backoff.
    func retry(_ client: LoadClient) {
        guard !stopping, let slot = clients.firstIndex(where: { $0 === client }) else { return }
        let fresh = LoadClient(
            index: client.index, room: client.room, name: client.name, source: client.source, run: self, attempts: client.attempts + 1)
        clients[slot] = fresh
        let loopBound = NIOLoopBound(self, eventLoop: loop)
        let freshBound = NIOLoopBound(fresh, eventLoop: loop)
        loop.scheduleTask(in: .milliseconds(Int64.random(in: 500...1500))) {
            loopBound.value.connect(freshBound.value)
        }
    }

    private func connect(_ client: LoadClient) {
        let loopBound = NIOLoopBound(client, eventLoop: loop)
        let run = NIOLoopBound(self, eventLoop: loop)
        do {
            _ = try ClientBootstrap(group: loop)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(10))
                .bind(to: SocketAddress(ipAddress: client.source, port: 0))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(loopBound.value)
                    }
                }
                .connect(host: "127.0.0.1", port: settings.port)
                .whenFailure { _ in run.value.connectFailed += 1 }
        } catch {
            connectFailed += 1
        }
    }

    /// Waits for the replies to the window's last probes (no more are sent), says bye, waits,
    /// closes, and reports.
    private func stop(onDone: @escaping @Sendable () -> Void) {
        let loopBound = NIOLoopBound(self, eventLoop: loop)
        loop.scheduleTask(in: .milliseconds(500)) {
            let run = loopBound.value
            run.stopping = true
            for client in run.clients { client.bye() }
        }
        loop.scheduleTask(in: .milliseconds(1200)) {
            for client in loopBound.value.clients { client.close() }
        }
        loop.scheduleTask(in: .milliseconds(1500)) {
            loopBound.value.report()
            onDone()
        }
    }

    private func report() {
        let result: JSONValue = [
            "participants": .number(Double(settings.participants)), "welcomed": .number(Double(welcomed)),
            "lost": .number(Double(lost)), "closed_in_handshake": .number(Double(closedInHandshake)),
            "connect_failed": .number(Double(connectFailed)), "busy_retries": .number(Double(busyRetries)),
            "refused": .object(refused.mapValues { JSONValue.number(Double($0)) }),
            "probes_sent": .number(Double(probesSent)), "probes_answered": .number(Double(probesAnswered)),
            "probe_rtt": probeRTT.json, "fanout": fanout.json,
            "probe_up": probeUp.json, "probe_server": probeServer.json, "probe_down": probeDown.json,
            "probe_offset_error": probeOffsetError.json,
        ]
        FileHandle.standardOutput.write(Data(result.encoded() + [0x0A]))
    }
}
