import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// A real `cowatch-server` under a few hundred simulated participants (`cowatch-load`
/// processes that speak the protocol as daemons do: hello, probe burst, a probe and a report a
/// second, actions in one room in ten). Bounds are generous for a noisy 2-core machine; the
/// precise figures are `cowatch-bench server`'s.
@Suite("A room server under load", .serialized, .realProcesses(alone: true))
struct ServerLoadTests {
    @Test("300 participants in 30 rooms: everyone joins, nothing is lost, every probe and action arrives")
    func threeHundred() async throws {
        let server = try await ServerProcess.start(extraArguments: ["--no-tls"])
        defer { server.terminateInBackground() }
        var load = ServerLoad(participants: 300)
        load.duration = 6
        load.warmup = 2
        load.connectRate = 300
        let result = try await load.run(port: server.port)
        #expect(result.welcomed == 300)
        #expect(result.refused.isEmpty, "\(result.refused)")
        #expect(result.lost == 0)
        #expect(result.connectFailed == 0 && result.closedInHandshake == 0)
        // One probe a second each over 6 s, all answered.
        #expect(result.probesSent >= 300 * 4)
        #expect(result.probesAnswered == result.probesSent)
        #expect((result.probeRTT.quantile(0.99) ?? 1) < 0.25)
        // 3 active rooms, an action every 2 s, 9 others hear each: dozens of samples, all prompt.
        #expect(result.fanout.count >= 3 * 2 * 9)
        #expect((result.fanout.quantile(0.99) ?? 1) < 0.25)
    }

    @Test("past its participant cap the server refuses newcomers with server-full and keeps serving the others")
    func cap() async throws {
        let server = try await ServerProcess.start(extraArguments: ["--no-tls", "--max-connections", "120"])
        defer { server.terminateInBackground() }
        var load = ServerLoad(participants: 200)
        load.duration = 4
        load.warmup = 2
        load.connectRate = 400
        let result = try await load.run(port: server.port)
        #expect(result.welcomed == 120)
        #expect(result.refused == ["server-full": 80], "\(result.refused)")
        #expect(result.lost == 0)
        #expect(result.probesAnswered == result.probesSent && result.probesSent > 0)
    }
}
