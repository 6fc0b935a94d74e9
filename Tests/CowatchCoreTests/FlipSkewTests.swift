import CowatchObserver
import CowatchTestSupport
import Testing

/// Reading mpv's own frame flips (`--dump-stats`) and the skew between players' flips.
struct FlipSkewTests {
    @Test func flipsAreReadFromTheStatsFileAlone() {
        let text = """
            10043024 start video-flip
            10043025 end video-flip
            10043100 value 0.040000 frame-duration
            10083172 start video-flip
            10083190 start sleep
            garbage line
            """
        #expect(FlipSkew.flips(statsText: text) == [10.043024, 10.083172])
    }

    /// 25 fps from t = 100 s, shifted by `offset`, with `adjust(frame)` added.
    func cadence(offset: Double = 0, count: Int = 100, adjust: (Int) -> Double = { _ in 0 }) -> [Double] {
        (0..<count).map { 100 + offset + Double($0) * 0.04 + adjust($0) }
    }

    @Test func skewIsTheSpreadOfEachFramesFlips() {
        let flips = [cadence(), cadence(offset: 0.0004), cadence(offset: -0.0003) { $0 == 50 ? 0.002 : 0 }]
        let skews = FlipSkew.skews(flips, from: 100, to: 104)
        #expect(skews.count == 100)
        let usual = skews.filter { abs($0 - 0.0007) < 1e-9 }.count
        #expect(usual == 99)
        #expect(skews.contains { abs($0 - 0.0017) < 1e-9 })  // frame 50: 1.7 ms late against player 1's 0.4
        // Only frames in the window count.
        #expect(FlipSkew.skews(flips, from: 101, to: 102).count == 26)
    }

    @Test func aFrameSomePlayerDidNotShowIsLeftOut() {
        var missing = cadence(offset: 0.001)
        missing.remove(at: 10)
        missing.remove(at: 10)
        // Frames 10 and 11 have no flip within 20 ms in player 1 (its nearest are 40 ms away).
        #expect(FlipSkew.skews([cadence(), missing], from: 100, to: 104).count == 98)
    }

    @Test func offCadenceFindsTheOneLateFlipAndSkipsGaps() {
        let late = cadence { $0 == 40 ? 0.003 : 0 }
        let off = FlipSkew.offCadence(late, from: 0, to: 1000).map(\.off)
        #expect(off.count == 80)
        #expect(off.filter { abs($0) > 1e-6 }.count == 1)
        #expect(off.contains { abs($0 - 0.003) < 1e-9 })
        // A pause of a second after frame 50: the flips whose window spans it are not judged.
        let paused = cadence { $0 > 50 ? 1.0 : 0 }
        #expect(FlipSkew.offCadence(paused, from: 0, to: 1000).count == 60)
    }
}
