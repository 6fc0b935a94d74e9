@testable import CowatchDaemon
import CowatchClient
import CowatchCore
import Foundation
import Testing

@Suite("Waiting for a start instant")
struct PreciseWaitTests {
    @Test("returns at the instant, never before it, and sleeps rather than spins until just before it")
    func waitsUntilTheInstant() {
        var lateness: [Double] = []
        var cpu: [Double] = []
        for _ in 0..<20 {
            let instant = monotonicNow() + 0.002
            let cpuBefore = threadCPUSeconds()
            SystemClock().waitPrecisely(until: instant)
            let returned = monotonicNow()
            cpu.append(threadCPUSeconds() - cpuBefore)
            #expect(returned >= instant)
            lateness.append(returned - instant)
        }
        // Generous, for a loaded CI machine: the point is "not a scheduler tick late".
        #expect(lateness.sorted()[10] < 0.002, "median lateness \(lateness.sorted()[10])")
        // A spin of the whole 2 ms would cost about 2 ms of CPU each time.
        #expect(cpu.sorted()[10] < 0.001, "median CPU per wait \(cpu.sorted()[10])")
    }

    @Test("a decision made ahead of its instant reads the player as it will be then")
    func sampleCarriedToTheInstant() {
        let playing = RoomCoordinator.PlayerSample(position: 10, at: 100, paused: false, speed: 1.25, seeking: false)
        let carried = RoomSession.carried(playing, to: 100.002)
        #expect(carried.at == 100.002)
        #expect(abs(carried.position - 10.0025) < 1e-12)
        // Paused, seeking or stalled, it stays where it stands.
        for still in [
            RoomCoordinator.PlayerSample(position: 10, at: 100, paused: true, speed: 1, seeking: false),
            RoomCoordinator.PlayerSample(position: 10, at: 100, paused: false, speed: 1, seeking: true),
            RoomCoordinator.PlayerSample(position: 10, at: 100, paused: false, speed: 1, seeking: false, stalled: true),
        ] {
            let moved = RoomSession.carried(still, to: 100.003)
            #expect(moved.position == 10 && moved.at == 100.003)
        }
    }

    func threadCPUSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) * 1e-9
    }
}
