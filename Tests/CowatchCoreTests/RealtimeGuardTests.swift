import CowatchCore
import Testing

@Suite struct RealtimeGuardTests {
    @Test func ordinaryLatenessChangesNothing() {
        var g = RealtimeGuard()
        for i in 0..<1000 { #expect(g.woke(lateness: Double(i % 60) / 1000, at: Double(i) * 0.1) == nil) }
        #expect(g.isRealtime)
        #expect(g.stepDowns == 0)
    }

    @Test func aStarvedTimerStepsDownOnceAndComesBackAfterCalm() {
        var g = RealtimeGuard(stepDownAbove: 0.2, returnBelow: 0.02, calmFor: 30)
        #expect(g.woke(lateness: 0.7, at: 10) == .stepDown)
        #expect(!g.isRealtime)
        // Still starved, or calm for less than calmFor: nothing more.
        #expect(g.woke(lateness: 0.9, at: 11) == nil)
        #expect(g.woke(lateness: 0.001, at: 12) == nil)
        #expect(g.woke(lateness: 0.001, at: 41.9) == nil)
        // A late wake in between restarts the calm.
        #expect(g.woke(lateness: 0.05, at: 42) == nil)
        #expect(g.woke(lateness: 0.001, at: 43) == nil)
        #expect(g.woke(lateness: 0.001, at: 72.9) == nil)
        #expect(g.woke(lateness: 0.001, at: 73) == .stepUp)
        #expect(g.isRealtime)
        #expect(g.woke(lateness: 0.3, at: 74) == .stepDown)
        #expect(g.stepDowns == 2)
    }
}
