import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Rooms whose links to the server go through an impairing proxy on loopback: jitter, stalls,
/// asymmetry. Every participant shares this machine's CLOCK_MONOTONIC with the server, so the
/// true clock offset is exactly zero and each estimate's error is simply its offset.
@Suite("Rooms over impaired links", .serialized, .realProcesses)
struct NetworkConditionsTests {
    static let jitterAndStalls = LinkImpairment(delay: 0.05, jitter: 0.02, stallEvery: 3, stallLength: 0.3)

    @Test("50 ± 20 ms jitter and 300 ms stalls on every link: the room stays locked, clock errors stay inside their bounds")
    func jitterAndStalls() async throws {
        let room = try await DaemonRoom(
            names: ["ann", "ben", "cat"], media: try await TestMedia.file(.audioVideo), room: "jitter",
            links: [(Self.jitterAndStalls, Self.jitterAndStalls)], listeners: false, probes: true)
        try await room.clients[0].request(.seek(seconds: 10, mode: .absolute), timeout: 15)
        try await room.clients[1].request(.play, timeout: 15)
        await pause(4)
        let skews = await SkewSampler(clients: room.probes).skews(count: 60, interval: 0.05, rate: 1)
        let p95 = skews.sorted().dropLast(skews.count / 20).last ?? .infinity
        #expect(p95 < 0.050, "skew p95 \(p95) over jitter and stalls")
        for index in 0..<3 {
            let clock = try await room.clock(index)
            // True offset is 0 (one machine, one clock); allow 1 ms for scheduling.
            #expect(abs(clock.offset) <= clock.uncertainty + 0.001, "participant \(index): offset \(clock.offset), uncertainty \(clock.uncertainty)")
            #expect(clock.uncertainty < 0.1)
        }
    }

    @Test("an asymmetric path shows up as skew of half the asymmetry, inside the reported uncertainty")
    func asymmetry() async throws {
        let fastUp = LinkImpairment(delay: 0.005)
        let slowDown = LinkImpairment(delay: 0.045)
        let even = LinkImpairment(delay: 0.025)
        let room = try await DaemonRoom(
            names: ["lop", "sym"], media: try await TestMedia.file(.audioVideo), room: "asym", links: [(fastUp, slowDown), (even, even)],
            listeners: false, probes: true)
        try await room.clients[1].request(.seek(seconds: 10, mode: .absolute), timeout: 15)
        try await room.clients[1].request(.play, timeout: 15)
        await pause(4)
        // lop believes the server clock is (5 − 45) / 2 = 20 ms behind where it is, so it plays 20 ms late.
        let lop = try await room.clock(0)
        #expect(abs(lop.offset + 0.020) < 0.004, "lop's offset \(lop.offset)")
        #expect(abs(lop.offset) <= lop.uncertainty + 0.001)
        let sym = try await room.clock(1)
        #expect(abs(sym.offset) < 0.004)
        let positions = try #require(await SkewSampler(clients: room.probes).positions(rate: 1))
        let lag = positions[1] - positions[0]
        #expect(abs(lag - 0.020) < 0.006, "sym ahead of lop by \(lag)")
    }

    @Test("a link that goes dark for 5 s comes back into lock without disturbing the others")
    func longStall() async throws {
        let clean = LinkImpairment(delay: 0.002)
        let room = try await DaemonRoom(
            names: ["eve", "fay", "gus"], media: try await TestMedia.file(.audioVideo), room: "stall", links: [(clean, clean)],
            listeners: false, probes: true)
        try await room.clients[0].request(.play, timeout: 10)
        await pause(2)
        let seeksBefore = try await room.clients.asyncMap { try await $0.request(.getStatus)["drift"]?["seeks"]?.numberValue ?? -1 }
        room.links[2].stall(for: 5)
        // While gus is cut off, the others act: eve seeks; fay and eve must stay together.
        try await room.clients[0].request(.seek(seconds: 30, mode: .absolute), timeout: 10)
        await pause(2)
        let others = await SkewSampler(clients: Array(room.probes.prefix(2))).skews(count: 20, interval: 0.05, rate: 1)
        #expect((others.max() ?? .infinity) < 0.050, "eve–fay skew during gus's stall \(others.max() ?? -1)")
        // After the stall gus gets the seek late, follows, and locks again.
        await pause(5)
        let all = await SkewSampler(clients: room.probes).skews(count: 20, interval: 0.05, rate: 1)
        #expect((all.max() ?? .infinity) < 0.050, "skew after gus returned \(all.max() ?? -1)")
        // gus's return did not make eve or fay seek beyond the group seek everyone made.
        let seeksAfter = try await room.clients.prefix(2).asyncMap { try await $0.request(.getStatus)["drift"]?["seeks"]?.numberValue ?? -1 }
        #expect(seeksAfter == Array(seeksBefore.prefix(2)))
    }
}

@Suite("Room server restarts", .serialized, .realProcesses)
struct ServerRestartTests {
    @Test("when the room server restarts, the room carries on from where it was")
    func serverRestart() async throws {
        let room = try await DaemonRoom(
            names: ["hal", "ida"], media: try await TestMedia.file(.audioVideo), room: "restart", listeners: false, probes: true)
        let clients = room.clients
        try await clients[0].request(.seek(seconds: 20, mode: .absolute))
        try await clients[1].request(.play)
        await pause(1.5)
        let before = try await clients[0].status().position ?? 0

        // The restarted server keeps its state directory: the same certificate (the daemons
        // pinned it on first use) and the token key that proves who was in the room.
        try await room.restartServer(downFor: 0.5)
        // Both rejoin (backoff is at most 2 s) into a room that starts where they were.
        try? await room.waitForParticipants(2, timeout: 10)  // the checks below say what is wrong
        await pause(2)
        for client in clients {
            let status = try await client.status()
            #expect(!status.paused)
            #expect((status.position ?? 0) > before + 2, "\(status.name) at \(status.position ?? -1), was at \(before)")
        }
        let skews = await SkewSampler(clients: room.probes).skews(count: 20, interval: 0.05, rate: 1)
        #expect((skews.max() ?? .infinity) < 0.050)
    }
}
