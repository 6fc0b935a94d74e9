import CowatchTestSupport
import Testing

@testable import CowatchCore

@Suite("Server admission: caps, deadlines, budgets, cool-downs")
struct ServerAdmissionTests {
    @Test("connections are capped per address and in total; handshakes are capped apart")
    func caps() {
        var configuration = ServerAdmission.Configuration()
        configuration.maxConnectionsPerAddress = 3
        configuration.maxPendingPerAddress = 2
        configuration.maxConnections = 5
        var admission = ServerAdmission(configuration: configuration)
        do { let result = admission.connected(1, address: "a", now: 0); #expect(result == nil) }
        do { let result = admission.connected(2, address: "a", now: 0); #expect(result == nil) }
        // Two handshakes from "a" at once: a third waits until one is done.
        do { let result = admission.connected(3, address: "a", now: 0); #expect(result?.code == .serverBusy) }
        admission.joined(1, now: 0)
        do { let result = admission.connected(3, address: "a", now: 0); #expect(result == nil) }
        admission.joined(2, now: 0)
        admission.joined(3, now: 0)
        do { let result = admission.connected(4, address: "a", now: 0); #expect(result?.code == .serverBusy) }
        // Another address is not affected, up to the total.
        do { let result = admission.connected(5, address: "b", now: 0); #expect(result == nil) }
        do { let result = admission.connected(6, address: "c", now: 0); #expect(result == nil) }
        do { let result = admission.connected(7, address: "d", now: 0); #expect(result?.code == .serverFull) }
        admission.disconnected(1)
        do { let result = admission.connected(8, address: "d", now: 0); #expect(result == nil) }
    }

    @Test("a handshake not done in time, and a joined connection gone silent, expire")
    func deadlines() {
        var admission = ServerAdmission()
        _ = admission.connected(1, address: "a", now: 0)
        _ = admission.connected(2, address: "a", now: 0)
        admission.joined(2, now: 1)
        do { let result = admission.tick(now: 4.9); #expect(result.isEmpty) }
        do { let result = admission.tick(now: 5); #expect(result.map(\.id) == [1]) }
        admission.disconnected(1)
        _ = admission.received(from: 2, now: 20)
        do { let result = admission.tick(now: 49.9); #expect(result.isEmpty) }
        do { let result = admission.tick(now: 50); #expect(result.map(\.id) == [2]) }
        #expect(admission.nextDeadline() == 50)
    }

    @Test("a flooder is cut off, and its address cools down")
    func flood() {
        var configuration = ServerAdmission.Configuration()
        configuration.floodBurst = 10
        configuration.floodRate = 5
        var admission = ServerAdmission(configuration: configuration)
        _ = admission.connected(1, address: "evil", now: 0)
        var allowed = 0
        while admission.received(from: 1, now: 0.01) { allowed += 1 }
        #expect(allowed == 10)
        admission.disconnected(1)
        do { let result = admission.connected(2, address: "evil", now: 30); #expect(result?.code == .serverBusy) }
        do { let result = admission.connected(3, address: "friend", now: 30); #expect(result == nil) }
        do { let result = admission.connected(4, address: "evil", now: 61); #expect(result == nil) }
    }

    @Test("actions: a burst of 5, then one a second; stalls: 3, then one per 20 s")
    func budgets() {
        var admission = ServerAdmission()
        _ = admission.connected(1, address: "a", now: 0)
        let burst = (0..<20).filter { _ in admission.allowAction(from: 1, in: "r", now: 0) }.count
        #expect(burst == 5)
        do { let result = admission.allowAction(from: 1, in: "r", now: 0.5); #expect(!result) }
        do { let result = admission.allowAction(from: 1, in: "r", now: 1.01); #expect(result) }
        let stalls = (0..<10).filter { _ in admission.allowStall(from: 1, in: "r", now: 0) }.count
        #expect(stalls == 3)
        do { let result = admission.allowStall(from: 1, in: "r", now: 10); #expect(!result) }
        do { let result = admission.allowStall(from: 1, in: "r", now: 20.01); #expect(result) }
    }

    /// The messages of refusals (`CowatchError`'s == compares codes only).
    func refusalMessages(_ expiries: [ServerAdmission.Expiry]) -> [String] {
        expiries.map { if case .refuse(_, let error) = $0 { error.message } else { "" } }
    }

    @Test("a wrong secret is answered late; five in a minute lock out that name in that room from that address, saying so")
    func authFailures() {
        var admission = ServerAdmission()
        let wrong = CowatchError(.authFailed, "wrong secret")
        for id in 1...5 {
            #expect(admission.connected(id, address: "home", now: Double(id)) == nil)
            admission.authFailed(id, room: "r", name: "eve", error: wrong, now: Double(id))
            #expect(admission.isRefused(id))
            #expect(admission.tick(now: Double(id) + 0.5).isEmpty)
            let refusal = admission.tick(now: Double(id) + 1)
            #expect(refusal == [.refuse(id, wrong)])
            if id == 5 {
                // The fifth refusal says what now holds.
                #expect(refusalMessages(refusal) == ["wrong secret; too many wrong secrets for eve in room r from this address; try again in 60 s"])
            }
            admission.disconnected(id)
        }
        // The address itself is not locked: eve may connect, but may not try the secret as eve there.
        #expect(admission.connected(6, address: "home", now: 7) == nil)
        let lockout = admission.authLockout(of: 6, room: "r", name: "eve", now: 7)
        #expect(lockout?.code == .authFailed)
        #expect(lockout?.message == "too many wrong secrets for eve in room r from this address; try again in 58 s")
        // Not in another room, nor from another address.
        #expect(admission.authLockout(of: 6, room: "q", name: "eve", now: 7) == nil)
        #expect(admission.connected(7, address: "elsewhere", now: 7) == nil)
        #expect(admission.authLockout(of: 7, room: "r", name: "eve", now: 7) == nil)
        // Over after `authLockout`, and counted afresh: one more wrong secret does not lock again.
        #expect(admission.authLockout(of: 6, room: "r", name: "eve", now: 65) == nil)
        admission.authFailed(6, room: "r", name: "eve", error: wrong, now: 66)
        #expect(admission.authLockout(of: 6, room: "r", name: "eve", now: 67) == nil)
    }

    @Test("a household behind one address: one person's wrong secrets lock out nobody else there")
    func authFailuresHousehold() {
        var admission = ServerAdmission()
        let wrong = CowatchError(.authFailed, "wrong secret")
        // eve mistypes five times; bob and cat (same NAT) twice each.
        for (id, name) in zip(1..., Array(repeating: "eve", count: 5) + ["bob", "bob", "cat", "cat"]) {
            #expect(admission.connected(id, address: "home", now: Double(id)) == nil)
            admission.authFailed(id, room: "r", name: name, error: wrong, now: Double(id))
            _ = admission.tick(now: Double(id) + 1)
            admission.disconnected(id)
        }
        #expect(admission.authLockout(of: 0, room: "r", name: "eve", now: 11) == nil)  // no such connection
        for (id, name) in [(20, "fay"), (21, "bob"), (22, "cat")] {
            #expect(admission.connected(id, address: "home", now: 11) == nil, "\(name)")
            #expect(admission.authLockout(of: id, room: "r", name: name, now: 11) == nil, "\(name)")
        }
        #expect(admission.authLockout(of: 20, room: "r", name: "eve", now: 11)?.code == .authFailed)
    }

    @Test("a guesser cycling names is stopped at a flood of failures: then the whole address waits")
    func authFailureFlood() {
        var admission = ServerAdmission()
        let limit = admission.configuration.maxAuthFailuresPerAddress
        #expect(limit >= 20)  // sized for households: several people mistyping never reach it
        let wrong = CowatchError(.authFailed, "wrong secret")
        for attempt in 0..<limit {
            let now = Double(attempt)
            #expect(admission.connected(attempt + 1, address: "guesser", now: now) == nil, "attempt \(attempt)")
            admission.authFailed(attempt + 1, room: "r", name: "n\(attempt)", error: wrong, now: now)
            _ = admission.tick(now: now + 1)
            admission.disconnected(attempt + 1)
        }
        let last = Double(limit - 1)
        let locked = admission.connected(100, address: "guesser", now: last + 1)
        #expect(locked?.code == .serverBusy)
        #expect(locked?.message.contains("too many wrong room secrets from guesser") == true, "\(String(describing: locked))")
        #expect(admission.connected(101, address: "friend", now: last + 1) == nil)
        let lockout = admission.configuration.addressAuthLockout
        #expect(admission.connected(102, address: "guesser", now: last + lockout - 1)?.code == .serverBusy)
        #expect(admission.connected(103, address: "guesser", now: last + lockout + 1) == nil)
    }
}

@Suite("Report gate")
struct ReportGateTests {
    @Test("a daemon's once-a-second reports pass every other one, the first at once, whatever their jitter")
    func everyOther() {
        var gate = ReportGate()
        var random = SeededRandom(seed: 7)
        var passed: [Int] = []
        for second in 0..<60 {
            let jitter = Double(random.next() % 200) / 1000 - 0.1  // ±100 ms
            if gate.pass(at: Double(second) + jitter) { passed.append(second) }
        }
        #expect(passed.first == 0)
        #expect(passed.count == 30, "\(passed.count) of 60 passed")
        // Exactly every other one: lists stay fresh, the idle timeout far off.
        #expect(zip(passed, passed.dropFirst()).allSatisfy { $1 - $0 == 2 })
    }

    @Test("a flood of reports passes one per interval")
    func flood() {
        var gate = ReportGate()
        let passed = (0..<1000).filter { gate.pass(at: Double($0) * 0.01) }
        #expect(passed.first == 0 && passed.count == 7, "\(passed)")
        #expect(zip(passed, passed.dropFirst()).allSatisfy { (150...151).contains($1 - $0) }, "\(passed)")
    }
}
