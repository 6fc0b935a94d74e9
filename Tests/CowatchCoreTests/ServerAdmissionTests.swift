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
        let burst = (0..<20).filter { _ in admission.allowAction(from: 1, now: 0) }.count
        #expect(burst == 5)
        do { let result = admission.allowAction(from: 1, now: 0.5); #expect(!result) }
        do { let result = admission.allowAction(from: 1, now: 1.01); #expect(result) }
        let stalls = (0..<10).filter { _ in admission.allowStall(from: 1, now: 0) }.count
        #expect(stalls == 3)
        do { let result = admission.allowStall(from: 1, now: 10); #expect(!result) }
        do { let result = admission.allowStall(from: 1, now: 20.01); #expect(result) }
    }

    @Test("a wrong secret is answered late, and an address that keeps guessing is locked out")
    func authFailures() {
        var admission = ServerAdmission()
        let wrong = CowatchError(.authFailed, "wrong secret")
        for id in 1...5 {
            #expect(admission.connected(id, address: "guesser", now: Double(id)) == nil)
            admission.authFailed(id, error: wrong, now: Double(id))
            #expect(admission.isRefused(id))
            #expect(admission.tick(now: Double(id) + 0.5).isEmpty)
            #expect(admission.tick(now: Double(id) + 1) == [.refuse(id, wrong)])
            admission.disconnected(id)
        }
        // Five failures within a minute: locked out for a while, others are not.
        do { let result = admission.connected(6, address: "guesser", now: 7); #expect(result?.code == .serverBusy) }
        do { let result = admission.connected(7, address: "friend", now: 7); #expect(result == nil) }
        do { let result = admission.connected(8, address: "guesser", now: 5 + 301); #expect(result == nil) }
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
