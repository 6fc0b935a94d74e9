import Testing

@testable import CowatchCore

/// Issue 24: a guest measures its client's round trip and forward delay as Syncplay's server does,
/// and says its own measure as `serverRtt` (never the client's number echoed back to it, which a
/// client that mirrors the server's estimate would double each second).
@Suite("Syncplay: a guest's latency reckoning, Syncplay's server's")
struct SyncplayGuestPingTests {
    typealias T = SyncplayGuestTests

    @Test("the round trip from the echoed stamp; its moving average; half of it plus the excess over the client's own as the forward delay")
    func reckoning() {
        var ping = SyncplayServerPing()
        ping.received(echoed: 10, clientRtt: 0.2, now: 10.2)
        #expect(abs(ping.roundTrip - 0.2) < 1e-12 && abs(ping.average - 0.2) < 1e-12 && abs(ping.forwardDelay - 0.1) < 1e-12, "the first taken whole")
        ping.received(echoed: 11, clientRtt: 0.1, now: 11.4)
        #expect(abs(ping.average - (0.2 * 0.85 + 0.4 * 0.15)) < 1e-12)
        #expect(abs(ping.forwardDelay - (ping.average / 2 + 0.3)) < 1e-12, "the client said less than was measured: the excess counts")
        let before = ping
        for (echoed, rtt, now) in [(20.0, 0.1, 19.0), (.nan, 0.1, 21), (20, -1, 20.1), (0, 0.1, 90), (20, .infinity, 20.1)] {
            ping.received(echoed: echoed, clientRtt: rtt, now: now)
        }
        ping.received(echoed: nil, clientRtt: 0.1, now: 30)
        #expect(ping == before, "nothing a client could not have measured is taken")
    }

    @Test("the State says the guest's own measure as serverRtt, whatever the client reports as clientRtt; a playing position is moved by the forward delay")
    func serverRttIsMeasured() throws {
        var guest = T.welcomed()
        // The client answers our State sent at 10 s, 50 ms later, claiming an 8 s round trip.
        _ = guest.received([.state(SyncplayState(
            ping: .init(latencyCalculation: 10, clientLatencyCalculation: 5000, clientRtt: 8),
            playstate: .init(position: 100.05, paused: false), ignoring: .init(server: 1)))], now: 10.05)
        let state = try #require(T.states(guest.tick(now: 11.1)).first)
        #expect(abs((state.ping?.serverRtt ?? -1) - 0.05) < 1e-9, "\(String(describing: state.ping))")
        // Its next answer (to our 11.1 s stamp, 50 ms on): its position plus 25 ms is where it is.
        let answer = T.toRoom(guest.received([.state(SyncplayState(
            ping: .init(latencyCalculation: 11.1, clientLatencyCalculation: 5001, clientRtt: 8),
            playstate: .init(position: 101.125, paused: false)))], now: 11.15))
        guard case .report(let drift?, let rtt?)? = answer.first else {
            Issue.record("no report: \(answer)")
            return
        }
        #expect(abs(drift) < 1e-6 && abs(rtt - 0.05) < 1e-9, "drift \(drift), rtt \(rtt)")
    }

    @Test("a client that stays far off after being put back is put back again only after a State interval")
    func putBackOncePerInterval() {
        var guest = T.welcomed()
        _ = guest.received([.state(SyncplayState(playstate: .init(position: 100, paused: false), ignoring: .init(server: 1)))], now: 10.1)
        var forcedAt: [Double] = []
        var now = 11.0
        var echo: Int?
        while now < 12.5 {
            // Ten seconds behind, answering every forced state at once, 10 ms on.
            let said = guest.received([.state(SyncplayState(
                playstate: .init(position: 100 + (now - 10) - 10, paused: false), ignoring: .init(server: echo)))], now: now)
            if let state = T.states(said).first(where: { $0.playstate?.doSeek == true }) {
                forcedAt.append(now)
                echo = state.ignoring?.server
            }
            now += 0.01
        }
        #expect(forcedAt.count == 2, "\(forcedAt)")
        #expect(zip(forcedAt, forcedAt.dropFirst()).allSatisfy { $1 - $0 >= 1 - 1e-9 })
    }
}
