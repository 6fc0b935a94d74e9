import ArgumentParser
import CowatchClient
import CowatchCore
import CowatchNet
import CowatchObserver
import CowatchTestSupport
import Foundation
import NIOCore
import NIOPosix

/// What TLS on the room link costs: connection set-up, server CPU, and playback skew, each with
/// and without TLS in the same run (rooms alternate, so machine noise hits both alike).
struct TLSCost: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tls", abstract: "Measure the cost of TLS on the room link: handshake time, server CPU and skew, against plaintext.")

    @Option(help: "Viewers per room.") var viewers = 3
    @Option(help: "Seconds of steady-state sampling per room.") var duration = 10.0
    @Option(help: "Rooms of each kind (they alternate).") var repeats = 3
    @Option(help: "Connections timed per kind.") var connections = 200

    func run() async throws {
        let media = try TestMedia.audioVideo()
        var rows: [Row] = []
        log("connection set-up: \(connections) TCP connects, then \(connections) TLS handshakes")
        let tlsServer = try ServerProcess()
        let plainServer = try ServerProcess(extraArguments: ["--no-tls"])
        let tcp = try await Self.time(count: connections, port: plainServer.port, tls: false)
        let handshakes = try await Self.time(count: connections, port: tlsServer.port, tls: true)
        tlsServer.terminate()
        plainServer.terminate()
        rows.append(Row(name: "connect, plaintext (TCP)", values: tcp, unit: .ms))
        rows.append(Row(name: "connect + TLS 1.3 handshake, pinned", values: handshakes, unit: .ms))

        var skew: [Bool: [Double]] = [true: [], false: []]
        var cpu: [Bool: [Double]] = [true: [], false: []]
        for run in 1...repeats {
            for tls in [false, true] {
                log("run \(run)/\(repeats): room \(tls ? "with TLS" : "without TLS")")
                let room = try BenchRoom(
                    viewers: viewers, media: media, name: "tls\(run)\(tls)", serverArguments: tls ? [] : ["--no-tls"],
                    viewerArguments: tls ? [] : ["--no-tls"])
                _ = try room.playAndMeasureStart()
                sleepSeconds(1)
                let before = room.server.cpuSeconds()
                let start = monotonicNow()
                skew[tls]! += SkewSampler(clients: room.probes).sample(count: Int(duration / 0.025), interval: 0.025, rate: 1)
                cpu[tls]!.append((room.server.cpuSeconds() - before) / (monotonicNow() - start))
                room.stop()
            }
        }
        rows.append(Row(name: "steady skew, plaintext", values: skew[false]!, unit: .ms))
        rows.append(Row(name: "steady skew, TLS", values: skew[true]!, unit: .ms))
        print(Row.table(rows))
        func percent(_ values: [Double]) -> String {
            guard let stats = Percentiles(values) else { return "–" }
            return "\(format(stats.p50 * 100)) % of a core (p50 of \(stats.count) rooms)"
        }
        print("\nserver CPU while \(viewers) viewers play: plaintext \(percent(cpu[false]!)), TLS \(percent(cpu[true]!))")
        if let plain = Percentiles(skew[false]!), let secure = Percentiles(skew[true]!) {
            print("skew p99, TLS − plaintext: \(format3((secure.p99 - plain.p99) * 1000)) ms")
        }
        print("\(viewers) viewers, \(repeats) rooms of each kind, \(Int(duration)) s sampling; \(ProcessInfo.processInfo.activeProcessorCount) cores")
    }

    /// Seconds per connection: TCP connect (plaintext) or connect plus the pinned TLS handshake.
    static func time(count: Int, port: Int, tls: Bool) async throws -> [Double] {
        var times: [Double] = []
        // A private directory (known_hosts refuses one others may write to, such as /tmp itself).
        var template = Array("/tmp/cowatch-bench-XXXXXX".utf8CString)
        guard let directory = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }).map({ String(cString: $0) }) else {
            throw ValidationError("cannot make a temporary directory")
        }
        let knownHosts = KnownHosts(path: directory + "/known_hosts")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for _ in 0..<count {
            let client = tls ? try PinnedTLS.Client(host: "127.0.0.1", port: port, expected: nil, knownHosts: knownHosts) : nil
            let start = monotonicNow()
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connect(host: "127.0.0.1", port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try client?.addHandlers(to: channel)
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
            // Inside executeThenClose, so the channel is closed whatever the handshake does.
            try await channel.executeThenClose { _, _ in
                if let client { _ = try await client.handshake() }
                times.append(monotonicNow() - start)
            }
        }
        return times
    }
}
