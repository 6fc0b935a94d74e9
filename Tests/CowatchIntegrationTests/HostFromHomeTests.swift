import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// A host at home behind a real router (miniupnpd in a network namespace) and a friend on the
/// "internet" namespace: the port is mapped, the invite names the router's outside address, the
/// friend joins through it, the mapping is renewed after the router forgets it and removed at
/// exit; without a router, or behind carrier-grade NAT, the report says so.
@Suite("Hosting from home: port mapping through a real router", .serialized, .enabled(if: HomeNetwork.available), .realProcesses)
struct HostFromHomeTests {
    /// `get_status`'s room.reachability.
    static func reachability(_ daemon: DaemonProcess) async throws -> ReachabilityStatus? {
        try await daemon.client().status().room?.reachability
    }

    static func waitReachability(_ daemon: DaemonProcess, timeout: Double = 20, _ predicate: (ReachabilityStatus) -> Bool) async throws -> ReachabilityStatus {
        let deadline = monotonicNow() + timeout
        var last: ReachabilityStatus?
        while monotonicNow() < deadline {
            last = try await reachability(daemon)
            if let last, predicate(last) { return last }
            await pause(0.1)
        }
        throw TestFailure("reachability not as expected in \(timeout) s; last: \(String(describing: last)); log: \(daemon.stderr)")
    }

    static func host(_ network: HomeNetwork, media: String, _ arguments: [String]) async throws -> DaemonProcess {
        try await DaemonProcess(
            name: "hana", media: media, extraArguments: ["--host", "7433", "--room", "movie", "--no-osd"] + arguments,
            launcher: network.launcher(network.home))
    }

    @Test("UPnP: the port is mapped, a friend on the internet joins through the invite, the mapping comes back after a router reboot and goes at exit")
    func upnpEvening() async throws {
        let network = try await HomeNetwork()
        defer { network.tearDownInBackground() }
        try await network.startRouter()
        let media = try await TestMedia.file(.audioVideo)
        let host = try await Self.host(network, media: media, ["--map-port", "upnp", "--map-lease", "30"])
        defer { host.terminateInBackground() }
        let mapped = try await Self.waitReachability(host) { $0.state == "mapped" }
        #expect(mapped.address == network.wanAddress)
        #expect(mapped.mapping?.method == "upnp")
        #expect(try await network.forwardings().contains { $0.contains("dport 7433") && $0.contains(network.homeAddress) })
        // The person was told, in words.
        #expect(host.stderr.contains("friends can reach this machine at \(network.wanAddress):7433"))

        // The invite names the router's outside address first, the LAN address after it.
        let link = try #require(try await host.client().request(.getInvite(host: nil))["invite"]?.stringValue)
        let invite = try Invite.parse(link)
        #expect(invite.host == network.wanAddress)
        #expect(invite.alternates.contains(Endpoint(host: network.homeAddress, port: 7433)))

        let friend = try await DaemonProcess(
            name: "finn", media: media, extraArguments: ["--join", link, "--no-osd"], launcher: network.launcher(network.internet))
        defer { friend.terminateInBackground() }
        try await friend.client().waitForStatus(timeout: 20) { $0.room?.session == "joined" }
        _ = try await friend.client().request(.play)
        // Both play, together (a generous bound: the drift tests measure how close).
        let together = try await host.client().waitForStatus(timeout: 10) { !$0.paused && ($0.position ?? 0) > 1 }
        let friendPosition = try await friend.client().status().position ?? -1
        #expect(abs(friendPosition - (together.position ?? 0)) < 1)

        // The router reboots and forgets: the renewal (at half the 30 s lease) maps it again.
        try await network.rebootRouter()
        #expect(try await network.forwardings().isEmpty)
        let deadline = monotonicNow() + 30
        while try await network.forwardings().isEmpty, monotonicNow() < deadline { await pause(0.25) }
        #expect(try await network.forwardings().contains { $0.contains("dport 7433") }, "not mapped again: \(host.stderr)")

        // A clean exit removes the mapping.
        #expect(await host.terminate() == 0)
        let left = try await network.forwardings()
        #expect(left.isEmpty, "left behind: \(left)")
    }

    @Test("NAT-PMP and PCP each map the port, say so, and remove it at exit", arguments: ["natpmp", "pcp"])
    func eachProtocol(method: String) async throws {
        let network = try await HomeNetwork()
        defer { network.tearDownInBackground() }
        try await network.startRouter()
        let host = try await Self.host(network, media: try await TestMedia.file(.audioVideo), ["--map-port", method, "--map-lease", "60"])
        defer { host.terminateInBackground() }
        let mapped = try await Self.waitReachability(host) { $0.state == "mapped" }
        #expect(mapped.mapping?.method == method)
        #expect(mapped.address == network.wanAddress)
        #expect(mapped.mapping.map { $0.lease >= 30 && $0.lease <= 60 } == true)
        #expect(try await network.forwardings().contains { $0.contains("dport 7433") })
        #expect(await host.terminate() == 0)
        #expect(try await network.forwardings().isEmpty)
    }

    @Test("without a router that answers, the report says so and what to do; the room works on the LAN")
    func noGateway() async throws {
        let network = try await HomeNetwork()
        defer { network.tearDownInBackground() }
        let host = try await Self.host(network, media: try await TestMedia.file(.audioVideo), [])
        defer { host.terminateInBackground() }
        let report = try await Self.waitReachability(host, timeout: 30) { $0.state != "checking" }
        #expect(report.state == "no-gateway")
        #expect(report.advice?.contains("UPnP") == true)
        #expect(host.stderr.contains("no router answered"))
        // The invite still comes, with the LAN address.
        let link = try #require(try await host.client().request(.getInvite(host: nil))["invite"]?.stringValue)
        #expect(try Invite.parse(link).host == network.homeAddress)
    }

    @Test("a router behind carrier-grade NAT: friends cannot reach this machine, and the report says why")
    func carrierGradeNAT() async throws {
        let network = try await HomeNetwork(wan: "100.64.0.1")
        defer { network.tearDownInBackground() }
        try await network.startRouter()
        let host = try await Self.host(network, media: try await TestMedia.file(.audioVideo), [])
        defer { host.terminateInBackground() }
        let report = try await Self.waitReachability(host, timeout: 30) { $0.state != "checking" }
        #expect(report.state == "carrier-grade-nat")
        #expect(report.summary.contains("100.64.0.1"))
        #expect(report.advice?.contains("VPN") == true)
        #expect(try await network.forwardings().isEmpty)
    }

    @Test("cowatch-server --map-port says on start whether friends can reach it, and removes the mapping at exit")
    func standaloneServer() async throws {
        let network = try await HomeNetwork()
        defer { network.tearDownInBackground() }
        try await network.startRouter()
        let directory = DaemonProcess.makeDirectory()
        let server = Process()
        let launcher = network.launcher(network.home)
        server.executableURL = URL(fileURLWithPath: launcher[0])
        server.arguments = Array(launcher.dropFirst()) + [
            try Binaries.path("cowatch-server"), "--listen", "0.0.0.0:7433", "--state-dir", directory, "--map-port", "natpmp",
        ]
        let output = directory + "/stdout"
        FileManager.default.createFile(atPath: output, contents: nil)
        server.standardOutput = FileHandle(forWritingAtPath: output)
        server.standardError = FileHandle(forWritingAtPath: directory + "/stderr")
        let serverExit = try server.start()
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let said = "cowatch-server: friends can reach this machine at \(network.wanAddress):7433"
        let deadline = monotonicNow() + 20
        var text = ""
        while monotonicNow() < deadline {
            text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            if text.contains(said) { break }
            await pause(0.1)
        }
        #expect(text.contains(said), "\(text)")
        #expect(try await network.forwardings().contains { $0.contains("dport 7433") })
        server.interrupt()
        await serverExit.wait(timeout: 20)
        #expect(serverExit.outcome?.status == 0)
        #expect(try await network.forwardings().isEmpty)
    }

    @Test("IPv6: PCP opens a pinhole in the router's firewall for the host's global address; a friend joins over IPv6; it closes at exit")
    func ipv6Pinhole() async throws {
        let network = try await HomeNetwork()
        defer { network.tearDownInBackground() }
        try await network.startRouter(ipv6: true)
        let media = try await TestMedia.file(.audioVideo)
        let host = try await Self.host(network, media: media, ["--map-port", "pcp", "--map-lease", "60"])
        defer { host.terminateInBackground() }
        let report = try await Self.waitReachability(host) { $0.ipv6?.state == "mapped" && $0.state == "mapped" }
        #expect(report.ipv6?.address == network.homeIPv6)
        #expect(try await network.pinholes().contains { $0.contains("dport 7433") })
        // The invite offers the opened IPv6 address among its alternates, first of them.
        let link = try #require(try await host.client().request(.getInvite(host: nil))["invite"]?.stringValue)
        var invite = try Invite.parse(link)
        #expect(invite.alternates.first == Endpoint(host: network.homeIPv6, port: 7433))
        // Over IPv6 alone: the friend reaches the host through the pinhole.
        invite.host = network.homeIPv6
        invite.alternates = []
        let friend = try await DaemonProcess(
            name: "finn", media: media, extraArguments: ["--join", invite.text, "--no-osd"], launcher: network.launcher(network.internet))
        defer { friend.terminateInBackground() }
        try await friend.client().waitForStatus(timeout: 20) { $0.room?.session == "joined" }
        #expect(await host.terminate() == 0)
        #expect(try await network.pinholes().isEmpty)
    }
}
