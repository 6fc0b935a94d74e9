@testable import CowatchDaemon
import CowatchClient
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
            waitUntilMonotonic(instant)
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

    func threadCPUSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) * 1e-9
    }
}
