import CowatchTestSupport
import Testing

@testable import CowatchCore

/// What keeps a big server cheap: deadlines in heaps (only due rooms are ticked) and participant
/// lists only when they say something new.
@Suite("Room server at scale: deadlines and participant lists")
struct RoomScaleTests: SequencerTesting {
    @Test("the deadline heap gives entries back in time order, only when due")
    func heapOrder() {
        var heap = DeadlineHeap<Int>()
        var random = SeededRandom(seed: 3)
        var times: [Double] = []
        for key in 0..<500 {
            let time = random.uniform(0, 100)
            times.append(time)
            heap.push(time, key)
        }
        #expect(heap.popDue(-1) == nil)
        var popped: [Double] = []
        while let entry = heap.popDue(50) { popped.append(entry.time) }
        #expect(popped == times.filter { $0 <= 50 }.sorted())
        #expect(heap.count == times.filter { $0 > 50 }.count)
        #expect(heap.first?.time == times.filter { $0 > 50 }.min())
    }

    @Test("drifts alone refresh the list every metrics interval; a status change goes out at the next check")
    func participantsOnChange() {
        var sequencer = room(["alice", "bob"])
        // The first check sends the list (it is new).
        #expect(messages(sequencer.tick(now: 1), to: 1).count == 1)
        // Reports alone: no list at the next checks…
        _ = sequencer.received(.report(drift: 0.004, rtt: 0.03), from: 2, now: 1.5)
        #expect(messages(sequencer.tick(now: 2), to: 1).isEmpty)
        #expect(messages(sequencer.tick(now: 3), to: 1).isEmpty)
        // …until the metrics interval (5 s) since the last list has passed.
        for now in [4.0, 5.0] { #expect(messages(sequencer.tick(now: now), to: 1).isEmpty) }
        let refreshed = messages(sequencer.tick(now: 6), to: 1)
        #expect(refreshed.count == 1)
        if case .participants(let list) = refreshed.first { #expect(list.last?.drift == 0.004) }
        // A status change is news: the next check sends it.
        _ = sequencer.received(.status(ParticipantStatus(ready: true)), from: 2, now: 6.2)
        let changed = messages(sequencer.tick(now: 7), to: 2).filter { if case .participants = $0 { true } else { false } }
        #expect(changed.count == 1)
        if case .participants(let list) = changed.first { #expect(list.last?.status.ready == true) }
        #expect(messages(sequencer.tick(now: 8), to: 1).isEmpty)
    }

    @Test("a thousand rooms: each list check comes due on time, once, with 5 ms ticks; none is missed or repeated")
    func manyRooms() {
        var configuration = RoomSequencer.Configuration()
        configuration.admission.idleTimeout = 1e9
        configuration.admission.maxPending = 5000
        configuration.admission.maxPendingPerAddress = 5000
        configuration.admission.maxConnectionsPerAddress = 5000
        configuration.admission.maxRoomsPerAddress = 5000
        configuration.maxRecordsPerAddress = 5000
        var sequencer = RoomSequencer(configuration: configuration)
        for index in 0..<1000 {
            // Joined at spread times: each room's list check falls at its own instant.
            _ = sequencer.enter(.hello(.init(room: "r\(index)", name: "p")), from: index + 1, now: Double(index) / 1000)
        }
        var listsPerRoom: [Int: Int] = [:]
        var now = 1.0
        while now < 4 {
            now += 0.005
            for output in sequencer.tick(now: now) {
                if case .send(let id, .participants) = output { listsPerRoom[id, default: 0] += 1 }
            }
        }
        // Every room had its first list; nothing changed after, so exactly one each.
        #expect(listsPerRoom.count == 1000)
        #expect(listsPerRoom.values.allSatisfy { $0 == 1 })
        #expect((sequencer.nextDeadline() ?? 0) > now)
    }
}
