import CowatchClient
import CowatchObserver
import Foundation

/// A home network, its router and the internet, as three network namespaces on this machine:
///
///     home (192.168.77.2) ── router (192.168.77.1 | WAN) ── internet (WAN .2)
///
/// The router forwards and masquerades the home's traffic and runs Debian's `miniupnpd`
/// (UPnP-IGD, NAT-PMP and PCP) over its own nftables tables, as a home router does. A WAN
/// address in 100.64.0.0/10 stands for a router behind the provider's carrier-grade NAT.
///
/// Needs root, `ip`, `nft` and `miniupnpd` (`available` says); tests that use it are
/// `.enabled(if: HomeNetwork.available)`. Threading: one test task per instance; its waits (the
/// `ip` and `nft` commands, the router's start) suspend the task, never block it (see `offPool`).
/// `tearDownInBackground()` (for a `defer`), `tearDown()` or deinit removes the namespaces and
/// stops the router.
public final class HomeNetwork {
    public let home: String
    public let gateway: String
    public let internet: String
    public let wanAddress: String
    public let homeAddress = "192.168.77.2"
    public let lanGateway = "192.168.77.1"
    /// IPv6 (documentation prefixes, routed; no NAT): the home's global address and its router.
    public let homeIPv6 = "2001:db8:77::2"
    public let lanGatewayIPv6 = "2001:db8:77::1"
    public let friendIPv6 = "2001:db8:55::2"
    public var friendAddress: String { wanPrefix + ".2" }
    private var wanPrefix: String { String(wanAddress[..<wanAddress.lastIndex(of: ".")!]) }
    private let directory: String
    private var router: Process?
    private var routerExit: ProcessExit?
    private var routerIPv6 = false

    /// True when namespaces and the router can be made here.
    public static var available: Bool {
        getuid() == 0 && ["/usr/sbin/miniupnpd", "/usr/sbin/nft", "/usr/sbin/ip", "/sbin/ip"].filter { FileManager.default.isExecutableFile(atPath: $0) }.count >= 3
    }

    public init(wan: String = "5.5.5.1") async throws {
        let tag = String(UUID().uuidString.prefix(6)).lowercased()
        home = "cwhome-\(tag)"
        gateway = "cwgw-\(tag)"
        internet = "cwnet-\(tag)"
        wanAddress = wan
        directory = DaemonProcess.makeDirectory()
        for namespace in [home, gateway, internet] {
            try await Self.run(["ip", "netns", "add", namespace])
            try await Self.run(["ip", "-n", namespace, "link", "set", "lo", "up"])
        }
        try await Self.run(["ip", "link", "add", "h0", "netns", home, "type", "veth", "peer", "name", "g0", "netns", gateway])
        try await Self.run(["ip", "link", "add", "g1", "netns", gateway, "type", "veth", "peer", "name", "n0", "netns", internet])
        try await Self.run(["ip", "-n", home, "addr", "add", homeAddress + "/24", "dev", "h0"])
        try await Self.run(["ip", "-n", home, "link", "set", "h0", "up"])
        try await Self.run(["ip", "-n", home, "route", "add", "default", "via", lanGateway])
        try await Self.run(["ip", "-n", gateway, "addr", "add", lanGateway + "/24", "dev", "g0"])
        try await Self.run(["ip", "-n", gateway, "link", "set", "g0", "up"])
        try await Self.run(["ip", "-n", gateway, "addr", "add", wan + "/24", "dev", "g1"])
        try await Self.run(["ip", "-n", gateway, "link", "set", "g1", "up"])
        try await Self.run(["ip", "-n", internet, "addr", "add", friendAddress + "/24", "dev", "n0"])
        try await Self.run(["ip", "-n", internet, "link", "set", "n0", "up"])
        try await Self.run(["ip", "netns", "exec", gateway, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
        // IPv6 without NAT: the router forwards, and its firewall lets in only what PCP opens.
        try await Self.run(["ip", "-n", home, "addr", "add", homeIPv6 + "/64", "dev", "h0", "nodad"])
        try await Self.run(["ip", "-n", gateway, "addr", "add", lanGatewayIPv6 + "/64", "dev", "g0", "nodad"])
        try await Self.run(["ip", "-n", gateway, "addr", "add", "2001:db8:55::1/64", "dev", "g1", "nodad"])
        try await Self.run(["ip", "-n", internet, "addr", "add", friendIPv6 + "/64", "dev", "n0", "nodad"])
        try await Self.run(["ip", "-n", home, "-6", "route", "add", "default", "via", lanGatewayIPv6])
        try await Self.run(["ip", "-n", internet, "-6", "route", "add", "2001:db8:77::/64", "via", "2001:db8:55::1"])
        try await Self.run(["ip", "netns", "exec", gateway, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1"])
        // The router's firewall: the home goes out (masqueraded); in comes only what miniupnpd maps.
        try await Self.run(["ip", "netns", "exec", gateway, "nft", "-f", "-"], input: """
            table inet cwfilter {
              chain miniupnpd {
              }
              chain forward {
                type filter hook forward priority 0; policy drop;
                ct state established,related accept
                iifname "g0" accept
                jump miniupnpd
              }
            }
            table inet cwnat {
              chain prerouting_miniupnpd {
              }
              chain postrouting_miniupnpd {
              }
              chain prerouting {
                type nat hook prerouting priority -100; policy accept;
                jump prerouting_miniupnpd
              }
              chain postrouting {
                type nat hook postrouting priority 100; policy accept;
                oifname "g1" masquerade
                jump postrouting_miniupnpd
              }
            }
            """)
    }

    deinit { tearDown() }

    /// Starts miniupnpd on the router (UPnP-IGD, NAT-PMP, PCP), leases down to 30 s. With
    /// `ipv6`, it also opens IPv6 pinholes by PCP — and then serves UPnP's HTTP on its IPv6
    /// address only (miniupnpd 2.3.1's way), so UPnP over IPv4 needs it off.
    public func startRouter(ipv6: Bool = false) async throws {
        routerIPv6 = ipv6
        let config = directory + "/miniupnpd.conf"
        try """
            ext_ifname=g1
            listening_ip=g0
            \(ipv6 ? "ipv6_listening_ip=\(lanGatewayIPv6)\next_ifname6=g1" : "ipv6_disable=yes")
            http_port=5000
            enable_natpmp=yes
            enable_upnp=yes
            secure_mode=yes
            min_lifetime=30
            uuid=3d3cec3a-8cf0-11e0-98ee-001a6bd2d07b
            upnp_table_name=cwfilter
            upnp_nat_table_name=cwnat
            upnp_forward_chain=miniupnpd
            upnp_nat_chain=prerouting_miniupnpd
            upnp_nat_postrouting_chain=postrouting_miniupnpd
            allow 1024-65535 192.168.77.0/24 1024-65535
            deny 0-65535 0.0.0.0/0 0-65535

            """.write(toFile: config, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        if !FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") { process.executableURL = URL(fileURLWithPath: "/sbin/ip") }
        process.arguments = ["netns", "exec", gateway, "/usr/sbin/miniupnpd", "-d", "-f", config, "-P", directory + "/miniupnpd.pid"]
        let log = directory + "/miniupnpd.log"
        FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        routerExit = try process.start()
        router = process
        // Up once it listens for NAT-PMP/PCP (its last start-up line).
        let deadline = monotonicNow() + 10
        while monotonicNow() < deadline {
            if routerLog.contains("Listening for NAT-PMP/PCP") { return }
            guard process.isRunning else { throw TestFailure("miniupnpd exited: \(routerLog)") }
            await pause(0.02)
        }
        throw TestFailure("miniupnpd did not start: \(routerLog)")
    }

    /// Stops miniupnpd at once, as a power cut would (its mappings stay in the firewall). SIGKILL:
    /// a child of the test process may inherit a mask that blocks SIGTERM.
    public func stopRouter() async {
        guard let router, router.isRunning else { return }
        kill(router.processIdentifier, SIGKILL)
        await routerExit?.wait(timeout: 10)
        self.router = nil
    }

    /// `stopRouter()`, blocking: for `tearDown`.
    private func killRouter() {
        guard let router, router.isRunning else { return }
        kill(router.processIdentifier, SIGKILL)
        router.waitUntilExit()
        self.router = nil
    }

    /// A router reboot: miniupnpd restarted with an empty firewall.
    public func rebootRouter() async throws {
        await stopRouter()
        try await Self.run(["ip", "netns", "exec", gateway, "nft", "flush", "chain", "inet", "cwnat", "prerouting_miniupnpd"])
        try await Self.run(["ip", "netns", "exec", gateway, "nft", "flush", "chain", "inet", "cwfilter", "miniupnpd"])
        try await startRouter(ipv6: routerIPv6)
    }

    /// The router's IPv6 firewall pinholes now (accept rules for an IPv6 destination).
    public func pinholes() async throws -> [String] {
        let text = try await Self.run(["ip", "netns", "exec", gateway, "nft", "list", "chain", "inet", "cwfilter", "miniupnpd"])
        return text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.contains("@nh,192,128") }
    }

    /// The router's port forwardings now (its DNAT rules), as nft prints them.
    public func forwardings() async throws -> [String] {
        let text = try await Self.run(["ip", "netns", "exec", gateway, "nft", "list", "chain", "inet", "cwnat", "prerouting_miniupnpd"])
        return text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.contains("dnat") }
    }

    public var routerLog: String { (try? String(contentsOfFile: directory + "/miniupnpd.log", encoding: .utf8)) ?? "" }

    /// Runs a program in `namespace`: the launcher for `DaemonProcess`.
    public func launcher(_ namespace: String) -> [String] {
        [FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip", "netns", "exec", namespace]
    }

    /// Stops the router and removes the namespaces, blocking until done.
    public func tearDown() {
        killRouter()
        for namespace in [home, gateway, internet] { _ = try? Self.run(["ip", "netns", "del", namespace]) }
    }

    /// For a `defer`: `tearDown()` on a thread of its own (`BackgroundCleanup`); returns at once.
    /// It first waits (up to 20 s) for what still runs in the home and internet namespaces to end
    /// (daemons their own `defer`s are stopping), with the router still up, as a host removes its
    /// mapping while it exits.
    public func tearDownInBackground() {
        let network = Unchecked(self)
        BackgroundCleanup.run {
            let deadline = monotonicNow() + 20
            while monotonicNow() < deadline, network.value.hasProcesses(in: [network.value.home, network.value.internet]) {
                usleep(50_000)
            }
            network.value.tearDown()
        }
    }

    /// Whether any process runs in these namespaces (`ip netns pids`), blocking.
    private func hasProcesses(in namespaces: [String]) -> Bool {
        namespaces.contains { namespace in
            let pids = (try? Self.run(["ip", "netns", "pids", namespace])) ?? ""
            return !pids.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
        }
    }

    /// Runs a command to its end on a thread of its own (`offPool`) while the task is suspended;
    /// throws with its output when it fails.
    @discardableResult
    static func run(_ arguments: [String], input: String? = nil) async throws -> String {
        try await offPool { try run(arguments, input: input) }
    }

    /// Runs a command to its end, blocking; throws with its output when it fails.
    @discardableResult
    static func run(_ arguments: [String], input: String? = nil) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let output = Pipe.forChild()
        process.standardOutput = output
        process.standardError = output
        let feed = Pipe.forChild()
        process.standardInput = input == nil ? FileHandle.nullDevice : feed
        try process.runSerially()
        if let input {
            feed.fileHandleForWriting.write(Data(input.utf8))
            try? feed.fileHandleForWriting.close()
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw TestFailure("\(arguments.joined(separator: " ")) failed (\(process.terminationStatus)): \(text)")
        }
        return text
    }
}
