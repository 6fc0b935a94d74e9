import CowatchObserver
import CowatchTestSupport
import Testing

/// The frame observer's outlier analysis, on made-up frame instants.
struct FrameCadenceTests {
    /// Three players at 25 fps, player `i` showing each frame `offsets[i]` seconds after player 0,
    /// with `adjust(player, frame)` added to single instants; brackets of 1 ms.
    func shown(frames: Int = 100, offsets: [Double] = [0, 0.0003, -0.0002], adjust: (Int, Int) -> Double = { _, _ in 0 })
        -> [[Double: ShownFrame]]
    {
        offsets.indices.map { player in
            var frameAt: [Double: ShownFrame] = [:]
            for frame in 0..<frames {
                let position = Double(frame) * 0.04
                let key = (position * 1000).rounded() / 1000
                frameAt[key] = ShownFrame(at: 100 + position + offsets[player] + adjust(player, frame), bracket: 0.001)
            }
            return frameAt
        }
    }

    @Test func steadyPlayersHaveNoOutliers() {
        #expect(FrameCadence.outliers(shown: shown(), maxBracket: 0.002, rate: 1, threshold: 0.002).isEmpty)
    }

    @Test func oneLateFrameIsThatPlayersSingleFrame() throws {
        let late = shown { player, frame in player == 1 && frame == 50 ? 0.006 : 0 }
        let outliers = FrameCadence.outliers(shown: late, maxBracket: 0.002, rate: 1, threshold: 0.002)
        let outlier = try #require(outliers.first)
        #expect(outliers.count == 1)
        #expect(outlier.player == 1)
        #expect(abs(outlier.position - 2.0) < 1e-9)
        #expect(abs(outlier.offCadence - 0.006) < 1e-6)
        #expect(abs(outlier.skew - 0.0065) < 1e-6)  // 6.3 ms late against −0.2 ms
        #expect(abs(outlier.usualSkew - 0.0005) < 1e-6)
        #expect(outlier.isSingleFrame)
        #expect(FrameOutlierVerdict.of(outlier, nil) == .unexplained)
    }

    @Test func aPlayerThatMovesIsNoSingleFrame() {
        // Player 2 falls 3 ms behind from frame 50 on and stays there: sync, not one late frame.
        let moved = shown { player, frame in player == 2 && frame >= 50 ? 0.003 : 0 }
        let outliers = FrameCadence.outliers(shown: moved, maxBracket: 0.002, rate: 1, threshold: 0.002)
        #expect(outliers.count == 50)
        #expect(outliers.allSatisfy { !$0.isSingleFrame })
        #expect(outliers.allSatisfy { FrameOutlierVerdict.of($0, nil) == .playersMoved })
    }

    @Test func framesSeenLooselyAreLeftOut() {
        var late = shown { player, frame in player == 0 && frame == 30 ? 0.008 : 0 }
        late[0][1.2] = ShownFrame(at: late[0][1.2]!.at, bracket: 0.004)
        #expect(FrameCadence.outliers(shown: late, maxBracket: 0.002, rate: 1, threshold: 0.002).isEmpty)
    }

    @Test func verdictsNameTheFirstCauseSeen() throws {
        let late = shown { player, frame in player == 0 && frame == 40 ? 0.005 : 0 }
        let outlier = try #require(FrameCadence.outliers(shown: late, maxBracket: 0.002, rate: 1, threshold: 0.002).first)
        func cause(speed: Double? = nil, wait: Double = 0, steal: Double = 0) -> FrameOutlierCause {
            FrameOutlierCause(speedChangeBefore: speed, runQueueWait: wait, waitedMost: "mpv/vo", waitedMostFor: wait, steal: steal)
        }
        #expect(FrameOutlierVerdict.of(outlier, cause(speed: 0.01, wait: 0.005)) == .speedChange)
        #expect(FrameOutlierVerdict.of(outlier, cause(speed: 0.3, wait: 0.004)) == .waitedForCPU)
        #expect(FrameOutlierVerdict.of(outlier, cause(wait: 0.001, steal: 0.01)) == .steal)
        #expect(FrameOutlierVerdict.of(outlier, cause(wait: 0.001)) == .unexplained)
    }
}
