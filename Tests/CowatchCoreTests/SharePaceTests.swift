import Testing

@testable import CowatchCore

/// Issue 25: a sharer's streams are paced fairly within its total and per-receiver caps.
@Suite("Streams: the sharer's fair pace")
struct SharePaceTests {
    /// A receiver in the simulation: sends `piece` bytes as soon as it is let (greedy), or one
    /// piece every `every` seconds (steady), from `from` until `until`.
    struct Sender {
        var name: String
        var piece: Int
        var every: Double? = nil
        var from = 0.0
        var until = Double.infinity
    }

    /// Runs `senders` against one pace for `seconds`; returns the bytes each sent in `measured`.
    func simulate(_ rate: SharingRate, _ senders: [Sender], seconds: Double, measured: ClosedRange<Double>? = nil) -> [String: Int] {
        var pace = SharePace(rate: rate)
        var next = senders.map(\.from)
        var sent: [String: Int] = [:]
        let measured = measured ?? 0...seconds
        while let index = next.indices.min(by: { next[$0] < next[$1] }), next[index] < seconds {
            let sender = senders[index]
            let now = next[index]
            guard now < sender.until else {
                next[index] = .infinity
                continue
            }
            let wait = pace.delay(for: sender.piece, to: sender.name, now: now)
            // The bytes go once the wait is over.
            if measured.contains(now + wait) { sent[sender.name, default: 0] += sender.piece }
            let allowed = now + wait
            if let every = sender.every {
                next[index] = max(allowed, now + every)
            } else {
                next[index] = allowed
            }
        }
        return sent
    }

    func near(_ value: Int, _ expected: Double, within fraction: Double = 0.1) -> Bool {
        abs(Double(value) - expected) <= expected * fraction
    }

    @Test("unlimited: nobody ever waits")
    func unlimited() {
        var pace = SharePace(rate: .unlimited)
        for step in 0..<1000 {
            #expect(pace.delay(for: 1 << 20, to: step.isMultiple(of: 2) ? "a" : "b", now: Double(step) * 0.001) == 0)
        }
    }

    @Test("one greedy receiver gets the total")
    func oneReceiver() {
        let sent = simulate(SharingRate(total: 1_000_000), [Sender(name: "a", piece: 65_536)], seconds: 20)
        #expect(near(sent["a"] ?? 0, 20_000_000, within: 0.05), "\(sent)")
    }

    @Test("greedy receivers share the total equally, whatever their piece sizes")
    func equalShares() {
        let senders = [Sender(name: "a", piece: 16_384), Sender(name: "b", piece: 65_536), Sender(name: "c", piece: 262_144)]
        let sent = simulate(SharingRate(total: 3_000_000), senders, seconds: 20, measured: 5...20)
        for name in ["a", "b", "c"] { #expect(near(sent[name] ?? 0, 15_000_000, within: 0.1), "\(name): \(sent)") }
        // 15 s at the total, plus a burst and a piece each at most.
        let bound: Int = 45_000_000 + 750_000 + 3 * 262_144
        let all: Int = sent.values.reduce(0, +)
        #expect(all <= bound, "\(sent)")
    }

    @Test("a receiver's cap holds below its fair part, and the total is never exceeded")
    func perReceiverCap() {
        let senders = [Sender(name: "a", piece: 65_536), Sender(name: "b", piece: 65_536)]
        let capped = simulate(SharingRate(total: 1_000_000, perReceiver: 200_000), senders, seconds: 20, measured: 5...20)
        for name in ["a", "b"] { #expect(near(capped[name] ?? 0, 3_000_000, within: 0.1), "\(name): \(capped)") }
        let capOnly = simulate(SharingRate(total: 0, perReceiver: 300_000), senders, seconds: 20, measured: 5...20)
        for name in ["a", "b"] { #expect(near(capOnly[name] ?? 0, 4_500_000, within: 0.1), "\(name): \(capOnly)") }
        // Caps above the fair part: the total decides.
        let loose = simulate(SharingRate(total: 1_000_000, perReceiver: 5_000_000), senders, seconds: 20, measured: 5...20)
        for name in ["a", "b"] { #expect(near(loose[name] ?? 0, 7_500_000, within: 0.1), "\(name): \(loose)") }
    }

    @Test("a steady receiver below its fair part is not slowed, and the greedy one takes what it leaves")
    func steadyAndGreedy() {
        let senders = [Sender(name: "greedy", piece: 65_536), Sender(name: "steady", piece: 65_536, every: 0.5)]
        let sent = simulate(SharingRate(total: 1_000_000), senders, seconds: 20, measured: 5...20)
        #expect(near(sent["steady"] ?? 0, 15 * 131_072, within: 0.1), "\(sent)")
        #expect(near(sent["greedy"] ?? 0, 15 * (1_000_000 - 131_072), within: 0.1), "\(sent)")
    }

    @Test("a receiver that stops asking leaves its part to the others")
    func leaving() {
        let senders = [Sender(name: "a", piece: 65_536), Sender(name: "b", piece: 65_536, until: 10)]
        let together = simulate(SharingRate(total: 1_000_000), senders, seconds: 20, measured: 3...10)
        #expect(near(together["a"] ?? 0, 3_500_000, within: 0.1), "\(together)")
        #expect(near(together["b"] ?? 0, 3_500_000, within: 0.1), "\(together)")
        let after = simulate(SharingRate(total: 1_000_000), senders, seconds: 20, measured: 12...20)
        #expect(near(after["a"] ?? 0, 8_000_000, within: 0.1), "\(after)")
        var pace = SharePace(rate: SharingRate(total: 1_000_000))
        _ = pace.delay(for: 1000, to: "a", now: 0)
        _ = pace.delay(for: 1000, to: "b", now: 0)
        #expect(pace.active(now: 0.5) == ["a", "b"])
        _ = pace.delay(for: 1000, to: "a", now: 5)
        #expect(pace.active(now: 5) == ["a"])
    }

    @Test("water-filling: small demands are met, the rest is shared")
    func fairLevel() {
        #expect(SharePace.fairLevel(total: 900, others: []) == 900)
        #expect(SharePace.fairLevel(total: 900, others: [.infinity, .infinity]) == 300)
        #expect(SharePace.fairLevel(total: 900, others: [100, .infinity]) == 400)
        #expect(SharePace.fairLevel(total: 900, others: [500, 500]) == 300)
        #expect(SharePace.fairLevel(total: 900, others: [100, 200]) == 600)
    }
}
