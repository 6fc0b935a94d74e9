import Foundation
import Testing

import CowatchCore
import CowatchTestSupport

// MARK: - A simulated network with the internet's habits

/// One direction of a path: a floor, uniform jitter on it, a heavy (Pareto) tail, and
/// retransmissions. Every draw is ≥ the floor: delay only ever adds.
private struct Direction {
    var floor: Double
    var jitter = 0.0
    /// Pareto tail: scale (also its minimum, shifted to start at 0) and shape; capped.
    var tailScale = 0.0
    var tailShape = 1.2
    var tailCap = 0.5
    var loss = 0.0
    var retransmit = 0.2

    func draw(_ rng: inout SeededRandom, burst: Double) -> Double {
        var d = floor + jitter * rng.unit()
        if tailScale > 0 {
            d += min(tailCap, tailScale * burst * (pow(1 - rng.unit(), -1 / tailShape) - 1))
        }
        if rng.unit() < loss { d += retransmit }
        return d
    }
}

/// A path with route changes (new floors from an instant on), periodic stalls (nothing gets
/// through, then everything held arrives at once), bursts of worse tails, lost exchanges, and
/// replies that overtake each other.
private struct Path {
    var up: Direction
    var down: Direction
    /// (from local instant, up, down): the route in use from then on.
    var routes: [(at: Double, up: Double, down: Double)] = []
    var stallEvery: Double?
    var stallLength = 0.3
    var burstEvery: Double?
    var burstLength = 1.0
    var burstFactor = 4.0
    /// Exchanges that never come back (the probe times out).
    var dropped = 0.0

    func route(at t: Double) -> (up: Direction, down: Direction) {
        var (u, d) = (up, down)
        for r in routes where t >= r.at {
            u.floor = r.up
            d.floor = r.down
        }
        return (u, d)
    }

    /// When something sent at `t` leaves a stall (or `t` outside one).
    func released(_ t: Double) -> Double {
        guard let every = stallEvery else { return t }
        let phase = t.truncatingRemainder(dividingBy: every)
        return phase < stallLength ? t - phase + stallLength : t
    }

    func burst(at t: Double) -> Double {
        guard let every = burstEvery, t.truncatingRemainder(dividingBy: every) < burstLength else { return 1 }
        return burstFactor
    }
}

/// The server's clock is `local * (1 + skew) + offset0`.
private struct Simulation {
    var path: Path
    var skew = 0.0
    var offset0 = 86_400.125
    var processing = 0.000_1
    var rng: SeededRandom
    /// Replies in flight: they are delivered in arrival order, which need not be sending order.
    var inFlight: [ClockSample] = []

    init(_ path: Path, skew: Double = 0, seed: UInt64) {
        self.path = path
        self.skew = skew
        rng = SeededRandom(seed: seed)
    }

    func reference(atLocal t: Double) -> Double { t * (1 + skew) + offset0 }

    func error(of e: ReferenceClockEstimate, at t: Double) -> Double {
        e.reference(atLocal: t) - reference(atLocal: t)
    }

    mutating func send(at t1: Double) {
        if rng.unit() < path.dropped { return }
        let (up, down) = path.route(at: t1)
        let arrive = path.released(t1 + up.draw(&rng, burst: path.burst(at: t1)))
        let leave = arrive + processing
        let t4 = path.released(leave + down.draw(&rng, burst: path.burst(at: leave)))
        inFlight.append(ClockSample(t1: t1, t2: reference(atLocal: arrive), t3: reference(atLocal: leave), t4: t4))
    }

    /// Replies that have arrived by `t`, in arrival order.
    mutating func arrived(by t: Double) -> [ClockSample] {
        let due = inFlight.filter { $0.t4 <= t }.sorted { $0.t4 < $1.t4 }
        inFlight.removeAll { $0.t4 <= t }
        return due
    }

    /// Probes on the estimator's schedule from `start` to `end`, handing each reply to `check`
    /// right after it is added (with the simulation, for the truth). Returns the probes sent.
    @discardableResult
    mutating func run(
        _ est: inout ReferenceClockEstimator, from start: Double, until end: Double,
        check: (ClockSample, ReferenceClockEstimator, Simulation) -> Void = { _, _, _ in }
    ) -> Int {
        var next = start
        var sent = 0
        var t = start
        while t < end {
            if t >= next {
                send(at: t)
                sent += 1
                next = est.nextProbe(after: t)
            }
            let step = min(next, (inFlight.map(\.t4).min() ?? next))
            t = max(step, t + 1e-6)
            for reply in arrived(by: t) {
                est.add(reply)
                check(reply, est, self)
            }
        }
        return sent
    }
}

/// The profiles the issue names, each both ways.
enum NetworkProfile: String, CaseIterable, CustomTestStringConvertible {
    case jitter, internet, wifi, asymmetric, routeChanges, reordering

    var testDescription: String { rawValue }

    fileprivate var path: Path {
        switch self {
        case .jitter:
            // The benchmark's jitter: 50 ± 20 ms each way, a 300 ms stall every 10 s.
            let d = Direction(floor: 0.03, jitter: 0.04)
            return Path(up: d, down: d, stallEvery: 10)
        case .internet:
            // 50 ± 20 ms each way (floor 30 ms), a heavy tail, 1 % retransmitted, a 300 ms stall every 10 s.
            let d = Direction(floor: 0.03, jitter: 0.04, tailScale: 0.002, loss: 0.01)
            return Path(up: d, down: d, stallEvery: 10, dropped: 0.01)
        case .wifi:
            // 2 ms plus a tail to 40 ms, four times worse for a second in five.
            let d = Direction(floor: 0.002, tailScale: 0.002, tailShape: 1.5, tailCap: 0.038)
            return Path(up: d, down: d, burstEvery: 5)
        case .asymmetric:
            return Path(up: Direction(floor: 0.005, jitter: 0.002), down: Direction(floor: 0.045, jitter: 0.002))
        case .routeChanges:
            let d = Direction(floor: 0.03, jitter: 0.02, tailScale: 0.001)
            return Path(up: d, down: d, routes: [(100, 0.045, 0.02), (200, 0.01, 0.012)])
        case .reordering:
            // Replies often overtake each other: 0–150 ms of jitter against probes 100 ms apart.
            let d = Direction(floor: 0.02, jitter: 0.15, tailScale: 0.005)
            return Path(up: d, down: d, dropped: 0.05)
        }
    }
}

// MARK: - Tests

@Suite(.computeBound) struct ReferenceClockSimulationTests {
    /// The promise that matters: whatever the network does, the truth lies within the reported
    /// uncertainty, now and carried forward with the skew.
    @Test(arguments: NetworkProfile.allCases, [-50e-6, 0, 50e-6])
    func errorStaysWithinUncertainty(profile: NetworkProfile, skew: Double) {
        for seed in 1...3 as ClosedRange<UInt64> {
            var sim = Simulation(profile.path, skew: skew, seed: seed &* 7 &+ UInt64(profile.rawValue.count))
            var est = ReferenceClockEstimator()
            var checked = 0
            var violations = 0
            sim.run(&est, from: 1_000, until: 1_300) { reply, est, sim in
                for t in [reply.t4, reply.t4 + 0.5, reply.t4 + 5] {
                    let e = est.estimate(atLocal: t)!
                    checked += 1
                    if abs(sim.error(of: e, at: t)) > e.uncertainty { violations += 1 }
                }
                #expect(abs(est.estimate(atLocal: reply.t4)!.skew - skew) <= est.estimate(atLocal: reply.t4)!.skewUncertainty)
            }
            #expect(checked > 600)
            #expect(violations == 0, "\(profile) seed \(seed): \(violations) of \(checked) estimates outside their bound")
        }
    }

    /// Per-direction floors over a long window: once it has filled, the offset is within half a
    /// millisecond under the benchmark's jitter and a millisecond under the internet's heavy tails,
    /// where one exchange's split is ±20 ms (min-RTT filtering kept 3–4 ms).
    @Test(arguments: [(NetworkProfile.jitter, 0.000_5, 0.001), (.internet, 0.001, 0.001_5)], 1...3 as ClosedRange<UInt64>)
    func jitterAveragesOutOfTheFloors(profile: (NetworkProfile, p99: Double, max: Double), seed: UInt64) {
        var sim = Simulation(profile.0.path, skew: 30e-6, seed: seed)
        var est = ReferenceClockEstimator()
        var errors: [Double] = []
        sim.run(&est, from: 0, until: 300) { reply, est, sim in
            guard reply.t4 > 60 else { return }
            errors.append(abs(sim.error(of: est.estimate(atLocal: reply.t4)!, at: reply.t4)))
        }
        let sorted = errors.sorted()
        #expect(sorted.count > 500)
        #expect(sorted[sorted.count * 99 / 100] < profile.p99)
        #expect(sorted.last! < profile.max)
    }

    @Test(arguments: 1...5 as ClosedRange<UInt64>)
    func uncertaintyShrinksWithMoreSamples(seed: UInt64) {
        var sim = Simulation(NetworkProfile.internet.path, seed: seed)
        var est = ReferenceClockEstimator()
        var byCount: [Int: Double] = [:]
        sim.run(&est, from: 0, until: 60) { reply, est, sim in
            byCount[est.sampleCount] = est.estimate(atLocal: reply.t4)!.uncertainty
        }
        let burst = byCount[est.configuration.burstCount]!
        let some = byCount[50]!
        let late = byCount[byCount.keys.max()!]!
        #expect(some < burst)
        #expect(late < burst - 0.005)
        // Never below what two-way time transfer allows: half the sum of the two floors.
        #expect(late >= 0.03)
    }

    /// Two processes on one clock behind the benchmark's jitter (50 ± 20 ms, stalls): the fitted
    /// skew is within ±5 ppm of zero after two minutes (a least-squares fit of min-RTT samples
    /// read −97 ppm). A real ±50 ppm is found as well, and the internet's heavy tails (whose sum
    /// with the jitter leaves fewer samples near the floor) cost a few ppm more.
    @Test(arguments: [(NetworkProfile.jitter, 0.0, 5e-6), (.jitter, -50e-6, 12e-6), (.jitter, 50e-6, 12e-6), (.internet, 0.0, 10e-6), (.internet, 50e-6, 15e-6)])
    func skewConvergesInTwoMinutes(profile: NetworkProfile, skew: Double, tolerance: Double) {
        for seed in 1...6 as ClosedRange<UInt64> {
            var sim = Simulation(profile.path, skew: skew, seed: seed)
            var est = ReferenceClockEstimator()
            sim.run(&est, from: 5_000, until: 5_120)
            let e = est.estimate(atLocal: 5_120)!
            #expect(abs(e.skew - skew) <= tolerance, "seed \(seed): fitted \(e.skew * 1e6) ppm, true \(skew * 1e6)")
        }
    }

    /// From ten seconds in to two minutes, first skew fit included: a young fit (30 s of exchanges)
    /// is off by tens of ppm under heavy tails, and carried over a minute's window it moved the offset
    /// by up to 2.8 ms (p99 1.8 ms) where the unfitted estimate was within 0.9 ms. Pulled toward zero by
    /// its own scatter and kept to recent exchanges while it is young, it stays near a millisecond,
    /// and a real 50 ppm costs no more than before.
    @Test(arguments: [(NetworkProfile.internet, 0.0, 0.001_3), (.internet, 50e-6, 0.001_5), (.jitter, 0.0, 0.000_7)])
    func aYoungSkewFitDoesNotCarryTheOffsetAway(profile: NetworkProfile, skew: Double, p99: Double) {
        var errors: [Double] = []
        for seed in 1...20 as ClosedRange<UInt64> {
            var sim = Simulation(profile.path, skew: skew, seed: seed)
            var est = ReferenceClockEstimator()
            sim.run(&est, from: 1_000, until: 1_130) { reply, est, sim in
                guard reply.t4 >= 1_010 else { return }
                errors.append(abs(sim.error(of: est.estimate(atLocal: reply.t4)!, at: reply.t4)))
            }
        }
        errors.sort()
        #expect(errors.count > 10_000)
        #expect(errors[errors.count * 99 / 100] < p99, "p99 \(errors[errors.count * 99 / 100] * 1000) ms")
    }

    /// Two-way time transfer cannot see asymmetry: 5 ms up, 45 ms down reads 20 ms off, and the
    /// uncertainty says so.
    @Test func asymmetricPathErrsByHalfTheAsymmetryWithinUncertainty() {
        var sim = Simulation(NetworkProfile.asymmetric.path, seed: 3)
        var est = ReferenceClockEstimator()
        sim.run(&est, from: 0, until: 120)
        let e = est.estimate(atLocal: 120)!
        let error = sim.error(of: e, at: 120)
        #expect(abs(error - (0.005 - 0.045) / 2) < 0.000_5)
        #expect(abs(error) <= e.uncertainty)
        #expect(e.uncertainty < 0.027)  // (5 + 45) / 2 ms, plus a little jitter and drift allowance
    }

    /// A stalled exchange (300 ms each way) widens nothing and moves nothing.
    @Test func aStalledExchangeDoesNotMoveTheOffset() {
        var sim = Simulation(NetworkProfile.internet.path, seed: 9)
        var est = ReferenceClockEstimator()
        sim.run(&est, from: 0, until: 90)
        let now = 90.5
        let before = est.estimate(atLocal: now)!
        let t1 = 90.0
        let stalled = ClockSample(
            t1: t1, t2: sim.reference(atLocal: t1 + 0.33), t3: sim.reference(atLocal: t1 + 0.33), t4: t1 + 0.66)
        #expect(est.add(stalled) == true)
        let after = est.estimate(atLocal: now)!
        #expect(abs(after.offset - before.offset) < 1e-9)
        #expect(after.uncertainty <= before.uncertainty + 1e-9)
    }

    /// A route change restarts the skew fit instead of bending it; plain jitter never does.
    @Test(arguments: 1...3 as ClosedRange<UInt64>)
    func routeChangesAreNoticedAndJitterIsNot(seed: UInt64) {
        var sim = Simulation(NetworkProfile.routeChanges.path, skew: -20e-6, seed: seed)
        var est = ReferenceClockEstimator()
        sim.run(&est, from: 0, until: 400)
        #expect(est.routeChanges >= 2)
        #expect(abs(est.estimate(atLocal: 400)!.skew + 20e-6) < 5e-6)

        for profile in [NetworkProfile.internet, .wifi] {
            var quiet = Simulation(profile.path, seed: seed)
            var steady = ReferenceClockEstimator()
            quiet.run(&steady, from: 0, until: 400)
            #expect(steady.routeChanges == 0, "\(profile)")
        }
    }

    /// Probes come four times a second while the path is noisy, once a second when it is quiet.
    @Test func probeRateFollowsTheNoise() {
        var noisy = Simulation(NetworkProfile.internet.path, seed: 1)
        var est = ReferenceClockEstimator()
        let sentNoisy = noisy.run(&est, from: 0, until: 100)
        #expect(est.isNoisy)
        #expect(sentNoisy > 350)

        var quiet = Simulation(Path(up: Direction(floor: 0.000_1, jitter: 0.000_1), down: Direction(floor: 0.000_1, jitter: 0.000_1)), seed: 1)
        var calm = ReferenceClockEstimator()
        let sentQuiet = quiet.run(&calm, from: 0, until: 100)
        #expect(!calm.isNoisy)
        #expect(sentQuiet < 110)
    }
}

