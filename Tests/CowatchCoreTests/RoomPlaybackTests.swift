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
}
