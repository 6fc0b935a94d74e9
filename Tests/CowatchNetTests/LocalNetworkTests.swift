@testable import CowatchNet
import CowatchCore
import Logging
import Testing

@Suite("This machine's network, as the port mapper reads it")
struct LocalNetworkTests {
    @Test("the default IPv4 gateway from /proc/net/route (little-endian hex, up and gateway flags)")
    func defaultGatewayIPv4() {
        let table = """
            Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
            h0\t00000000\t014DA8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0
            h0\t004DA8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
            """
        #expect(LocalNetwork.parseDefaultGateway(table)?.description == "192.168.77.1")
        // A default route that is down, or without a gateway, is no gateway.
        #expect(LocalNetwork.parseDefaultGateway("head\nh0\t00000000\t014DA8C0\t0002\t0\t0\t0\t00000000\t0\t0\t0") == nil)
        #expect(LocalNetwork.parseDefaultGateway("head\nh0\t00000000\t00000000\t0001\t0\t0\t0\t00000000\t0\t0\t0") == nil)
        #expect(LocalNetwork.parseDefaultGateway("head\ngarbage\t\t\n\u{0}") == nil)
    }

    @Test("the default IPv6 next hop from /proc/net/ipv6_route")
    func defaultGatewayIPv6() {
        let table = """
            20010db8007700000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     h0
            00000000000000000000000000000000 00 00000000000000000000000000000000 00 20010db8007700000000000000000001 00000400 00000001 00000000 00000003     h0
            """
        #expect(LocalNetwork.parseDefaultGatewayIPv6(table)?.description == "2001:db8:77::1")
        #expect(LocalNetwork.parseDefaultGatewayIPv6("00000000000000000000000000000000 00 0 00 zz 0 0 0 0 h0") == nil)
    }

    @Test("a room server's description, which the service group logs, holds no token or key")
    func serverDescriptionKeepsSecrets() {
        var policy = RoomSequencer.Configuration()
        policy.reservedRooms["movie"] = "secret-host-token"
        let server = RoomServer(host: "::", port: 7433, configuration: policy, identity: nil, logger: Logger(label: "test"))
        #expect("\(server)" == "RoomServer([::]:7433)")
        #expect(!"\(server)".contains("secret-host-token"))
    }
}

@Suite("Tailscale's MagicDNS name for invites")
struct TailscaleNameTests {
    @Test("Self.DNSName from tailscale status --json, the trailing dot dropped; anything odd is nil")
    func parse() {
        let json = #"{"Version":"1.76.1","Self":{"DNSName":"Laptop.tail1234.ts.net.","TailscaleIPs":["100.101.102.103"]}}"#
        #expect(TailscaleName.parse(Array(json.utf8)) == "laptop.tail1234.ts.net")
        for hostile in [#"{"Self":{"DNSName":"a b.ts.net."}}"#, #"{"Self":{"DNSName":"x;rm -rf /"}}"#, #"{"Self":{}}"#, "not json", #"{"Self":{"DNSName":""}}"#] {
            #expect(TailscaleName.parse(Array(hostile.utf8)) == nil, "\(hostile)")
        }
    }
}
