import Testing

@testable import CowatchCore

@Suite("Group session lifecycle")
struct GroupSessionMachineTests {
    /// A machine that has joined at time 0.
    func joined(onEnd: GroupSessionMachine.OnEnd = .keep) -> GroupSessionMachine {
        var machine = GroupSessionMachine(configuration: .init(onEnd: onEnd))
        let step1 = machine.connecting()
        #expect(step1)
        machine.welcomed()
        return machine
    }

    @Test("waiting, then joined on the welcome")
    func joins() {
        var machine = GroupSessionMachine()
        #expect(machine.state == .waiting)
        let step2 = machine.connecting()
        #expect(step2)
        #expect(machine.state == .waiting)
        machine.welcomed()
        #expect(machine.state == .joined)
        let step3 = machine.connecting()
        #expect(!step3)  // already in
    }

    @Test("leave: invalidated(left), stays out, join starts a new session at once")
    func leaveAndJoin() throws {
        var machine = joined()
        try machine.checkLeave()
        let step4 = machine.connectionEnded(.left, now: 10)
        #expect(step4 == .stayOut)
        #expect(machine.state == .invalidated(.left))
        #expect(machine.state.reason?.code == "left")
        #expect(throws: CowatchError(.notInRoom, "")) { try machine.checkLeave() }
        let step5 = try machine.join(now: 11)
        #expect(step5 == .connect(at: 11))
        #expect(machine.state == .waiting)
        let step6 = machine.connecting()
        #expect(step6)
        machine.welcomed()
        #expect(machine.state == .joined)
        let step7 = try machine.join(now: 12)
        #expect(step7 == nil)  // already joined: nothing to do
    }

    @Test("leave is refused unless joined")
    func leaveWhileWaiting() {
        let machine = GroupSessionMachine()
        #expect(throws: CowatchError(.notInRoom, "")) { try machine.checkLeave() }
    }

    @Test("end: invalidated(ended-by), then keep or quit as configured", arguments: GroupSessionMachine.OnEnd.allCases)
    func ended(onEnd: GroupSessionMachine.OnEnd) throws {
        var machine = joined(onEnd: onEnd)
        let next = machine.connectionEnded(.ended(by: "alice"), now: 5)
        #expect(next == (onEnd == .quit ? .quit : .stayOut))
        #expect(machine.state == .invalidated(.endedBy("alice")))
        #expect(machine.state.reason?.code == "ended-by")
        #expect(machine.state.reason?.detail == "alice")
        let step8 = machine.connecting()
        #expect(!step8)  // no reconnecting into an ended activity by itself
        let step9 = try machine.join(now: 6)
        #expect(step9 == .connect(at: 6))  // but a person may start again
    }

    @Test("server gone: invalidated(server-gone), reconnect with doubling backoff, reset once joined")
    func serverGone() {
        var machine = joined()
        let step10 = machine.connectionEnded(.lost, now: 100)
        #expect(step10 == .connect(at: 100.25))
        #expect(machine.state == .invalidated(.serverGone))
        let step11 = machine.connecting()
        #expect(step11)
        #expect(machine.state == .waiting)
        let step12 = machine.connectionEnded(.lost, now: 101)
        #expect(step12 == .connect(at: 101.5))
        let step13 = machine.connecting()
        #expect(step13)
        let step14 = machine.connectionEnded(.lost, now: 102)
        #expect(step14 == .connect(at: 103))
        let step15 = machine.connecting()
        #expect(step15)
        let step16 = machine.connectionEnded(.lost, now: 103)
        #expect(step16 == .connect(at: 105))
        let step17 = machine.connecting()
        #expect(step17)
        let step18 = machine.connectionEnded(.lost, now: 104)
        #expect(step18 == .connect(at: 106))  // capped at 2 s
        let step19 = machine.connecting()
        #expect(step19)
        machine.welcomed()
        let step20 = machine.connectionEnded(.lost, now: 200)
        #expect(step20 == .connect(at: 200.25))
    }

    @Test("a server never reached leaves the session waiting (not 'server gone'), retrying with backoff")
    func neverReached() {
        var machine = GroupSessionMachine()
        let r1 = machine.connecting()
        #expect(r1)
        let first = machine.connectionEnded(.lost, now: 10)
        #expect(first == .connect(at: 10.25))
        #expect(machine.state == .waiting)
        let r2 = machine.connecting()
        #expect(r2)
        let second = machine.connectionEnded(.lost, now: 11)
        #expect(second == .connect(at: 11.5))
        #expect(machine.state == .waiting)
        machine.welcomed()
        _ = machine.connectionEnded(.lost, now: 20)
        #expect(machine.state == .invalidated(.serverGone))
    }

    @Test("join while the server is gone retries now, without waiting out the backoff")
    func joinWhileGone() throws {
        var machine = joined()
        _ = machine.connectionEnded(.lost, now: 0)
        _ = machine.connecting()
        let whileConnecting = try machine.join(now: 1.1)
        #expect(whileConnecting == nil)  // waiting already: the loop is on it
        _ = machine.connectionEnded(.lost, now: 2)
        #expect(machine.state == .invalidated(.serverGone))
        let whileGone = try machine.join(now: 2.1)
        #expect(whileGone == .connect(at: 2.1))
    }

    @Test("first-join refusals that only a restart fixes stop the daemon with their reason", arguments: [
        CowatchError.Code.unsupportedVersion, .certificateMismatch, .unsafePath, .invalidInvite,
    ])
    func fatal(code: CowatchError.Code) {
        var machine = GroupSessionMachine()
        _ = machine.connecting()
        let error = CowatchError(code, "no")
        let step23 = machine.connectionEnded(.refused(error), now: 0)
        #expect(step23 == .stop(error))
        #expect(machine.state == .invalidated(.refused(code)))
        #expect(machine.state.reason?.code == code.rawValue)
        #expect(throws: CowatchError(.notInRoom, "")) { try machine.join(now: 1) }
    }

    @Test("removed by the server: invalidated(removed), stays out until join", arguments: [
        CowatchError.Code.flooding, .protocolViolation,
    ])
    func removed(code: CowatchError.Code) throws {
        var machine = joined()
        #expect(machine.connectionEnded(.refused(CowatchError(code, "out")), now: 0) == .stayOut)
        #expect(machine.state == .invalidated(.removed(code)))
        #expect(machine.state.reason?.code == "removed")
        #expect(machine.state.reason?.detail == code.rawValue)
        let step24 = machine.connectionEnded(.lost, now: 1)
        #expect(step24 == .stayOut)  // a late drop changes nothing
        let step25 = try machine.join(now: 2)
        #expect(step25 == .connect(at: 2))
    }

    @Test("every reason has a distinct stable code")
    func codes() {
        let reasons: [SessionEndReason] = [
            .left, .endedBy("a"), .removed(.flooding), .serverGone, .refused(.authFailed), .refused(.nameTaken),
        ]
        #expect(reasons.map(\.code) == ["left", "ended-by", "removed", "server-gone", "auth-failed", "name-taken"])
        #expect(SessionState.waiting.name == "waiting")
        #expect(SessionState.joined.name == "joined")
        #expect(SessionState.invalidated(.left).name == "invalidated")
    }

    @Test("a taken name or a full room on a rejoin leaves the daemon running, out of the room; join tries again", arguments: [
        CowatchError.Code.nameTaken, .roomFull,
    ])
    func refusedOnRejoin(code: CowatchError.Code) throws {
        var machine = joined()
        try machine.checkLeave()
        _ = machine.connectionEnded(.left, now: 1)
        let again = try machine.join(now: 2)
        #expect(again == .connect(at: 2))
        _ = machine.connecting()
        let error = CowatchError(code, "no")
        let next = machine.connectionEnded(.refused(error), now: 3)
        #expect(next == .stayOut)
        #expect(machine.state == .invalidated(.refused(code)))
        #expect(machine.state.reason?.code == code.rawValue)
        let retry = try machine.join(now: 4)
        #expect(retry == .connect(at: 4))
        _ = machine.connecting()
        machine.welcomed()
        #expect(machine.state == .joined)
    }

    @Test("a refusal on a reconnect that only a restart fixes leaves the daemon up, out of the room; join then says to restart it", arguments: [CowatchError.Code.unsupportedVersion, .invalidInvite])
    func restartOnlyOnReconnect(code: CowatchError.Code) {
        var machine = joined()
        _ = machine.connectionEnded(.lost, now: 0)
        _ = machine.connecting()
        let error = CowatchError(code, "no")
        #expect(machine.connectionEnded(.refused(error), now: 1) == .stayOut)
        #expect(machine.state == .invalidated(.refused(code)))
        #expect(throws: CowatchError(.notInRoom, "")) { try machine.join(now: 2) }
    }

    @Test("a refusal on the first join that only a restart fixes stops the daemon with the server's message")
    func refusedFirstJoin() {
        var machine = GroupSessionMachine(configuration: .init())
        _ = machine.connecting()
        let error = CowatchError(.unsupportedVersion, "this server speaks protocol 2")
        #expect(machine.connectionEnded(.refused(error), now: 1) == .stop(error))
    }

    @Test("a taken name, someone else's room (another secret) or a full room on the first join: up, out of the room; join tries again", arguments: [
        CowatchError.Code.nameTaken, .authFailed, .roomFull,
    ])
    func squattedFirstJoin(code: CowatchError.Code) throws {
        var machine = GroupSessionMachine(configuration: .init())
        _ = machine.connecting()
        #expect(machine.connectionEnded(.refused(CowatchError(code, "no")), now: 1) == .stayOut)
        #expect(machine.state == .invalidated(.refused(code)))
        let retry = try machine.join(now: 2)
        #expect(retry == .connect(at: 2))
        _ = machine.connecting()
        machine.welcomed()
        #expect(machine.state == .joined)
    }

    @Test("a changed secret on a reconnect leaves the daemon up, out of the room; join tries again")
    func authFailedOnReconnect() throws {
        var machine = joined()
        _ = machine.connectionEnded(.lost, now: 0)
        _ = machine.connecting()
        #expect(machine.connectionEnded(.refused(CowatchError(.authFailed, "wrong secret")), now: 1) == .stayOut)
        #expect(machine.state == .invalidated(.refused(.authFailed)))
        let retry = try machine.join(now: 2)
        #expect(retry == .connect(at: 2))
    }

    @Test("kicked: removed(kicked), the daemon stays up and may try to join again")
    func kicked() throws {
        var machine = joined()
        #expect(machine.connectionEnded(.refused(CowatchError(.kicked, "alice removed you")), now: 0) == .stayOut)
        #expect(machine.state == .invalidated(.removed(.kicked)))
        #expect(machine.state.reason?.detail == "kicked")
        #expect(try machine.join(now: 1) == .connect(at: 1))
        _ = machine.connecting()
        // Still kicked: out again, and still running.
        #expect(machine.connectionEnded(.refused(CowatchError(.kicked, "try again in 299 s")), now: 2) == .stayOut)
        #expect(machine.state == .invalidated(.removed(.kicked)))
    }
}
