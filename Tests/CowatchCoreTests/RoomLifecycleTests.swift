import Testing

@testable import CowatchCore

/// The server side of issue 5: holds for stalled or unready participants (always bounded),
/// switching media, ending for everyone, different files.
@Suite("Room lifecycle: waiting, readiness, open, end, mismatch")
struct RoomLifecycleTests: SequencerTesting {
    func notices(_ outputs: [Output], to id: Int) -> [Notice] {
        messages(outputs, to: id).compactMap {
            switch $0 {
            case .notice(let notice): notice
            case .applied(_, let notice?, _, _): notice
            default: nil
            }
        }
    }

    /// alice (1) and bob (2), playing from 0 at t = 10 (scheduled 0.12 s ahead).
    func playing(configuration: RoomSequencer.Configuration = .init()) -> RoomSequencer {
        var sequencer = room(["alice", "bob"], configuration: configuration)
        _ = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 10)
        #expect(sequencer.timeline(of: "r")?.playing == true)
        return sequencer
    }

    @Test("a participant that stalls while playing holds everyone, who hear why; it resumes once it is back")
    func stallHolds() throws {
        var sequencer = playing()
        let outputs = sequencer.received(.status(.init(stall: .buffering)), from: 2, now: 20)
        let held = try #require(sequencer.timeline(of: "r"))
        #expect(!held.playing && held.holding)
        #expect(abs(held.position - (20 - 10.12)) < 1e-9)
        #expect(notices(outputs, to: 1) == [Notice(actor: "bob", action: .waiting, others: ["bob"], detail: "buffering")])
        #expect(applied(outputs, to: 2).count == 1)  // bob hears it too
        // alice lands on the held position; bob's cache refills, then he lands: play resumes.
        #expect(applied(sequencer.received(.ready(seq: held.seq), from: 1, now: 20.1), to: 1).isEmpty)
        #expect(applied(sequencer.received(.status(.init()), from: 2, now: 21), to: 1).isEmpty)  // back, not landed yet
        let resumed = applied(sequencer.received(.ready(seq: held.seq), from: 2, now: 21.2), to: 1)
        #expect(resumed.count == 1 && resumed[0].playing && resumed[0].position == held.position)
        #expect(resumed[0].reference > 21.2)  // scheduled, so everyone starts together
    }

    @Test("the wait is bounded: after waitTimeout the group goes on without the stalled one, and does not wait for it again for a while")
    func stallBounded() throws {
        var configuration = RoomSequencer.Configuration()
        configuration.waitTimeout = 4
        configuration.playback.giveUpCooldown = 30
        var sequencer = playing(configuration: configuration)
        _ = sequencer.received(.status(.init(stall: .buffering)), from: 2, now: 20)
        let seq = try #require(sequencer.timeline(of: "r")).seq
        _ = sequencer.received(.ready(seq: seq), from: 1, now: 20.1)
        #expect(applied(sequencer.tick(now: 23.9), to: 1).isEmpty)
        let outputs = sequencer.tick(now: 24)
        #expect(notices(outputs, to: 1) == [Notice(actor: "bob", action: .continued, others: ["bob"], detail: "buffering")])
        #expect(applied(outputs, to: 1).first?.playing == true)
        // Still slow 10 s later: no second hold within the cooldown…
        _ = sequencer.received(.status(.init()), from: 2, now: 30)
        let again = sequencer.received(.status(.init(stall: .buffering)), from: 2, now: 34)
        #expect(applied(again, to: 1).isEmpty)
        #expect(sequencer.timeline(of: "r")?.playing == true)
        // …but after it, the group waits for bob again.
        _ = sequencer.received(.status(.init()), from: 2, now: 60)
        let later = sequencer.received(.status(.init(stall: .buffering)), from: 2, now: 61)
        #expect(applied(later, to: 1).first?.holding == true)
    }

    @Test("a participant still loading (a late joiner) does not stop a group that plays")
    func loadingDoesNotHold() {
        var sequencer = playing()
        sequencer.connected(3, now: 20)
        _ = sequencer.enter(.hello(.init(room: "r", name: "carol", status: .init(stall: .loading))), from: 3, now: 20)
        let outputs = sequencer.received(.status(.init(stall: .loading)), from: 2, now: 21)
        #expect(applied(outputs, to: 1).isEmpty)
        #expect(sequencer.timeline(of: "r")?.playing == true)
    }

    @Test("\"don't wait for me\": a stall never holds the group")
    func dontWait() {
        var sequencer = playing()
        _ = sequencer.received(.status(.init(waitForMe: false)), from: 2, now: 15)
        let outputs = sequencer.received(.status(.init(stall: .buffering, waitForMe: false)), from: 2, now: 20)
        #expect(applied(outputs, to: 1).isEmpty)
        #expect(sequencer.timeline(of: "r")?.playing == true)
        #expect(sequencer.snapshot()["r"]?.last?.status == ParticipantStatus(stall: .buffering, waitForMe: false))
    }

    @Test("a stall while paused holds nothing; a play then waits for the stalled one")
    func playWaitsForStalled() throws {
        var sequencer = room(["alice", "bob"])
        #expect(applied(sequencer.received(.status(.init(stall: .loading)), from: 2, now: 5), to: 1).isEmpty)
        let outputs = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 6)
        let held = try #require(applied(outputs, to: 1).first)
        #expect(!held.playing && held.holding)
        #expect(notices(outputs, to: 2).map(\.action) == [.play, .waiting])
        #expect(notices(outputs, to: 2).last?.detail == "loading")
        _ = sequencer.received(.ready(seq: held.seq), from: 1, now: 6.1)
        _ = sequencer.received(.status(.init()), from: 2, now: 7)
        let resumed = applied(sequencer.received(.ready(seq: held.seq), from: 2, now: 7.1), to: 1)
        #expect(resumed.first?.playing == true)
    }

    @Test("play when everyone is ready: a play waits for readiness and says who is not ready")
    func readiness() throws {
        var configuration = RoomSequencer.Configuration()
        configuration.playWhenReady = true
        var sequencer = room(["alice", "bob"], configuration: configuration)
        let outputs = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 5)
        let held = try #require(applied(outputs, to: 1).first)
        #expect(held.holding && !held.playing)
        #expect(notices(outputs, to: 1).last == Notice(actor: "bob", action: .waiting, others: ["bob"], detail: "not ready"))
        _ = sequencer.received(.ready(seq: held.seq), from: 1, now: 5.1)
        _ = sequencer.received(.ready(seq: held.seq), from: 2, now: 5.1)
        #expect(sequencer.timeline(of: "r")?.holding == true)  // landed, but bob is not ready
        let ready = sequencer.received(.status(.init(ready: true)), from: 2, now: 6)
        #expect(notices(ready, to: 1).first == Notice(actor: "bob", action: .ready))
        #expect(applied(ready, to: 1).first?.playing == true)
        // alice's play made her ready, silently: the server knows it.
        #expect(sequencer.snapshot()["r"]?.first?.status.ready == true)
    }

    @Test("readiness is bounded too: after waitTimeout the play goes ahead without the unready")
    func readinessBounded() throws {
        var configuration = RoomSequencer.Configuration()
        configuration.playWhenReady = true
        configuration.waitTimeout = 3
        var sequencer = room(["alice", "bob", "carol"], configuration: configuration)
        _ = sequencer.received(.status(.init(ready: true)), from: 3, now: 1)
        let held = try #require(applied(sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 5), to: 1).first)
        for id in 1...3 { _ = sequencer.received(.ready(seq: held.seq), from: id, now: 5.1) }
        let outputs = sequencer.tick(now: 8)
        #expect(notices(outputs, to: 3) == [Notice(actor: "bob", action: .continued, others: ["bob"], detail: "not ready")])
        #expect(applied(outputs, to: 3).first?.playing == true)
    }

    @Test("without the policy, readiness is only information")
    func readinessInformational() {
        var sequencer = room(["alice", "bob"])
        let outputs = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 5)
        #expect(applied(outputs, to: 2).first?.playing == true)
        let unready = sequencer.received(.status(.init(ready: false)), from: 1, now: 6)
        #expect(notices(unready, to: 2) == [Notice(actor: "alice", action: .unready)])
        #expect(sequencer.timeline(of: "r")?.playing == true)
    }

    @Test("open switches the activity for everyone, holds at its start until all have loaded, then plays")
    func open() throws {
        var sequencer = playing()
        let next = Activity(url: "https://example.org/two.mkv", title: "Two", type: .watch, fallbackURL: "https://mirror.example.org/two.mkv")
        let outputs = sequencer.received(.action(.init(id: 9, kind: .open, activity: next)), from: 2, now: 30)
        let message = try #require(messages(outputs, to: 1).first)
        guard case .applied(let timeline, let notice, let actionID, let activity) = message else {
            Issue.record("expected applied, got \(message)")
            return
        }
        #expect(timeline.position == 0 && timeline.holding && !timeline.playing)
        #expect(notice == Notice(actor: "bob", action: .open, title: "Two"))
        #expect(actionID == nil)
        #expect(activity == Activity(id: 1, url: next.url, title: "Two", type: .watch, fallbackURL: "https://mirror.example.org/two.mkv", openedBy: "bob"))
        #expect(sequencer.activity(of: "r")?.id == 1)
        // Both load (stall: loading), then land at 0: the group starts together.
        _ = sequencer.received(.status(.init(stall: .loading)), from: 1, now: 30.1)
        _ = sequencer.received(.status(.init(stall: .loading)), from: 2, now: 30.1)
        _ = sequencer.received(.status(.init()), from: 1, now: 31)
        _ = sequencer.received(.ready(seq: timeline.seq), from: 1, now: 31.1)
        #expect(sequencer.timeline(of: "r")?.holding == true)
        _ = sequencer.received(.status(.init()), from: 2, now: 32)
        let started = applied(sequencer.received(.ready(seq: timeline.seq), from: 2, now: 32.1), to: 1)
        #expect(started.first?.playing == true && started.first?.position == 0)
    }

    @Test("open is bounded by openTimeout: one who cannot load does not keep the others waiting")
    func openBounded() throws {
        var configuration = RoomSequencer.Configuration()
        configuration.playback.openTimeout = 10
        var sequencer = playing(configuration: configuration)
        let outputs = sequencer.received(.action(.init(id: 1, kind: .open, activity: Activity(url: "https://example.org/b.mkv"))), from: 1, now: 30)
        let seq = try #require(applied(outputs, to: 1).first).seq
        _ = sequencer.received(.ready(seq: seq), from: 1, now: 31)
        let announced = sequencer.tick(now: 31)
        #expect(notices(announced, to: 1) == [Notice(actor: "bob", action: .waiting, others: ["bob"], detail: "getting there")])
        #expect(applied(sequencer.tick(now: 39.9), to: 1).isEmpty)
        let end = sequencer.tick(now: 40)
        #expect(notices(end, to: 1).map(\.action) == [.continued])
        #expect(applied(end, to: 1).first?.playing == true)
    }

    @Test("a late joiner is welcomed with the current activity")
    func lateJoinerActivity() {
        var sequencer = playing()
        _ = sequencer.received(.action(.init(id: 1, kind: .open, activity: Activity(url: "https://example.org/c.mkv", title: "C"))), from: 1, now: 30)
        sequencer.connected(3, now: 31)
        let outputs = sequencer.enter(.hello(.init(room: "r", name: "carol", activity: Activity(url: "/mine.mkv"))), from: 3, now: 31)
        guard case .welcome(let welcome) = messages(outputs, to: 3).first else {
            Issue.record("no welcome")
            return
        }
        #expect(welcome.activity.url == "https://example.org/c.mkv" && welcome.activity.id == 1 && welcome.activity.openedBy == "alice")
    }

    @Test("end: everyone hears who ended it, every connection closes, the room is gone")
    func end() {
        var sequencer = playing()
        let outputs = sequencer.received(.end(), from: 1, now: 40)
        for id in 1...2 {
            #expect(messages(outputs, to: id) == [.ended(by: "alice")])
            #expect(outputs.contains(.close(id)))
        }
        #expect(sequencer.snapshot().isEmpty)
        #expect(sequencer.disconnected(1, now: 40.1).isEmpty)  // the shell's close notifications are no-ops
        // Joining again makes a fresh room, paused at the start.
        sequencer.connected(5, now: 41)
        _ = sequencer.enter(.hello(.init(room: "r", name: "alice")), from: 5, now: 41)
        #expect(sequencer.timeline(of: "r") == .initial(at: 41))
    }

    @Test("different files are announced to everyone, naming who differs; the same file is not")
    func mismatch() {
        var sequencer = room(["alice", "bob", "carol"])
        #expect(sequencer.received(.media(activity: 0, MediaInfo(duration: 75, size: 3_479_339, hash: "aa")), from: 1, now: 1).isEmpty)
        #expect(sequencer.received(.media(activity: 0, MediaInfo(duration: 75.2, size: 3_479_339, hash: "aa")), from: 3, now: 1).isEmpty)
        let outputs = sequencer.received(.media(activity: 0, MediaInfo(duration: 60, size: 2_000_000, hash: "bb")), from: 2, now: 1)
        let expected = Notice(
            actor: "bob", action: .mismatch, others: ["alice"], detail: "duration 0:01:00 vs 0:01:15, size 1.9 MiB vs 3.3 MiB")
        for id in 1...3 { #expect(notices(outputs, to: id) == [expected]) }
        // Said once per pair: bob reporting again says nothing more.
        #expect(sequencer.received(.media(activity: 0, MediaInfo(duration: 60, size: 2_000_000, hash: "bb")), from: 2, now: 1.5).isEmpty)
        // Sizes that read the same rounded are told in bytes.
        #expect(MediaInfo(size: 3_479_340).differences(from: MediaInfo(size: 3_479_339)) == ["size 3479340 bytes vs 3479339 bytes"])
        // A report for an activity the room has moved past is ignored.
        #expect(sequencer.received(.media(activity: 7, MediaInfo(duration: 1)), from: 3, now: 2).isEmpty)
    }

    @Test("a viewer that stalls again and again is given up on, instead of stuttering everyone's film")
    func repeatedStalls() throws {
        var sequencer = playing()
        var t = 20.0
        for round in 0..<3 {
            let held = applied(sequencer.received(.status(.init(stall: .buffering)), from: 2, now: t), to: 1)
            #expect(held.first?.holding == true, "stall \(round + 1) holds")
            _ = sequencer.received(.ready(seq: held[0].seq), from: 1, now: t + 0.1)
            _ = sequencer.received(.status(.init()), from: 2, now: t + 1)
            let resumed = applied(sequencer.received(.ready(seq: held[0].seq), from: 2, now: t + 1.1), to: 1)
            #expect(resumed.first?.playing == true)
            t += 5
        }
        // The fourth stall within a minute: no hold, a notice, and no waiting for bob for a while.
        let fourth = sequencer.received(.status(.init(stall: .buffering)), from: 2, now: t)
        #expect(applied(fourth, to: 1).isEmpty)
        #expect(notices(fourth, to: 1) == [Notice(actor: "bob", action: .continued, others: ["bob"], detail: "keeps stalling")])
        _ = sequencer.received(.status(.init()), from: 2, now: t + 1)
        #expect(applied(sequencer.received(.status(.init(stall: .buffering)), from: 2, now: t + 2), to: 1).isEmpty)
    }

    @Test("a seek during an open's hold keeps the open's longer bound")
    func seekDuringOpen() throws {
        var sequencer = playing()
        _ = sequencer.received(.action(.init(id: 1, kind: .open, activity: Activity(url: "https://example.org/b.mkv"))), from: 1, now: 30)
        _ = sequencer.received(.action(.init(id: 2, kind: .seek, position: 90, from: 0)), from: 1, now: 30.5)
        _ = sequencer.tick(now: 31)  // announcement and participant list
        #expect(applied(sequencer.tick(now: 33), to: 1).isEmpty, "the seek's 2 s did not cut the 15 s open wait")
        #expect(sequencer.timeline(of: "r")?.holding == true)
        #expect(applied(sequencer.tick(now: 45), to: 1).first?.playing == true)
    }

    @Test("a participant reconnecting into a room that just ended hears it ended instead of restarting it")
    func endedRoomStaysEnded() {
        var sequencer = playing()
        _ = sequencer.received(.end(), from: 1, now: 40)
        sequencer.connected(7, now: 41)
        let resume = ClientMessage.Hello.Resume(position: 30, playing: true, rate: 1)
        let outputs = sequencer.enter(.hello(.init(room: "r", name: "bob", resume: resume)), from: 7, now: 41)
        #expect(outputs == [.send(7, .ended(by: "alice")), .close(7)])
        #expect(sequencer.snapshot().isEmpty)
        // A fresh join (no resume) starts a new room; so does a reconnect once the end is old news.
        sequencer.connected(8, now: 42)
        _ = sequencer.enter(.hello(.init(room: "r", name: "carol")), from: 8, now: 42)
        #expect(sequencer.snapshot()["r"]?.count == 1)
    }

    @Test("the same participant reconnecting replaces its half-open old connection")
    func takeover() {
        var sequencer = playing()
        sequencer.connected(9, now: 50)
        let resume = ClientMessage.Hello.Resume(position: 40, playing: true, rate: 1)
        // The session token of its last welcome proves it is the same bob.
        let token = sequencer.joined[2]!.token
        let outputs = sequencer.enter(.hello(.init(room: "r", name: "bob", token: token, resume: resume)), from: 9, now: 50)
        #expect(outputs.contains(.close(2)))
        guard case .welcome = messages(outputs, to: 9).first else {
            Issue.record("no welcome for the reconnecting bob: \(outputs)")
            return
        }
        #expect(sequencer.snapshot()["r"]?.map(\.name) == ["alice", "bob"])
        // Without the token (a different person who picked the same name, resume or not) it is refused.
        sequencer.connected(10, now: 51)
        let clash = sequencer.enter(.hello(.init(room: "r", name: "bob", resume: resume)), from: 10, now: 51)
        #expect(clash.contains(.send(10, .error(code: "name-taken", message: ""))) || clash.contains { if case .send(10, .error(code: "name-taken", _)) = $0 { true } else { false } })
        #expect(clash.contains(.close(10)) && !clash.contains(.close(9)))
        // A token of another name, or another valid token of bob's (an earlier bob), proves nothing.
        let tokens = SessionTokens(key: sequencer.configuration.tokenKey)
        for (id, other) in [(11, tokens.issue(room: "r", name: "carol")), (12, tokens.issue(room: "r", name: "bob"))] {
            let stolen = sequencer.enter(.hello(.init(room: "r", name: "bob", token: other, resume: resume)), from: id, now: 52)
            #expect(stolen.contains(.close(id)) && !stolen.contains(.close(9)))
        }
    }

    @Test("a different file is named once per activity, not on every report")
    func mismatchOnce() {
        var sequencer = room(["alice", "bob"])
        _ = sequencer.received(.media(activity: 0, MediaInfo(duration: 75)), from: 1, now: 1)
        #expect(!notices(sequencer.received(.media(activity: 0, MediaInfo(duration: 60)), from: 2, now: 1), to: 1).isEmpty)
        #expect(sequencer.received(.media(activity: 0, MediaInfo(duration: 60)), from: 2, now: 5).isEmpty)
    }

    @Test("holds always end, whatever order events arrive in (no deadlock)", arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func noDeadlock(seed: UInt64) {
        var rng = SplitMix(seed: seed)
        var configuration = RoomSequencer.Configuration()
        configuration.playWhenReady = seed % 2 == 0
        var sequencer = room(["a", "b", "c", "d"], configuration: configuration)
        var now = 1.0
        var connected: Set<Int> = [1, 2, 3, 4]
        var nextID = 10
        let longest = max(configuration.waitTimeout, configuration.playback.openTimeout, configuration.playback.seekReadyTimeout)
        for _ in 0..<400 {
            now += Double(rng.next() % 400) / 1000
            guard let who = connected.randomElement(using: &rng) else { break }
            let seq = sequencer.timeline(of: "r")?.seq ?? 0
            let message: ClientMessage
            switch rng.next() % 11 {
            case 0: message = .action(.init(id: 1, kind: .play))
            case 1: message = .action(.init(id: 2, kind: .pause, position: 3))
            case 2: message = .action(.init(id: 3, kind: .seek, position: Double(rng.next() % 60)))
            case 3: message = .action(.init(id: 4, kind: .open, activity: Activity(url: "/x\(rng.next() % 3).mkv")))
            case 4: message = .status(.init(stall: StallReason.allCases.randomElement(using: &rng), ready: rng.next() % 2 == 0))
            case 5: message = .status(.init(stall: nil, ready: rng.next() % 2 == 0, waitForMe: rng.next() % 4 != 0))
            case 6, 7: message = .ready(seq: seq)
            case 8: message = .action(.init(id: 5, kind: .speed, rate: 1.5))
            case 9:
                // Someone drops out and somebody new comes in.
                _ = sequencer.disconnected(who, now: now)
                connected.remove(who)
                nextID += 1
                sequencer.connected(nextID, now: now)
                _ = sequencer.enter(.hello(.init(room: "r", name: "p\(nextID)")), from: nextID, now: now)
                connected.insert(nextID)
                continue
            default:
                _ = sequencer.tick(now: now)
                continue
            }
            _ = sequencer.received(message, from: who, now: now)
            // Whatever happened, a hold never outlives its bound.
            if let deadline = sequencer.nextDeadline() { #expect(deadline <= now + longest + 1e-9) }
        }
        // Everyone stalls forever and nobody answers: time alone still ends any hold.
        for id in connected { _ = sequencer.received(.status(.init(stall: .buffering)), from: id, now: now) }
        var t = now
        while t < now + longest + 1 {
            t += 0.25
            _ = sequencer.tick(now: t)
        }
        #expect(sequencer.timeline(of: "r")?.holding == false)
    }
}

/// A tiny deterministic generator for the order-of-events test.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
