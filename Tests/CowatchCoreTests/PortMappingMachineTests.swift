import CowatchCore
import Testing

@Suite("Port mapping: asking the gateway, renewing, reporting")
struct PortMappingMachineTests {
    static let outside = IPAddressBytes(text: "5.5.5.1")!

    static func mapping(_ method: PortMappingProtocol, lease: Double = 3600, address: IPAddressBytes = outside) -> GatewayMapping {
        GatewayMapping(method: method, gateway: "192.168.77.1", externalAddress: address, externalPort: 7433, internalPort: 7433, lease: lease)
    }

    @Test("auto tries PCP, then NAT-PMP, then UPnP; the first mapping is reported and renewed at half its lease")
    func fallsBackInOrder() {
        var machine = PortMappingMachine(mode: .auto)
        #expect(machine.start(publicAddress: nil, now: 0) == [.attempt(.pcp, renewing: nil)])
        #expect(machine.attemptFinished(.noAnswer(method: .pcp), now: 1) == [.attempt(.natpmp, renewing: nil)])
        #expect(machine.attemptFinished(.refused(method: .natpmp, reason: "not authorised"), now: 2) == [.attempt(.upnp, renewing: nil)])
        let granted = Self.mapping(.upnp)
        #expect(machine.attemptFinished(.mapped(granted), now: 3) == [.report(.mapped(granted)), .wake(at: 1803)])
        #expect(machine.tick(now: 1000).isEmpty)
        // The renewal asks the protocol that worked first; an unchanged mapping is not re-reported.
        #expect(machine.tick(now: 1803) == [.attempt(.upnp, renewing: granted)])
        #expect(machine.attemptFinished(.mapped(granted), now: 1804) == [.wake(at: 3604)])
        #expect(machine.stop() == [.remove(granted)])
        #expect(machine.tick(now: 9999).isEmpty)
    }

    @Test("a router that forgot the mapping gets it again at the next renewal; one that stopped answering is reported, then asked again")
    func renewalFailure() {
        var machine = PortMappingMachine(mode: .only(.natpmp))
        _ = machine.start(publicAddress: nil, now: 0)
        let granted = Self.mapping(.natpmp, lease: 120)
        #expect(machine.attemptFinished(.mapped(granted), now: 0) == [.report(.mapped(granted)), .wake(at: 60)])
        #expect(machine.tick(now: 60) == [.attempt(.natpmp, renewing: granted)])
        #expect(machine.attemptFinished(.noAnswer(method: .natpmp), now: 62) == [.report(.noGateway(tried: [.natpmp])), .wake(at: 122)])
        #expect(machine.reachability == .noGateway(tried: [.natpmp]))
        // Nothing to remove: the mapping was lost.
        #expect(machine.tick(now: 122) == [.attempt(.natpmp, renewing: nil)])
        #expect(machine.attemptFinished(.mapped(granted), now: 123) == [.report(.mapped(granted)), .wake(at: 183)])
    }

    @Test("retries after failure wait longer each time, up to the maximum")
    func backoff() {
        var configuration = PortMappingMachine.Configuration()
        configuration.firstRetry = 10
        configuration.maxRetry = 35
        var machine = PortMappingMachine(mode: .only(.upnp), configuration: configuration)
        _ = machine.start(publicAddress: nil, now: 0)
        var now = 0.0
        var waits: [Double] = []
        for _ in 0..<5 {
            let actions = machine.attemptFinished(.noAnswer(method: .upnp), now: now)
            guard case .wake(let at) = actions.last else {
                Issue.record("no wake in \(actions)")
                return
            }
            waits.append(at - now)
            now = at
            #expect(machine.tick(now: now) == [.attempt(.upnp, renewing: nil)])
        }
        #expect(waits == [10, 20, 35, 35, 35])
    }

    @Test("a gateway behind carrier-grade NAT or another router is reported as such; its useless mapping is removed")
    func outsideNotPublic() throws {
        let cgnat = try #require(IPAddressBytes(text: "100.64.0.1"))
        var machine = PortMappingMachine(mode: .auto)
        _ = machine.start(publicAddress: nil, now: 0)
        let made = Self.mapping(.pcp, address: cgnat)
        #expect(machine.attemptFinished(.outsideNotPublic(cgnat, method: .pcp, mapping: made), now: 1)
            == [.remove(made), .report(.carrierGradeNAT(outside: cgnat, method: .pcp)), .wake(at: 3601)])
        #expect(machine.reachability.advice?.contains("VPS") == true)
        #expect(machine.stop().isEmpty)

        let home = try #require(IPAddressBytes(text: "192.168.1.20"))
        var behind = PortMappingMachine(mode: .only(.upnp))
        _ = behind.start(publicAddress: nil, now: 0)
        #expect(behind.attemptFinished(.outsideNotPublic(home, method: .upnp, mapping: nil), now: 1)
            == [.report(.doubleNAT(outside: home, method: .upnp)), .wake(at: 3601)])
    }

    @Test("a refusal is reported over silence: a gateway is there and said no")
    func refusalOverSilence() {
        var machine = PortMappingMachine(mode: .auto)
        _ = machine.start(publicAddress: nil, now: 0)
        _ = machine.attemptFinished(.noAnswer(method: .pcp), now: 0)
        _ = machine.attemptFinished(.noAnswer(method: .natpmp), now: 0)
        let last = machine.attemptFinished(.refused(method: .upnp, reason: "the router already forwards that port to another machine"), now: 0)
        #expect(last.first == .report(.refused(method: .upnp, reason: "the router already forwards that port to another machine")))
    }

    @Test("nothing is asked when this machine has a public address, or when mapping is off")
    func nothingToAsk() throws {
        let own = try #require(IPAddressBytes(text: "8.8.4.4"))
        var machine = PortMappingMachine(mode: .auto)
        #expect(machine.start(publicAddress: own, now: 0) == [.report(.direct(own))])
        #expect(machine.tick(now: 1e9).isEmpty)
        var off = PortMappingMachine(mode: .off)
        #expect(off.start(publicAddress: nil, now: 0) == [.report(.notAsked)])
        #expect(off.tick(now: 1e9).isEmpty)
    }

    @Test("a mapping that arrives after stop is removed at once; stray results are ignored")
    func lateResults() {
        var machine = PortMappingMachine(mode: .only(.pcp))
        _ = machine.start(publicAddress: nil, now: 0)
        #expect(machine.stop().isEmpty)
        let late = Self.mapping(.pcp)
        #expect(machine.attemptFinished(.mapped(late), now: 1) == [.remove(late)])
        var idle = PortMappingMachine(mode: .only(.pcp))
        #expect(idle.attemptFinished(.mapped(late), now: 1) == [.remove(late)])
    }

    @Test("a renewal granted by another protocol replaces the old mapping, which is removed")
    func methodChange() {
        var machine = PortMappingMachine(mode: .auto)
        _ = machine.start(publicAddress: nil, now: 0)
        let byPCP = Self.mapping(.pcp, lease: 100)
        _ = machine.attemptFinished(.mapped(byPCP), now: 0)
        #expect(machine.tick(now: 50) == [.attempt(.pcp, renewing: byPCP)])
        #expect(machine.attemptFinished(.refused(method: .pcp, reason: "no resources"), now: 50) == [.attempt(.natpmp, renewing: nil)])
        let byNATPMP = Self.mapping(.natpmp, lease: 100)
        #expect(machine.attemptFinished(.mapped(byNATPMP), now: 51) == [.remove(byPCP), .report(.mapped(byNATPMP)), .wake(at: 101)])
    }

    @Test("mode parsing: the five words, and a clear error otherwise")
    func modes() throws {
        #expect(try PortMappingMode(parsing: "auto") == .auto)
        #expect(try PortMappingMode(parsing: "OFF") == .off)
        #expect(try PortMappingMode(parsing: "natpmp") == .only(.natpmp))
        #expect(throws: CowatchError(.invalidConfiguration, "")) { try PortMappingMode(parsing: "upnp;rm -rf") }
    }

    @Test("the person's lines say where friends connect, or why they cannot, with what to do")
    func summaries() throws {
        let mapped = Reachability.mapped(Self.mapping(.upnp))
        #expect(mapped.summary(port: 7433) == "friends can reach this machine at 5.5.5.1:7433 (the router 192.168.77.1 forwards it by UPnP-IGD for 1 h, renewed while running)")
        #expect(mapped.advice == nil)
        let cgnat = Reachability.carrierGradeNAT(outside: try #require(IPAddressBytes(text: "100.64.0.1")), method: .natpmp)
        #expect(cgnat.summary(port: 7433).contains("carrier-grade NAT"))
        #expect(Reachability.noGateway(tried: [.pcp, .natpmp, .upnp]).summary(port: 7433).contains("PCP, NAT-PMP, UPnP-IGD"))
    }
}
