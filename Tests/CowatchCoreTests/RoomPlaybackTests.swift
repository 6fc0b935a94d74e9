import Testing

@testable import CowatchCore

/// The per-room playback machine on its own: no handshake, no admission, members added directly.
@Suite("Room playback machine")
struct RoomPlaybackTests {
    func room(_ names: [String]) -> RoomPlayback {
        var playback = RoomPlayback(activity: Activity(url: "a.mkv"), timeline: .initial(at: 0), now: 0)
        for (index, name) in names.enumerated() {
            _ = playback.join(index + 1, name: name, stallKey: "addr\(index)", role: index == 0 ? .owner : .member, status: .init(), now: 0)
        }
        return playback
    }

    func timelines(_ outputs: [RoomPlayback.Output], to id: Int) -> [GroupTimeline] {
        outputs.compactMap { if case .send(id, .applied(let timeline, _, _, _)) = $0 { timeline } else { nil } }
    }

    @Test("every member gets the same timeline; only the actor's echoes its id")
    func sequencing() {
        var playback = room(["a", "b", "c"])
        let outputs = playback.apply(.init(id: 7, kind: .play), from: 2, now: 10)
        let sent = (1...3).map { timelines(outputs, to: $0) }
        #expect(sent[0] == sent[1] && sent[1] == sent[2] && sent[0].count == 1)
        let echoed = outputs.compactMap { if case .send(let id, .applied(_, _, let actionID?, _)) = $0 { (id, actionID) } else { nil } }
        #expect(echoed.map(\.0) == [2] && echoed.map(\.1) == [7])
        #expect(playback.timeline.playing && playback.timeline.reference == 10.12)
    }

    @Test("a stall holds the playing group, bounded by the wait timeout, then it carries on")
    func stallBounded() {
        var playback = room(["a", "b"])
        _ = playback.apply(.init(id: 1, kind: .play), from: 1, now: 10)
        let held = playback.statusChanged(.init(stall: .buffering), of: 2, now: 20)
        #expect(timelines(held, to: 1).first?.holding == true)
        #expect(playback.tick(now: 24.9).allSatisfy { if case .send(_, .applied) = $0 { false } else { true } })
        let resumed = playback.tick(now: 25)
        #expect(timelines(resumed, to: 1).first?.playing == true)
    }

    @Test("a stall over budget, or in a newcomer's first seconds, never holds the group")
    func stallNotHeld() {
        var playback = room(["a", "b"])
        _ = playback.apply(.init(id: 1, kind: .play), from: 1, now: 10)
        let spent = playback.statusChanged(.init(stall: .buffering), of: 2, mayHold: false, now: 20)
        #expect(timelines(spent, to: 1).isEmpty && playback.timeline.playing)
        _ = playback.join(3, name: "late", stallKey: "addr9", role: .member, status: .init(), now: 30)
        let newcomer = playback.statusChanged(.init(stall: .buffering), of: 3, now: 31)
        #expect(timelines(newcomer, to: 1).isEmpty && playback.timeline.playing)
    }

    @Test("leaving ends a hold that waited only for the one who left")
    func leaveEndsHold() {
        var playback = room(["a", "b"])
        _ = playback.apply(.init(id: 1, kind: .play), from: 1, now: 10)
        _ = playback.statusChanged(.init(stall: .buffering), of: 2, now: 20)
        // a landed on the held frame; the group still waits for b …
        #expect(playback.landed(seq: playback.timeline.seq, from: 1, now: 20.2).isEmpty)
        // … until b leaves.
        let outputs = playback.leave(2, now: 21)
        #expect(timelines(outputs, to: 1).first?.playing == true)
        #expect(playback.memberIDs == [1])
    }

    @Test("roles show in the participant list")
    func roles() {
        var playback = room(["a", "b"])
        playback.setRole(.operator, of: 2)
        #expect(playback.participants().map(\.role) == [.owner, .operator])
    }

    @Test("a pause among near members is scheduled a round trip and a margin ahead, at the group's position then")
    func pauseScheduledAhead() {
        var playback = room(["a", "b", "c"])
        _ = playback.apply(.init(id: 1, kind: .play), from: 1, now: 10)  // plays from 0 at 10.12
        for (id, rtt) in [(1, 0.0003), (2, 0.001), (3, 0.0005)] { playback.report(drift: nil, rtt: rtt, from: id, now: 20) }
        let outputs = playback.apply(.init(id: 2, kind: .pause, position: 9.5), from: 2, now: 20)
        let paused = timelines(outputs, to: 3).first
        // Ahead by the largest round trip (1 ms) and the 2 ms margin; the pauser's frame (9.5) is
        // not where the group stops: its own player has not stopped either.
        #expect(paused?.playing == false)
        #expect(abs((paused?.reference ?? 0) - 20.003) < 1e-9)
        #expect(abs((paused?.position ?? 0) - (20.003 - 10.12)) < 1e-9)
        // The playing timeline still rules until then.
        #expect(abs(playback.timeline.position(at: 20.003) - (20.003 - 10.12)) < 1e-9)
    }

    @Test("a pause takes effect at once when a round trip is unknown or too long, at the pauser's frame")
    func pauseAtOnce() {
        for rtts in [[0.0003, nil], [0.0003, 0.01]] as [[Double?]] {
            var playback = room(["a", "b"])
            _ = playback.apply(.init(id: 1, kind: .play), from: 1, now: 10)
            for (index, rtt) in rtts.enumerated() { playback.report(drift: nil, rtt: rtt, from: index + 1, now: 20) }
            let paused = timelines(playback.apply(.init(id: 2, kind: .pause, position: 9.5), from: 1, now: 20), to: 2).first
            #expect(paused?.reference == 20 && paused?.position == 9.5 && paused?.playing == false)
        }
        // A group already paused is not paused ahead either.
        var still = room(["a"])
        still.report(drift: nil, rtt: 0.0003, from: 1, now: 5)
        let again = timelines(still.apply(.init(id: 1, kind: .pause, position: 3), from: 1, now: 6), to: 1).first
        #expect(again?.reference == 6 && again?.position == 3)
    }
}
