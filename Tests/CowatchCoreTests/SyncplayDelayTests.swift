import Foundation
import Testing

@testable import CowatchCore

/// Syncplay's server adds its own estimate of a member's delay to every playing position the
/// member reports; a Cowatch daemon mirrors that estimate and reports positions it lands on the
/// truth with (`SyncplayDelayMirror`, `SyncplayClient`).
@Suite("Syncplay: the server's delay estimate, mirrored")
struct SyncplayDelayTests {
    @Test("the mirror does the server's arithmetic: the first round trip whole, then 0.85/0.15; half of it, plus an excess over clientRtt")
    func serverArithmetic() {
        var mirror = SyncplayDelayMirror()
        mirror.serverSaid(serverRtt: 0, stamp: 1)
        #expect(mirror.averageRoundTrip == 0, "0 is no measure")
        _ = mirror.answering(stamp: 1, clientRtt: 0)
        mirror.serverSaid(serverRtt: 0.080, stamp: 2)
        #expect(abs(mirror.averageRoundTrip - 0.080) < 1e-12)
        // Our answer said clientRtt 0: the server added the whole excess (80 ms) to half the average.
        #expect(abs(mirror.forwardDelay - (0.040 + 0.080)) < 1e-12)
        _ = mirror.answering(stamp: 2, clientRtt: 0.5)
        mirror.serverSaid(serverRtt: 0.002, stamp: 3)
        #expect(abs(mirror.averageRoundTrip - (0.080 * 0.85 + 0.002 * 0.15)) < 1e-12)
        #expect(abs(mirror.forwardDelay - mirror.averageRoundTrip / 2) < 1e-12, "clientRtt above the round trip: no excess")
        var average = mirror.averageRoundTrip
        mirror.serverSaid(serverRtt: 0.002, stamp: 3.5)
        #expect(mirror.averageRoundTrip == average, "no answer of ours since: the same measure, said again")
        // An answer the server had not yet received when it stamped its State is not counted yet.
        _ = mirror.answering(stamp: 4, clientRtt: 0.5)
        mirror.serverSaid(serverRtt: 0.002, stamp: 4.001)
        #expect(mirror.averageRoundTrip == average)
        mirror.serverSaid(serverRtt: 0.002, stamp: 5)
        average = average * 0.85 + 0.002 * 0.15
        #expect(abs(mirror.averageRoundTrip - average) < 1e-12, "the same value, a new measure: counted")
        // Two answers the server measured between two of its States (a forced one came between): both count.
        _ = mirror.answering(stamp: 5, clientRtt: 0.5)
        _ = mirror.answering(stamp: 5.0005, clientRtt: 0.5)
        mirror.serverSaid(serverRtt: 0.001, stamp: 6)
        average = (average * 0.85 + 0.001 * 0.15) * 0.85 + 0.001 * 0.15
        #expect(abs(mirror.averageRoundTrip - average) < 1e-12)
        _ = mirror.answering(stamp: 6, clientRtt: 0.5)
        for bad in [-1.0, .nan, .infinity, 1e9] { mirror.serverSaid(serverRtt: bad, stamp: 7) }
        mirror.serverSaid(serverRtt: 0.001, stamp: nil)
        #expect(mirror.averageRoundTrip == average)
    }

    @Test("clientRtt is a bound the server's round trips do not reach; the answer's own round trip is predicted from the recent ones")
    func boundAndPrediction() {
        var mirror = SyncplayDelayMirror()
        #expect(mirror.clientRtt == SyncplayDelayMirror.minimumClientRtt)
        for (second, rtt) in [(1.0, 0.2), (2, 0.3), (3, 0.25), (4, 0.21)] {
            _ = mirror.answering(stamp: second, clientRtt: mirror.clientRtt)
            mirror.serverSaid(serverRtt: rtt, stamp: second + 1)
        }
        mirror.measuredOwn(roundTrip: 0.19)
        #expect(mirror.clientRtt == 0.6, "twice the largest recent round trip")
        let average = mirror.averageRoundTrip
        let predicted = mirror.answering(stamp: 5, clientRtt: mirror.clientRtt)
        // The median of 0.2, 0.21, 0.25, 0.3 is 0.23.
        #expect(abs(predicted - (average * 0.85 + 0.23 * 0.15) / 2) < 1e-12)
        #expect(mirror.forwardDelay == predicted, "what the server holds until our next answer")
    }

    @Test("the answer's round trip is predicted from our own round trip of the same State (a late read shows in both) plus the server's usual excess over ours")
    func predictionFromOwnRoundTrip() {
        var mirror = SyncplayDelayMirror()
        for (second, own, server) in [(1.0, 0.0015, 0.002), (2, 0.0016, 0.0021), (3, 0.0014, 0.0019)] {
            _ = mirror.answering(stamp: second, clientRtt: 0.25, ownRoundTrip: own)
            mirror.serverSaid(serverRtt: server, stamp: second + 1)
        }
        let average = mirror.averageRoundTrip
        // This State was read 50 ms late: our round trip from its echo says so.
        let predicted = mirror.answering(stamp: 4, clientRtt: 0.25, ownRoundTrip: 0.050)
        #expect(abs(predicted - (average * 0.85 + 0.0505 * 0.15) / 2) < 1e-9, "\(predicted)")
    }

    @Test("a playing position is reported moved by our one-way delay less the server's estimate (below 0 from the start); a paused one as it is")
    func reportedPositions() {
        var mirror = SyncplayDelayMirror()
        mirror.measuredOwn(roundTrip: 0.004)
        mirror.measuredOwn(roundTrip: 0.010)
        #expect(mirror.oneWay == 0.002, "half the smallest")
        #expect(abs(mirror.reported(100, paused: false, delay: 0.050) - (100 + 0.002 - 0.050)) < 1e-12)
        #expect(mirror.reported(100, paused: true, delay: 0.050) == 100)
        #expect(abs(mirror.reported(0, paused: false, delay: 0.050) - (0.002 - 0.050)) < 1e-12, "the server adds its 50 ms back")
        #expect(mirror.reported(100, paused: false, delay: 1e6) == 100 - 5, "a server's absurd numbers move it by 5 s at most")
    }

    @Test("the client's play carries the corrected position; its answers say the bound as clientRtt")
    func clientReportsCorrected() throws {
        var client = SyncplayClientTests.joined()
        // Three server States: our answers measured at 80 ms (a busy join), then 2 ms, 2 ms.
        // Our first answer echoes nothing (nothing measured); the next is measured at 80 ms (a busy
        // daemon), then 2 ms, 2 ms.
        for (second, rtt) in [(1.0, 0.0), (2.0, 0.0), (3.0, 0.080), (4.0, 0.002), (5.0, 0.002)] {
            // Our last stamp echoed with the time the server held it added: a 4 ms round trip.
            let state = SyncplayState(
                ping: .init(latencyCalculation: 1000 + second, clientLatencyCalculation: second == 1 ? nil : second + 0.001 - 0.004, serverRtt: rtt),
                playstate: .init(position: 0, paused: true))
            let actions = client.received([.state(state)], player: .init(position: 0, paused: true), now: second + 0.001)
            let answer = try #require(SyncplayClientTests.sentState(actions))
            #expect((answer.ping?.clientRtt ?? 0) >= 0.16, "at least twice the largest round trip the server measured")
        }
        let play = client.localChange(paused: false, position: 10, seek: false, now: 5.5)
        let sent = try #require(SyncplayClientTests.sentState(play)?.playstate)
        let delay = client.delays.forwardDelay
        #expect(delay > 0.02, "the slow first round trip still weighs: \(delay)")
        #expect(abs(sent.position - (10 + client.delays.oneWay - delay)) < 1e-9, "\(sent.position)")
        #expect(client.timeline?.position == 10, "our own timeline is the truth")
        let pause = client.localChange(paused: true, position: 12, seek: false, now: 7.5)
        #expect(SyncplayClientTests.sentState(pause)?.playstate?.position == 12)
    }

    /// Two daemons on a simulated Syncplay server; bob joins with a slow first measured round trip
    /// (his second `State`, the first his answer echoes, waits `firstDelay` to be read), then each
    /// `State` waits 0.1 ms (bob) and 0.2 ms (fay), or with `jitter`, 0.1 to 1.5 ms, differently
    /// each time.
    static func room(firstDelay: Double, jitter: Bool = false) -> SyncplayServerSimulation {
        var simulation = SyncplayServerSimulation()
        // A fixed scramble of k: the same delays every run.
        func scrambled(_ k: Int, _ salt: Double) -> Double {
            let x = sin(Double(k) * 12.9898 + salt) * 43758.5453
            return 0.0001 + 0.0014 * (x - x.rounded(.down))
        }
        simulation.join("bob", clockOffset: 50, up: 0.0002, down: 0.0003) { $0 == 1 ? firstDelay : jitter ? scrambled($0, 1) : 0.0001 }
        simulation.run(until: 0.4)
        simulation.join("fay", clockOffset: -7, up: 0.0003, down: 0.0002) { jitter ? scrambled($0, 2) : 0.0002 }
        return simulation
    }

    @Test("with reading delays that differ each time (0.1–1.5 ms), the play still lands within a millisecond")
    func jitteredDelays() throws {
        var simulation = Self.room(firstDelay: 0.080, jitter: true)
        simulation.run(until: 3.7)
        let added = simulation.watchers[0].forwardDelay
        simulation.change(0, paused: false, position: 0)
        simulation.run(until: 8)
        let bob = try #require(simulation.timelinePosition(0))
        let fay = try #require(simulation.timelinePosition(1))
        #expect(abs(fay - bob) < 0.001, "fay \((fay - bob) * 1000) ms from bob (the server added \(added * 1000) ms)")
    }

    @Test("on a server applying Syncplay's rules, one daemon's play lands on the other's timeline to a fraction of a millisecond, a slow first round trip notwithstanding", arguments: [0.080, 0.010, 0.0004])
    func twoDaemonsAgree(firstDelay: Double) throws {
        var simulation = Self.room(firstDelay: firstDelay)
        simulation.run(until: 3.7)
        // What the server would add to a true report now: the hypothesis this corrects.
        let added = simulation.watchers[0].forwardDelay
        if firstDelay >= 0.010 { #expect(added > 0.003, "the slow first round trip lingers in the server's estimate: \(added)") }
        simulation.change(0, paused: false, position: 0)
        simulation.run(until: 8)
        let bob = try #require(simulation.timelinePosition(0))
        let fay = try #require(simulation.timelinePosition(1))
        #expect(simulation.members[1].client.timeline?.paused == false)
        #expect(abs(fay - bob) < 0.0005, "fay \((fay - bob) * 1000) ms from bob (the server added \(added * 1000) ms)")
        // Where the server holds each of them (their reports plus its estimate of their delay) is
        // where they are.
        simulation.run(until: 12)
        let truth = try #require(simulation.timelinePosition(0))
        for member in 0..<2 {
            let held = try #require(simulation.heldPositionForTest(member))
            #expect(abs(held - truth) < 0.0015, "the server holds member \(member) \((held - truth) * 1000) ms from where it is")
        }
    }

    @Test("a daemon whose one clock sample came while it was busy places the change off, then again as its estimate improves")
    func placementRefined() throws {
        var simulation = SyncplayServerSimulation()
        simulation.join("bob", clockOffset: 50, up: 0.0002, down: 0.0003) { _ in 0.0001 }
        simulation.run(until: 0.4)
        // fay reads the State that brings her first echo 40 ms late, and the one with bob's play
        // too: both clock samples say the way down is 40 ms long, and place the server's clock
        // 20 ms off when she places the play.
        simulation.join("fay", clockOffset: -7, up: 0.0003, down: 0.0002) { $0 == 1 || $0 == 2 ? 0.040 : 0.0002 }
        simulation.run(until: 2.2)
        simulation.change(0, paused: false, position: 0)
        simulation.run(until: 2.3)
        #expect(simulation.members[1].client.timeline?.paused == false)
        let early = try #require(simulation.timelinePosition(1)) - (try #require(simulation.timelinePosition(0)))
        #expect(abs(early) > 0.005, "the first placement is off (\(early * 1000) ms): the case this is about")
        simulation.run(until: 6)
        let late = try #require(simulation.timelinePosition(1)) - (try #require(simulation.timelinePosition(0)))
        #expect(abs(late) < 0.0005, "placed again: \(late * 1000) ms")
    }

    @Test("a daemon whose one round trip was slow misreports its play; it takes the play back as the server placed it, as the other daemon does")
    func ownChangeAsTheServerPlacedIt() throws {
        var simulation = SyncplayServerSimulation()
        // bob reads the State that brings his first echo 40 ms late: half of it is his one-way delay, he reckons.
        simulation.join("bob", clockOffset: 50, up: 0.0002, down: 0.0003) { $0 == 1 ? 0.040 : 0.0001 }
        simulation.run(until: 0.4)
        simulation.join("fay", clockOffset: -7, up: 0.0003, down: 0.0002) { _ in 0.0002 }
        simulation.run(until: 1.5)
        simulation.change(0, paused: false, position: 0)
        simulation.run(until: 1.6)
        // The server holds the play ahead of bob's truth by his misjudged delay.
        let bobTruth = 0.1
        let bob = try #require(simulation.timelinePosition(0))
        let fay = try #require(simulation.timelinePosition(1))
        #expect(abs(fay - bobTruth) > 0.005, "fay follows the server's placement: \((fay - bobTruth) * 1000) ms from bob's play")
        #expect(abs(fay - bob) < 0.0005, "and so does bob: \((fay - bob) * 1000) ms apart")
        simulation.run(until: 6)
        let bobLater = try #require(simulation.timelinePosition(0))
        let fayLater = try #require(simulation.timelinePosition(1))
        #expect(abs(fayLater - bobLater) < 0.0005, "\((fayLater - bobLater) * 1000) ms apart")
    }

    @Test("a seek while playing lands likewise, made by the other daemon", arguments: [0.080])
    func seekAgrees(firstDelay: Double) throws {
        var simulation = Self.room(firstDelay: firstDelay)
        simulation.run(until: 2.2)
        simulation.change(0, paused: false, position: 0)
        simulation.run(until: 4.6)
        simulation.change(1, paused: false, position: 300, seek: true)
        simulation.run(until: 7)
        let bob = try #require(simulation.timelinePosition(0))
        let fay = try #require(simulation.timelinePosition(1))
        #expect(bob > 302 && abs(fay - bob) < 0.0005, "bob \(bob), fay \((fay - bob) * 1000) ms from him")
    }
}

extension SyncplayServerSimulation {
    /// Where the server holds member `index` now: its last report plus the delay the server
    /// added, carried on.
    func heldPositionForTest(_ index: Int) -> Double? {
        watchers[index].position.map { $0 + (paused ? 0 : serverNow - watchers[index].lastUpdatedOn) }
    }
}
