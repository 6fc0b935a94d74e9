import Testing

@testable import CowatchCore

/// Cases of the room server's state machine (`RoomSequencer`) that `RoomSequencerTests` leaves
/// out: the second hello, full rooms, the participant-list schedule, leaving mid-seek, a speed
/// change during a seek hold, and events for unknown connections.
@Suite("Room sequencer, edge cases")
struct RoomSequencerEdgeTests: SequencerTesting {

    func errorCode(_ outputs: [Output], to id: Int) -> String? {
        messages(outputs, to: id).lazy.compactMap { if case .error(let code, _) = $0 { code } else { nil } }.first
    }

    @Test("a second hello is a protocol violation, and the room hears that participant leave")
    func secondHello() {
        var sequencer = room(["alice", "bob"])
        let outputs = sequencer.enter(.hello(.init(room: "other", name: "bob")), from: 2, now: 1)
        #expect(errorCode(outputs, to: 2) == "protocol-violation")
        #expect(outputs.last == .close(2))
        #expect(messages(outputs, to: 1) == [.notice(Notice(actor: "bob", action: .leave))])
        #expect(sequencer.snapshot() == ["r": [ParticipantInfo(name: "alice", state: "joined", role: .owner)]])
    }

    @Test("a full room, or one room too many, refuses the joiner with room-full")
    func roomFull() {
        var configuration = RoomSequencer.Configuration()
        configuration.maxParticipantsPerRoom = 2
        configuration.maxRooms = 1
        var sequencer = room(["alice", "bob"], configuration: configuration)
        sequencer.connected(3, now: 1)
        let crowded = sequencer.enter(.hello(.init(room: "r", name: "carol")), from: 3, now: 1)
        #expect(errorCode(crowded, to: 3) == "room-full")
        #expect(crowded.last == .close(3))
        #expect(messages(crowded, to: 1).isEmpty)
        sequencer.connected(4, now: 1)
        let elsewhere = sequencer.enter(.hello(.init(room: "s", name: "dave")), from: 4, now: 1)
        #expect(errorCode(elsewhere, to: 4) == "room-full")
        #expect(sequencer.snapshot().keys.sorted() == ["r"])
    }

    @Test("the participant list goes out every interval, with reports and ready states")
    func participantsSchedule() {
        var sequencer = room(["alice", "bob"])
        #expect(sequencer.nextDeadline() == 1)
        #expect(sequencer.tick(now: 0.99).isEmpty)
        _ = sequencer.received(.report(drift: 0.004, rtt: 0.03), from: 2, now: 0.5)
        let outputs = sequencer.tick(now: 1)
        let expected: [ParticipantInfo] = [
            ParticipantInfo(name: "alice", state: "joined", role: .owner), ParticipantInfo(name: "bob", state: "joined", drift: 0.004, rtt: 0.03),
        ]
        #expect(messages(outputs, to: 1) == [.participants(expected)])
        #expect(messages(outputs, to: 2) == [.participants(expected)])
        #expect(sequencer.nextDeadline() == 2)

        // During a seek hold, those who landed show as ready.
        _ = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 1.2)
        let hold = applied(sequencer.received(.action(.init(id: 2, kind: .seek, position: 50)), from: 1, now: 1.5), to: 1)[0]
        _ = sequencer.received(.ready(seq: hold.seq), from: 2, now: 1.6)
        #expect(sequencer.snapshot()["r"]?.map(\.state) == ["joined", "landed"])
    }

    @Test("the last straggler leaving completes the ready set and the group resumes")
    func leavingCompletesReadySet() {
        var sequencer = room(["alice", "bob"])
        _ = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 1)
        let hold = applied(sequencer.received(.action(.init(id: 2, kind: .seek, position: 50)), from: 1, now: 5), to: 1)[0]
        _ = sequencer.received(.ready(seq: hold.seq), from: 1, now: 5.1)
        let outputs = sequencer.disconnected(2, now: 5.3)
        #expect(messages(outputs, to: 1).first == .notice(Notice(actor: "bob", action: .leave)))
        let resume = applied(outputs, to: 1)
        #expect(resume.map(\.seq) == [hold.seq + 1])
        #expect(resume.first?.playing == true && resume.first?.position == 50 && resume.first?.holding == false)
    }

    @Test("a speed change during a seek hold keeps the hold; ready for the new seq resumes")
    func speedDuringHold() {
        var sequencer = room(["alice"])
        _ = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 1)
        let hold = applied(sequencer.received(.action(.init(id: 2, kind: .seek, position: 50)), from: 1, now: 5), to: 1)[0]
        let faster = applied(sequencer.received(.action(.init(id: 3, kind: .speed, rate: 1.5)), from: 1, now: 5.1), to: 1)[0]
        #expect(faster.seq == hold.seq + 1 && faster.holding && !faster.playing && faster.rate == 1.5)
        #expect(applied(sequencer.received(.ready(seq: hold.seq), from: 1, now: 5.2), to: 1).isEmpty)
        let resume = applied(sequencer.received(.ready(seq: faster.seq), from: 1, now: 5.3), to: 1)
        #expect(resume.first?.playing == true && resume.first?.rate == 1.5 && resume.first?.position == 50)
    }

    @Test("pause during a seek hold cancels the pending resume")
    func pauseCancelsResume() {
        var sequencer = room(["alice", "bob"])
        _ = sequencer.received(.action(.init(id: 1, kind: .play)), from: 1, now: 1)
        _ = sequencer.received(.action(.init(id: 2, kind: .seek, position: 50)), from: 1, now: 5)
        _ = sequencer.received(.action(.init(id: 3, kind: .pause, position: 50)), from: 2, now: 5.5)
        #expect(applied(sequencer.tick(now: 10), to: 1).isEmpty)
        #expect(sequencer.timeline(of: "r")?.playing == false)
    }

    @Test("events for unknown connections, and bye before hello, touch nothing else")
    func unknownConnections() {
        var sequencer = room(["alice"])
        #expect(sequencer.received(.action(.init(id: 1, kind: .play)), from: 99, now: 1).isEmpty)
        #expect(sequencer.receivedLine( Array("junk".utf8), from: 99, now: 1).isEmpty)
        #expect(sequencer.disconnected(99, now: 1).isEmpty)
        sequencer.connected(2, now: 1)
        #expect(sequencer.received(.bye, from: 2, now: 1) == [.close(2)])
        #expect(sequencer.snapshot() == ["r": [ParticipantInfo(name: "alice", state: "joined", role: .owner)]])
        #expect(sequencer.timeline(of: "r")?.seq == 0)
    }
}
