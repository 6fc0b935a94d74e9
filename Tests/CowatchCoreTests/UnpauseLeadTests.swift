import Testing

@testable import CowatchCore

@Suite struct UnpauseLeadTests {
    @Test func priorUntilMeasuredThenTheMedianOfRecentStarts() {
        var lead = UnpauseLead(prior: 0.01, keep: 3)
        #expect(lead.lead == 0.01)
        for (i, latency) in [0.03, 0.028, 0.2, 0.031].enumerated() {
            let at = Double(i) * 10
            lead.unpaused(at: at, position: 5)
            lead.observe(position: 5, at: at + latency / 2, speed: 1, paused: false, seeking: false)  // not moved yet
            lead.observe(position: 5.012, at: at + latency + 0.012, speed: 1, paused: false, seeking: false)
        }
        // The slow start (0.2 s, under load) is clamped to maxLead and outvoted by the median.
        #expect(lead.measurements.count == 3)
        #expect(abs(lead.lead - 0.031) < 1e-9)
    }

    @Test func speedIsAccountedFor() {
        var lead = UnpauseLead()
        #expect(lead.lead == 0)
        lead.unpaused(at: 100, position: 20)
        // Started at 100.02, playing at 1.25×: 0.03 s later it is 0.0375 on.
        lead.observe(position: 20.0375, at: 100.05, speed: 1.25, paused: false, seeking: false)
        #expect(abs(lead.lead - 0.02) < 1e-9)
    }

    @Test func interruptedStartsAreNotMeasured() {
        var lead = UnpauseLead(prior: 0.01)
        lead.unpaused(at: 1, position: 5)
        lead.observe(position: 5, at: 1.01, speed: 1, paused: true, seeking: false)  // paused again
        lead.observe(position: 5.5, at: 1.1, speed: 1, paused: false, seeking: false)
        lead.unpaused(at: 2, position: 5)
        lead.observe(position: 30, at: 2.05, speed: 1, paused: false, seeking: true)  // a seek
        lead.unpaused(at: 3, position: 5)
        lead.observe(position: 5.1, at: 3.7, speed: 1, paused: false, seeking: false)  // too late to tell
        #expect(lead.measurements.isEmpty)
        #expect(lead.lead == 0.01)
    }
}

extension RoomCoordinatorTests {
    /// Plays and pauses a coordinator's simulated player `rounds` times, ticking every 10 ms and
    /// at the coordinator's transitions (as the daemon does); returns, per start, the largest
    /// |error| 0.2–1.2 s after it.
    /// `pausedOffset`: where the paused player stands against each start position (mpv with AAC
    /// audio stands one audio frame on); errors are measured from `from` s on.
    func startErrors(
        latency: Double, rounds: Int, prior: Double = 0.01, pausedOffset: Double = 0, from: Double = 0.2
    ) -> (errors: [Double], lead: Double) {
        var configuration = RoomCoordinator.Configuration()
        configuration.unpauseLatencyPrior = prior
        var coordinator = RoomCoordinator(
            name: "alice", room: "r", activity: Activity(url: "/films/night.mkv"), configuration: configuration)
        _ = coordinator.connected(now: 0)
        let first = GroupTimeline(seq: 1, position: 10, reference: Self.offset, rate: 1, playing: false)
        _ = coordinator.received(
            .welcome(.init(name: "alice", room: "r", timeline: first, participants: [], activity: Activity(url: "/films/night.mkv"))),
            now: 0)
        var player = SimulatedPlayer()
        player.position = 10
        player.startLatency = latency
        var t = 0.0
        func step(until end: Double, measure: (Double) -> Void = { _ in }) {
            while t < end {
                player.advance(to: t)
                measure(t)
                for action in coordinator.tick(now: t, sample: player.sample(at: t)) {
                    switch action {
                    case .send(.timeRequest(let id, let t1)):
                        let serverTime = t1 + Self.offset + Self.oneWay
                        _ = coordinator.received(.timeReply(id: id, t1: t1, t2: serverTime, t3: serverTime), now: t + 2 * Self.oneWay)
                    case .player(let command): player.apply(command, at: t)
                    default: break
                    }
                }
                t = min(t + 0.01, coordinator.nextTransition(afterLocal: t) ?? .infinity)
            }
        }
        step(until: 1)
        var position = 10.0
        var seq = 1
        var errors: [Double] = []
        for _ in 0..<rounds {
            player.position = position + pausedOffset
            let start = t + 0.3
            seq += 1
            _ = coordinator.received(
                .applied(timeline: GroupTimeline(seq: seq, position: position, reference: Self.offset + start, rate: 1, playing: true),
                    notice: nil, actionID: nil), now: t)
            var worst = 0.0
            step(until: start + 1.3) { now in
                guard now >= start + from && now <= start + 1.2 else { return }
                worst = max(worst, abs(player.position - (position + now - start)))
            }
            errors.append(worst)
            position += 1.5
            seq += 1
            _ = coordinator.received(
                .applied(timeline: GroupTimeline(seq: seq, position: position, reference: Self.offset + start + 1.5, rate: 1, playing: false),
                    notice: nil, actionID: nil), now: t)
            step(until: start + 2.2)
        }
        return (errors, coordinator.unpauseLead.lead)
    }

    @Test("pre-roll: a player learns its unpause latency and starts on the instant", arguments: [0.03, 0.012, 0.000_5])
    func prerollLearnsTheLatency(latency: Double) {
        let (errors, lead) = startErrors(latency: latency, rounds: 4)
        #expect(abs(lead - latency) < 0.000_1)
        // From the second start on (the first one teaches it): within a millisecond from 0.2 s.
        for error in errors.dropFirst() {
            #expect(error <= 0.001, "errors \(errors)")
        }
    }

    @Test("a player paused off the start position (mpv's AAC: 21 ms on) starts that much late or early, in step from the first frame",
        arguments: [0.0015, -0.0015, 0.021])
    func startShiftedByThePausedOffset(offset: Double) {
        let (errors, _) = startErrors(latency: 0.012, rounds: 3, pausedOffset: offset, from: 0.03)
        for error in errors.dropFirst() {
            #expect(error <= 0.000_3, "errors \(errors)")
        }
    }

    @Test("without pre-roll, a 30 ms start is still felt 0.2 s later (what pre-roll removes)")
    func withoutPrerollTheStartLags() {
        let (errors, _) = startErrors(latency: 0.03, rounds: 1, prior: 0)
        #expect(errors[0] > 0.002)
    }
}

extension RoomCoordinatorTests {
    @Test("a tick run on the very instant nextTransition names orders the start, whatever the rounding")
    func startDecidedOnItsInstant() {
        var missed = 0
        for k in 0..<60 {
            var coordinator = RoomCoordinator(name: "alice", room: "r", activity: Activity(url: "/films/night.mkv"))
            _ = coordinator.connected(now: 0)
            let first = GroupTimeline(seq: 1, position: 10, reference: Self.offset, rate: 1, playing: false)
            _ = coordinator.received(
                .welcome(.init(name: "alice", room: "r", timeline: first, participants: [], activity: Activity(url: "/films/night.mkv"))),
                now: 0)
            // A fitted skew and offsets that are no binary fractions: converting local time to
            // reference time and back does not return the same double.
            let skew = 20e-6 + Double(k) * 1.3e-7
            let oneWay = Self.oneWay + Double(k) * 0.000_013_7
            var t = 0.0
            while t < 45 {
                for action in coordinator.tick(now: t, sample: .init(position: 10, at: t, paused: true, speed: 1, seeking: false)) {
                    if case .send(.timeRequest(let id, let t1)) = action {
                        let serverTime = (t1 + oneWay) * (1 + skew) + Self.offset + 0.123_456_7
                        _ = coordinator.received(.timeReply(id: id, t1: t1, t2: serverTime, t3: serverTime), now: t + 2 * oneWay)
                    }
                }
                t += 0.1
            }
            let start = (t + 1.3 + Double(k) * 0.001_7) * (1 + skew) + Self.offset + 0.123_456_7
            _ = coordinator.received(
                .applied(timeline: GroupTimeline(seq: 2, position: 10, reference: start, rate: 1, playing: true), notice: nil, actionID: nil),
                now: t)
            guard let instant = coordinator.nextTransition(afterLocal: t) else {
                missed += 1
                continue
            }
            let actions = coordinator.tick(now: instant, sample: .init(position: 10, at: instant, paused: true, speed: 1, seeking: false))
            if !actions.contains(.player(.setPaused(false))) { missed += 1 }
        }
        #expect(missed == 0, "\(missed) of 60 starts not ordered on their instant")
    }
}
