import Testing

@testable import CowatchCore

@Suite("Room sequencer")
struct RoomSequencerTests: SequencerTesting {

    @Test("joining sends welcome to the joiner and a join notice to everyone")
    func join() {
        var sequencer = room(["alice"])
        sequencer.connected(2, now: 1)
        let outputs = sequencer.enter(.hello(.init(room: "r", name: "bob")), from: 2, now: 1)
        guard case .welcome(let welcome) = messages(outputs, to: 2).first else {
            Issue.record("no welcome")
            return
        }
        #expect(welcome.participants.map(\.name) == ["alice", "bob"])
        #expect(messages(outputs, to: 1) == [.notice(Notice(actor: "bob", action: .join))])
        #expect(messages(outputs, to: 2).contains(.notice(Notice(actor: "bob", action: .join))))
    }

    @Test("a late joiner gets the playing timeline and nobody else gets a new one")
    func lateJoiner() {
        var sequencer = room(["alice", "bob"])
        _ = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 10)
        let playing = sequencer.timeline(of: "r")!
        sequencer.connected(3, now: 60)
        let outputs = sequencer.enter(.hello(.init(room: "r", name: "carol")), from: 3, now: 60)
        guard case .welcome(let welcome) = messages(outputs, to: 3).first else {
            Issue.record("no welcome")
            return
        }
        #expect(welcome.timeline == playing)
        #expect(applied(outputs, to: 1).isEmpty && applied(outputs, to: 2).isEmpty)
        #expect(sequencer.timeline(of: "r") == playing)
    }

    @Test("refusals: name taken, no common version, action before hello")
    func refusals() {
        var sequencer = room(["bob"])
        func expectRefused(_ id: Int, _ message: ClientMessage, code: String) {
            let outputs = sequencer.enter(message, from: id, now: 0)
            guard case .send(id, .error(let got, let text)) = outputs.first else {
                Issue.record("not refused: \(outputs)")
                return
            }
            #expect(got == code)
            #expect(!text.isEmpty)
            #expect(outputs.last == .close(id))
        }
        expectRefused(2, .hello(.init(room: "r", name: "bob")), code: "name-taken")
        expectRefused(3, .hello(.init(versions: 99...99, room: "r", name: "x")), code: "unsupported-version")
        expectRefused(4, .hello(.init(versions: 2...2, room: "r", name: "y")), code: "unsupported-version")
        expectRefused(5, .action(.init(id: 1, kind: .play)), code: "protocol-violation")
        #expect(sequencer.snapshot()["r"]?.map(\.name) == ["bob"])
    }

    @Test("a report, ready, status or media line from a connection still in its handshake is ignored, not refused")
    func housekeepingBeforeWelcome() {
        var sequencer = room(["bob"])
        _ = sequencer.connected(7, now: 0)
        let greeting = sequencer.received(.hello(.init(room: "r", name: "alice")), from: 7, now: 0)
        guard case .send(7, .challenge) = greeting.first else {
            Issue.record("no challenge: \(greeting)")
            return
        }
        // A daemon resuming after a lost link used to send these while its handshake ran.
        for message: ClientMessage in [
            .report(drift: 0.001, rtt: 0.002), .ready(seq: 1), .status(.init(ready: true)),
        ] {
            #expect(sequencer.received(message, from: 7, now: 0.5).isEmpty, "\(message)")
        }
        let welcome = sequencer.received(.auth(.init()), from: 7, now: 1)
        #expect(welcome.contains { if case .send(7, .welcome) = $0 { true } else { false } }, "\(welcome)")
        #expect(sequencer.snapshot()["r"]?.map(\.name).sorted() == ["alice", "bob"])
    }

    @Test("a garbage line closes only that connection, and the room hears it left")
    func garbage() {
        var sequencer = room(["alice", "bob"])
        let outputs = sequencer.receivedLine( Array("\u{0}garbage".utf8), from: 2, now: 1)
        #expect(outputs.contains(.close(2)))
        #expect(messages(outputs, to: 1) == [.notice(Notice(actor: "bob", action: .leave))])
        #expect(sequencer.snapshot()["r"]?.map(\.name) == ["alice"])
        let play = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 2)
        #expect(applied(play, to: 1).count == 1)
    }

    @Test("a flooding peer is cut off")
    func flood() {
        var configuration = RoomSequencer.Configuration()
        configuration.admission.floodBurst = 10
        configuration.admission.floodRate = 5
        var sequencer = room(["alice"], configuration: configuration)
        var closed = false
        for index in 0..<20 where !closed {
            let outputs = sequencer.received(.report(drift: 0, rtt: 0), from: 1, now: 1 + Double(index) * 0.001)
            closed = outputs.contains(.close(1))
            if closed { #expect(outputs.contains(.send(1, .error(code: "flooding", message: "more than 5 messages a second")))) }
        }
        #expect(closed)
    }

    @Test("pause snaps the group to the pauser's position, now")
    func pause() {
        var sequencer = room(["alice", "bob"])
        _ = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 10)
        let outputs = sequencer.received(.action(.init(id: 2, kind: .pause, position: 33.36)), from: 2, now: 40)
        let timeline = applied(outputs, to: 1).first
        #expect(timeline?.position == 33.36)
        #expect(timeline?.playing == false)
        #expect(timeline?.reference == 40)
        guard case .applied(_, let notice, let id, _) = messages(outputs, to: 2).first else {
            Issue.record("no applied for the pauser: \(outputs)")
            return
        }
        #expect(notice == Notice(actor: "bob", action: .pause, position: 33.36))
        #expect(id == 2)
        guard case .applied(_, _, let otherID, _) = messages(outputs, to: 1).first else {
            Issue.record("no applied for the other: \(outputs)")
            return
        }
        #expect(otherID == nil)
    }

    @Test("play is scheduled ahead by the lead: the floor, or twice the worst round trip plus margin")
    func playLead() {
        var sequencer = room(["alice", "bob"])
        var timeline = applied(sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 10), to: 2).first
        #expect(timeline?.reference == 10.12)
        _ = sequencer.received(.action(.init(id: 2, kind: .pause, position: 5)), from: 1, now: 11)
        _ = sequencer.received(.report(drift: 0, rtt: 0.2), from: 2, now: 11)
        timeline = applied(sequencer.received(.action(.init(id: 3, kind: .play)), from: 1, now: 12), to: 2).first
        #expect(abs((timeline?.reference ?? 0) - (12 + 2 * 0.2 + 0.03)) < 1e-9)
        #expect(timeline?.position == 5)
        #expect(timeline?.playing == true)
    }

    @Test("a seek while playing holds until everyone is ready, then resumes together")
    func seekHoldsUntilReady() {
        var sequencer = room(["alice", "bob"])
        _ = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 10)
        let seek = applied(sequencer.received(.action(.init(id: 2, kind: .seek, position: 90, from: 20)), from: 2, now: 20), to: 1).first!
        #expect(seek.holding && !seek.playing && seek.position == 90)
        #expect(applied(sequencer.received(.ready(seq: seek.seq), from: 1, now: 20.1), to: 1).isEmpty)
        #expect(applied(sequencer.received(.ready(seq: seek.seq - 1), from: 2, now: 20.1), to: 1).isEmpty)
        let resume = applied(sequencer.received(.ready(seq: seek.seq), from: 2, now: 20.2), to: 1).first
        #expect(resume?.playing == true && resume?.position == 90 && resume?.seq == seek.seq + 1)
        #expect(abs((resume?.reference ?? 0) - 20.32) < 1e-9)
    }

    @Test("the group stops waiting for a participant that never lands")
    func seekDeadline() {
        var sequencer = room(["alice", "bob"])
        _ = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 10)
        let seek = applied(sequencer.received(.action(.init(id: 2, kind: .seek, position: 90)), from: 1, now: 20), to: 1).first!
        _ = sequencer.received(.ready(seq: seek.seq), from: 1, now: 20.1)
        #expect((sequencer.nextDeadline() ?? .infinity) <= 22)
        #expect(applied(sequencer.tick(now: 21.9), to: 1).isEmpty)
        let resume = applied(sequencer.tick(now: 22.0), to: 2).first
        #expect(resume?.playing == true && resume?.position == 90)
    }

    @Test("concurrent actions get consecutive numbers and everyone sees the same order")
    func concurrentActions() {
        var sequencer = room(["alice", "bob", "carol"])
        var outputs: [Output] = []
        outputs += sequencer.received(.action(.init(id: 1, kind: .seek, position: 30)), from: 1, now: 5)
        outputs += sequencer.received(.action(.init(id: 1, kind: .speed, rate: 2)), from: 2, now: 5)
        outputs += sequencer.received(.action(.init(id: 1, kind: .play)), from: 3, now: 5)
        let seen = (1...3).map { applied(outputs, to: $0) }
        #expect(seen[0] == seen[1] && seen[1] == seen[2])
        #expect(seen[0].map(\.seq) == [1, 2, 3])
        #expect(seen[0].last?.rate == 2 && seen[0].last?.playing == true && seen[0].last?.position == 30)
    }

    @Test("speed is scheduled while playing and immediate while paused")
    func speed() {
        var sequencer = room(["alice"])
        let paused = applied(sequencer.received(.action(.init(id: 1, kind: .speed, rate: 1.5)), from: 1, now: 3), to: 1).first
        #expect(paused?.rate == 1.5 && paused?.reference == 3 && paused?.playing == false)
        _ = sequencer.received(.action(.init(id: 2, kind: .play)), from: 1, now: 4)
        let playing = applied(sequencer.received(.action(.init(id: 3, kind: .speed, rate: 0.5)), from: 1, now: 10), to: 1).first
        #expect(playing?.reference == 10.12)
        #expect(abs((playing?.position ?? 0) - 1.5 * (10.12 - 4.12)) < 1e-9)
    }

    @Test("leaving is announced; the last one out drops the room")
    func leave() {
        var sequencer = room(["alice", "bob"])
        let outputs = sequencer.disconnected(1, now: 5)
        #expect(messages(outputs, to: 2) == [.notice(Notice(actor: "alice", action: .leave))])
        #expect(sequencer.received(.bye, from: 2, now: 6).contains(.close(2)))
        #expect(sequencer.snapshot().isEmpty)
        // The empty room sleeps (its secret and roles kept) until the dormant memory runs out.
        #expect(sequencer.records["r"]?.dormantSince == 6)
        _ = sequencer.tick(now: 6 + sequencer.configuration.dormantRoomMemory)
        #expect(sequencer.records.isEmpty && sequencer.nextDeadline() == nil)
    }

    @Test("a room that no longer exists is restarted from where a returning participant's group was")
    func resumeAfterRestart() {
        var sequencer = RoomSequencer()
        // A stranger's resume (no token of this room) is ignored: the room starts afresh.
        let stranger = sequencer.enter(.hello(.init(room: "r", name: "x", resume: .init(position: 99, playing: true, rate: 2))), from: 9, now: 499)
        guard case .welcome(let fresh) = messages(stranger, to: 9).first else {
            Issue.record("no welcome")
            return
        }
        #expect(fresh.timeline == .initial(at: 499))
        _ = sequencer.disconnected(9, now: 499.5)
        _ = sequencer.tick(now: 499.5 + sequencer.configuration.dormantRoomMemory)
        // A participant with its token (kept from before the restart: same key) is believed.
        let token = SessionTokens(key: sequencer.configuration.tokenKey).issue(room: "r", name: "a")
        let outputs = sequencer.enter(.hello(.init(room: "r", name: "a", token: token, resume: .init(position: 42, playing: true, rate: 1.5))), from: 1, now: 500)
        guard case .welcome(let welcome) = messages(outputs, to: 1).first else {
            Issue.record("no welcome")
            return
        }
        #expect(welcome.timeline == GroupTimeline(seq: 0, position: 42, reference: 500, rate: 1.5, playing: true))
        // An existing room ignores a joiner's memory: joining never moves the others.
        sequencer.connected(2, now: 510)
        let second = sequencer.enter(.hello(.init(room: "r", name: "b", resume: .init(position: 1, playing: false, rate: 1))), from: 2, now: 510)
        guard case .welcome(let other) = messages(second, to: 2).first else {
            Issue.record("no welcome for the joiner: \(second)")
            return
        }
        #expect(other.timeline == welcome.timeline)
    }

    @Test("time requests are answered with the server clock, even before hello")
    func time() {
        var sequencer = RoomSequencer()
        sequencer.connected(1, now: 0)
        #expect(sequencer.received(.timeRequest(id: 3, t1: 7), from: 1, now: 99) == [.send(1, .timeReply(id: 3, t1: 7, t2: 99, t3: 99))])
    }
}
