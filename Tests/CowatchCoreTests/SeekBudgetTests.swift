import Testing

@testable import CowatchCore

/// Issue 22, item 5 (seeks): group actions and stalls are budgeted per participant and per
/// address in a room, so identities that cost nothing to make (names from one address, each
/// within its own budget) cannot take over a room's playback.
@Suite("Seek budgets follow what an identity costs")
struct SeekBudgetTests: SequencerTesting {
    func join(_ sequencer: inout RoomSequencer, _ name: String, room: String = "r", from address: String, id: Int) {
        _ = sequencer.connected(id, address: address, now: 0)
        _ = sequencer.enter(.hello(.init(room: room, name: name, activity: Activity(url: "/films/night.mkv"))), from: id, now: 0)
    }

    /// Seeks each of `ids` sends once a second for `seconds`; how many the room applied.
    func seeksApplied(_ sequencer: inout RoomSequencer, ids: [Int], seconds: Int) -> Int {
        var count = 0
        var actionID = 0
        for second in 0..<seconds {
            for id in ids {
                actionID += 1
                let now = Double(second) + Double(id) / 1000
                let outputs = sequencer.received(.action(.init(id: actionID, kind: .seek, position: Double(actionID), from: 0)), from: id, now: now)
                if !applied(outputs, to: id).isEmpty { count += 1 }
            }
        }
        return count
    }

    func configuration() -> RoomSequencer.Configuration {
        var configuration = RoomSequencer.Configuration()
        configuration.admission.idleTimeout = 1e9
        configuration.maxMembersPerAddress = 64
        return configuration
    }

    @Test("30 names from one address, each seeking once a second, get the address's budget: not 30 people's")
    func oneAddressManyNames() {
        var sequencer = RoomSequencer(configuration: configuration())
        join(&sequencer, "alice", from: "198.51.100.1", id: 1)
        for id in 2...31 { join(&sequencer, "x\(id)", from: "203.0.113.9", id: id) }
        let applied = seeksApplied(&sequencer, ids: Array(2...31), seconds: 10)
        // Address budget: 10 at once, then 2 a second (about 28 in 10 s); each name alone would allow 10.
        #expect(applied <= 30, "\(applied) of 300 seeks applied")
        #expect(applied >= 20)
        // The attack as reported, with the shared budget lifted: every seek goes through.
        var lifted = configuration()
        lifted.admission.addressActionBurst = 1e9
        lifted.admission.addressActionRate = 1e9
        var open = RoomSequencer(configuration: lifted)
        join(&open, "alice", from: "198.51.100.1", id: 1)
        for id in 2...31 { join(&open, "x\(id)", from: "203.0.113.9", id: id) }
        #expect(seeksApplied(&open, ids: Array(2...31), seconds: 10) == 300)
    }

    @Test("the same names from 30 addresses each keep a participant's budget; alice's own seeks still go through")
    func manyAddresses() {
        var sequencer = RoomSequencer(configuration: configuration())
        join(&sequencer, "alice", from: "198.51.100.1", id: 1)
        for id in 2...31 { join(&sequencer, "x\(id)", from: "203.0.113.\(id)", id: id) }
        #expect(seeksApplied(&sequencer, ids: Array(2...31), seconds: 3) == 30 * 3)
        // A flood from one address leaves the others' budgets alone.
        var sequencer2 = RoomSequencer(configuration: configuration())
        join(&sequencer2, "alice", from: "198.51.100.1", id: 1)
        for id in 2...31 { join(&sequencer2, "x\(id)", from: "203.0.113.9", id: id) }
        _ = seeksApplied(&sequencer2, ids: Array(2...31), seconds: 5)
        let outputs = sequencer2.received(.action(.init(id: 9999, kind: .seek, position: 42, from: 0)), from: 1, now: 5.5)
        #expect(!applied(outputs, to: 1).isEmpty, "alice's seek was refused")
    }

    @Test("an address's budget in one room is not spent by the same address in another room")
    func perRoom() {
        var sequencer = RoomSequencer(configuration: configuration())
        for id in 1...10 { join(&sequencer, "x\(id)", from: "203.0.113.9", id: id) }
        join(&sequencer, "bob", room: "other", from: "203.0.113.9", id: 50)
        _ = seeksApplied(&sequencer, ids: Array(1...10), seconds: 3)
        let outputs = sequencer.received(.action(.init(id: 9999, kind: .seek, position: 42, from: 0)), from: 50, now: 3)
        #expect(!applied(outputs, to: 50).isEmpty)
    }

    @Test("the shared budgets: actions 10 then 2 a second, stalls 6 then one per 10 s; neither charged on a refusal; forgotten when full")
    func admissionBudgets() {
        var admission = ServerAdmission()
        for id in 1...8 { _ = admission.connected(id, address: "a", now: 0) }
        // Eight names with 5 each: the address's 10 come first.
        let actions = (1...8).flatMap { id in (0..<5).map { _ in id } }.filter { admission.allowAction(from: $0, in: "r", now: 0) }.count
        #expect(actions == 10)
        do { let result = admission.allowAction(from: 8, in: "r", now: 0.4); #expect(!result) }
        do { let result = admission.allowAction(from: 8, in: "r", now: 0.51); #expect(result) }
        let stalls = (1...8).filter { admission.allowStall(from: $0, in: "r", now: 0) }.count
        #expect(stalls == 6)
        do { let result = admission.allowStall(from: 7, in: "r", now: 9); #expect(!result) }
        do { let result = admission.allowStall(from: 7, in: "r", now: 10.01); #expect(result) }
        // A participant over its own budget does not spend the address's.
        var fresh = ServerAdmission()
        _ = fresh.connected(1, address: "a", now: 0)
        _ = fresh.connected(2, address: "a", now: 0)
        for _ in 0..<20 { _ = fresh.allowAction(from: 1, in: "r", now: 0) }
        let second = (0..<20).filter { _ in fresh.allowAction(from: 2, in: "r", now: 0) }.count
        #expect(second == 5)
    }
}
