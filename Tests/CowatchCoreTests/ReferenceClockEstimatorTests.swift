import Testing

import CowatchCore
import CowatchTestSupport

// MARK: - A deterministic simulated network

/// True reference clock `local * (1 + skew) + offset0`; each direction's delay is its base plus
/// uniform jitter in ±jitter; a fraction `loss` of exchanges never comes back.
private struct SimulatedNetwork {
    var skew = 0.0
    var offset0 = 12_345.678
    var up: Double
    var down: Double
    var upJitter = 0.0
    var downJitter = 0.0
    var loss = 0.0
    var processing = 0.000_2
    var rng = SeededRandom(seed: 1)

    func reference(atLocal t: Double) -> Double { t * (1 + skew) + offset0 }

    mutating func exchange(sentAt t1: Double) -> ClockSample? {
        let lost = rng.unit() < loss
        let upDelay = up + upJitter * (2 * rng.unit() - 1)
        let downDelay = down + downJitter * (2 * rng.unit() - 1)
        if lost { return nil }
        let arrive = t1 + upDelay
        let leave = arrive + processing
        return ClockSample(t1: t1, t2: reference(atLocal: arrive), t3: reference(atLocal: leave), t4: leave + downDelay)
    }

    /// Signed error of an estimate's reference time at `t`.
    func error(of e: ReferenceClockEstimate, at t: Double) -> Double {
        e.reference(atLocal: t) - reference(atLocal: t)
    }
}

/// Probes on the estimator's own schedule from `start` until `end`; `check` sees every reply
/// (and the network, as the caller's is borrowed meanwhile).
/// Returns the number of probes sent.
@discardableResult
private func run(
    _ estimator: inout ReferenceClockEstimator, on net: inout SimulatedNetwork,
    from start: Double, until end: Double,
    check: (ClockSample, ReferenceClockEstimator, SimulatedNetwork) -> Void = { _, _, _ in }
) -> Int {
    var sent = 0
    var t = start
    while t < end {
        sent += 1
        if let sample = net.exchange(sentAt: t) {
            #expect(estimator.add(sample) == true)
            check(sample, estimator, net)
        }
        t = estimator.nextProbe(after: t)
    }
    return sent
}

/// A hand-made exchange at local `t` with the given wire round trip, split evenly.
private func sample(at t: Double, roundTrip: Double, offset: Double = 100) -> ClockSample {
    ClockSample(t1: t, t2: t + roundTrip / 2 + offset, t3: t + roundTrip / 2 + offset, t4: t + roundTrip)
}

// MARK: - Tests

@Suite(.computeBound) struct ReferenceClockEstimatorTests {
    @Test func sampleArithmetic() {
        let s = ClockSample(t1: 10, t2: 110.02, t3: 110.03, t4: 10.06)
        #expect(abs(s.roundTrip - 0.05) < 1e-12)
        #expect(abs(s.offset - 99.995) < 1e-12)  // up 0.02, down 0.03: off by (0.02 - 0.03) / 2
    }

    @Test func noEstimateBeforeFirstSample() {
        #expect(ReferenceClockEstimator().estimate(atLocal: 5) == nil)
    }

    @Test func symmetricFixedDelayIsExact() throws {
        var net = SimulatedNetwork(up: 0.02, down: 0.02)
        var est = ReferenceClockEstimator()
        run(&est, on: &net, from: 1_000, until: 1_005) { s, est, net in
            let e = est.estimate(atLocal: s.t4)!
            #expect(abs(net.error(of: e, at: s.t4)) < 1e-9)
        }
        let e = try #require(est.estimate(atLocal: 1_005))
        #expect(abs(net.error(of: e, at: 1_005)) < 1e-9)
        #expect(abs(e.roundTrip - 0.04) < 1e-9)
        #expect(e.uncertainty >= 0.02 && e.uncertainty < 0.021)
        #expect(e.skew == 0)
    }

    @Test func asymmetricDelayErrsByHalfTheDifferenceWithinUncertainty() throws {
        var net = SimulatedNetwork(up: 0.005, down: 0.025)
        var est = ReferenceClockEstimator()
        run(&est, on: &net, from: 50, until: 80) { s, est, net in
            let e = est.estimate(atLocal: s.t4)!
            let err = net.error(of: e, at: s.t4)
            #expect(abs(err - (0.005 - 0.025) / 2) < 1e-9)
            #expect(abs(err) <= e.uncertainty)
        }
        let e = try #require(est.estimate(atLocal: 80))
        #expect(abs(e.roundTrip - 0.03) < 1e-9)
    }

    @Test(arguments: 1...20 as ClosedRange<UInt64>)
    func jitterStaysWithinUncertainty(seed: UInt64) throws {
        var net = SimulatedNetwork(
            skew: 20e-6, up: 0.05, down: 0.05, upJitter: 0.02, downJitter: 0.02, loss: 0.1,
            rng: SeededRandom(seed: seed))
        var est = ReferenceClockEstimator()
        var worst = 0.0
        run(&est, on: &net, from: 0, until: 240) { s, est, net in
            for t in [s.t4, s.t4 + 0.5, s.t4 + 5] {
                let e = est.estimate(atLocal: t)!
                let err = abs(net.error(of: e, at: t))
                #expect(err <= e.uncertainty)
                worst = max(worst, err)
            }
        }
        #expect(worst > 0.001)  // the jitter really was there
        #expect(worst < 0.02)
    }

    /// Jitter is queueing and rarely the same both ways (here a congested uplink): the mean of
    /// the offsets inherits half the difference in average delay; each direction's floor does not.
    @Test(arguments: 1...5 as ClosedRange<UInt64>)
    func floorsBeatTheMeanOfOffsets(seed: UInt64) throws {
        var net = SimulatedNetwork(
            up: 0.05, down: 0.035, upJitter: 0.02, downJitter: 0.005, rng: SeededRandom(seed: seed))
        var est = ReferenceClockEstimator()
        var floorError = 0.0
        var meanError = 0.0
        var steps = 0
        run(&est, on: &net, from: 0, until: 120) { s, est, net in
            guard est.recentSamples.count >= 16 else { return }
            let window = est.recentSamples.suffix(16)
            let mean = window.reduce(0) { $0 + $1.offset } / Double(window.count)
            floorError += abs(net.error(of: est.estimate(atLocal: s.t4)!, at: s.t4))
            meanError += abs(s.t4 + mean - net.reference(atLocal: s.t4))
            steps += 1
        }
        #expect(steps > 90)
        #expect(floorError / Double(steps) < 0.001)
        #expect(meanError / Double(steps) > 0.005)
    }

    @Test func lossAndGarbageAreRejectedWithoutEffect() throws {
        var net = SimulatedNetwork(up: 0.03, down: 0.04, upJitter: 0.01, downJitter: 0.01, loss: 0.5)
        var est = ReferenceClockEstimator()
        let sent = run(&est, on: &net, from: 0, until: 30) { s, est, net in
            let e = est.estimate(atLocal: s.t4)!
            #expect(abs(net.error(of: e, at: s.t4)) <= e.uncertainty)
        }
        #expect(est.sampleCount < sent - 5)  // the loss really happened
        #expect(est.sampleCount > 5)

        let before = est
        let garbage = [
            ClockSample(t1: 30, t2: .nan, t3: 130, t4: 30.1),
            ClockSample(t1: 30, t2: 130, t3: .infinity, t4: 30.1),
            ClockSample(t1: 30, t2: 130, t3: 130, t4: 29.9),  // t4 < t1
            ClockSample(t1: 30, t2: 130, t3: 130.5, t4: 30.1),  // server "took" longer than the round trip
            ClockSample(t1: 30, t2: 130, t3: 129.9, t4: 30.1),  // t3 < t2
            ClockSample(t1: -.infinity, t2: 130, t3: 130, t4: 30.1),
            sample(at: -100, roundTrip: 0.000_1),  // older than maxSampleAge: stale
        ]
        for g in garbage {
            #expect(est.add(g) == false)
        }
        #expect(est.sampleCount == before.sampleCount)
        #expect(est.recentSamples == before.recentSamples)
        #expect(est.estimate(atLocal: 31) == before.estimate(atLocal: 31))
        #expect(est.estimate(atLocal: 31) != nil)
    }

    @Test(arguments: 1...10 as ClosedRange<UInt64>)
    func skewIsLearnedAndCarriesTheOffsetForward(seed: UInt64) throws {
        let trueSkew = 50e-6
        var net = SimulatedNetwork(
            skew: trueSkew, up: 0.01, down: 0.01, upJitter: 0.003, downJitter: 0.003, loss: 0.05,
            rng: SeededRandom(seed: seed))
        var est = ReferenceClockEstimator()
        run(&est, on: &net, from: 500, until: 510)
        #expect(est.estimate(atLocal: 510)!.skew == 0)  // not enough spread yet

        var last = 0.0
        run(&est, on: &net, from: 510, until: 800) { s, est, net in
            last = s.t4
            let e = est.estimate(atLocal: s.t4)!
            #expect(abs(net.error(of: e, at: s.t4)) <= e.uncertainty)
            #expect(abs(e.skew - trueSkew) <= e.skewUncertainty)
        }
        let now = try #require(est.estimate(atLocal: last))
        #expect(abs(now.skew - trueSkew) < 5e-6)
        #expect(now.skewUncertainty < est.configuration.maxSkewError)

        // 30 s without a reply: extrapolate with the skew.
        let later = try #require(est.estimate(atLocal: last + 30))
        let err = net.error(of: later, at: last + 30)
        #expect(abs(err) <= later.uncertainty)
        #expect(later.uncertainty > now.uncertainty)
        #expect(abs(later.uncertainty - now.uncertainty(atLocal: last + 30)) < 1e-9)
        // Ignoring skew would be off by ~1.5 ms here; fitting it keeps us near the sample error.
        #expect(abs(err - net.error(of: now, at: last)) < 0.000_3)
    }

    /// One badly lopsided exchange (200 ms up, 1 ms down) reads an offset 99.5 ms high, yet its
    /// interval still holds the truth: it moves neither the offset nor the skew fit.
    @Test(arguments: [25.0, 45.0])
    func aLopsidedSampleMovesNothing(at lopsided: Double) throws {
        var est = ReferenceClockEstimator()
        for t in stride(from: 0.0, through: 39, by: 1) {
            #expect(est.add(sample(at: t, roundTrip: 0.002)) == true)
        }
        let t = lopsided
        #expect(est.add(ClockSample(t1: t, t2: t + 100.2, t3: t + 100.2, t4: t + 0.201)) == true)
        let now = 55.0
        let e = try #require(est.estimate(atLocal: now))
        #expect(abs(e.skew) < 1e-9)
        #expect(abs(e.reference(atLocal: now) - (now + 100)) < 1e-9)
        #expect(abs(e.reference(atLocal: now) - (now + 100)) <= e.uncertainty)
    }

    @Test func referenceAndLocalAreInverses() {
        let e = ReferenceClockEstimate(
            offset: 1_234.5, anchorLocal: 100, skew: 50e-6, roundTrip: 0.01, uncertainty: 0.005,
            skewUncertainty: 1e-6)
        for local in [0.0, 100, 1_000, 86_400] {
            let r = e.reference(atLocal: local)
            #expect(abs(r - (local + 1_234.5 + 50e-6 * (local - 100))) < 1e-9)
            #expect(abs(e.local(atReference: r) - local) < 1e-9)
        }
    }

    @Test func probeScheduleBurstsThenSettles() {
        var est = ReferenceClockEstimator()
        let c = est.configuration
        for i in 0..<c.burstCount {
            #expect(est.nextProbe(after: 10) == 10 + c.burstInterval)
            #expect(est.add(sample(at: 10 + Double(i) * c.burstInterval, roundTrip: 0.02)) == true)
        }
        #expect(est.nextProbe(after: 10) == 10 + c.interval)
        est.reset()
        #expect(est.nextProbe(after: 10) == 10 + c.burstInterval)
    }

    @Test func windowEvictsByCount() throws {
        var est = ReferenceClockEstimator(configuration: .init(window: 16))
        let window = est.configuration.window
        #expect(est.add(sample(at: 100, roundTrip: 0.002)) == true)
        for i in 1..<window {
            #expect(est.add(sample(at: 100 + Double(i), roundTrip: 0.04)) == true)
        }
        #expect(abs(try #require(est.estimate(atLocal: 100 + Double(window))).roundTrip - 0.002) < 1e-9)
        #expect(est.add(sample(at: 100 + Double(window), roundTrip: 0.04)) == true)
        #expect(est.recentSamples.count == window)
        #expect(est.recentSamples.first?.t1 == 101)
        #expect(abs(try #require(est.estimate(atLocal: 100 + Double(window))).roundTrip - 0.04) < 1e-9)
        #expect(est.sampleCount == window + 1)
    }

    @Test func windowEvictsByAge() throws {
        var est = ReferenceClockEstimator()
        #expect(est.add(sample(at: 0, roundTrip: 0.002)) == true)
        #expect(est.add(sample(at: 59.9, roundTrip: 0.04)) == true)
        #expect(abs(try #require(est.estimate(atLocal: 60)).roundTrip - 0.002) < 1e-9)
        #expect(est.add(sample(at: 60.5, roundTrip: 0.04)) == true)
        #expect(est.recentSamples.map(\.t1) == [59.9, 60.5])
        #expect(abs(try #require(est.estimate(atLocal: 61)).roundTrip - 0.04) < 1e-9)
    }

    @Test func resetForgetsEverything() throws {
        var net = SimulatedNetwork(skew: 50e-6, up: 0.01, down: 0.01, upJitter: 0.002, downJitter: 0.002)
        var est = ReferenceClockEstimator()
        run(&est, on: &net, from: 0, until: 120)
        #expect(est.estimate(atLocal: 120)!.skew != 0)

        est.reset()
        #expect(est.sampleCount == 0)
        #expect(est.recentSamples.isEmpty)
        #expect(est.estimate(atLocal: 120) == nil)

        // A different server: nothing of the old one may leak in.
        var other = SimulatedNetwork(offset0: -5_000, up: 0.01, down: 0.01)
        run(&est, on: &other, from: 120, until: 125)
        let e = try #require(est.estimate(atLocal: 125))
        #expect(e.skew == 0)
        #expect(abs(other.error(of: e, at: 125)) < 1e-9)
    }
}
