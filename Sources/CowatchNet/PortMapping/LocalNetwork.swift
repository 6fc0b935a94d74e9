import CowatchCore
import Foundation
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// What this machine's own network looks like: its interface addresses and its default gateway.
///
/// Threading: any thread (reads the interface list and `/proc/net/route`). Errors: none; what
/// cannot be read is absent.
public enum LocalNetwork {
    /// One address of an interface that is up.
    public struct InterfaceAddress: Sendable, Equatable {
        public var interface: String
        public var address: IPAddressBytes
        public var isLoopback: Bool
    }

    /// The address a server listens on to be reached at every address: `::` (IPv6 and, through
    /// IPv4-mapped addresses, IPv4) where this machine has IPv6 and sockets on `::` take IPv4
    /// too; else `0.0.0.0`.
    public static var anyAddress: String {
        let descriptor = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return "0.0.0.0" }
        close(descriptor)
        let only = (try? String(contentsOfFile: "/proc/sys/net/ipv6/bindv6only", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return only == "0" ? "::" : "0.0.0.0"
    }

    /// Every address of every interface that is up, IPv4 first, in the kernel's order.
    public static func addresses() -> [InterfaceAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var found: [InterfaceAddress] = []
        var entry: UnsafeMutablePointer<ifaddrs>? = first
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            let flags = Int32(current.pointee.ifa_flags)
            guard flags & Int32(IFF_UP) != 0, let raw = current.pointee.ifa_addr else { continue }
            let name = String(cString: current.pointee.ifa_name)
            let address: IPAddressBytes?
            switch Int32(raw.pointee.sa_family) {
            case AF_INET:
                address = raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
                    withUnsafeBytes(of: ipv4.pointee.sin_addr) { IPAddressBytes(ipv4: Array($0)) }
                }
            case AF_INET6:
                address = raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { ipv6 in
                    withUnsafeBytes(of: ipv6.pointee.sin6_addr) { IPAddressBytes(bytes16: Array($0)) }
                }
            default:
                address = nil
            }
            if let address {
                found.append(InterfaceAddress(interface: name, address: address, isLoopback: flags & Int32(IFF_LOOPBACK) != 0))
            }
        }
        return found.filter(\.address.isIPv4) + found.filter { !$0.address.isIPv4 }
    }

    /// The first IPv4 address of an interface that is up and not loopback (a LAN address, for
    /// an invite when nothing better is known); nil when there is none.
    public static func firstIPv4(of list: [InterfaceAddress] = addresses()) -> IPAddressBytes? {
        list.first { !$0.isLoopback && $0.address.isIPv4 && !$0.address.isLinkLocal }?.address
    }

    /// A public IPv4 address of this machine's own (a VPS): then no gateway stands in the way.
    public static func publicIPv4(of list: [InterfaceAddress] = addresses()) -> IPAddressBytes? {
        list.first { !$0.isLoopback && $0.address.isIPv4 && $0.address.isGlobalUnicast }?.address
    }

    /// Global IPv6 addresses (2000::/3) of this machine: reachable from the internet when a
    /// firewall lets them be.
    public static func globalIPv6(of list: [InterfaceAddress] = addresses()) -> [IPAddressBytes] {
        list.filter { !$0.isLoopback && !$0.address.isIPv4 && $0.address.isGlobalUnicast }.map(\.address)
    }

    /// Addresses of VPN interfaces friends in the same VPN can use: Tailscale's 100.64.0.0/10
    /// on `tailscale*` and addresses of WireGuard interfaces (`wg*`).
    public static func vpnAddresses(of list: [InterfaceAddress] = addresses()) -> [(interface: String, address: IPAddressBytes)] {
        list.filter { entry in
            guard !entry.isLoopback, !entry.address.isLinkLocal else { return false }
            return entry.interface.hasPrefix("tailscale") || entry.interface.hasPrefix("wg")
                || (entry.address.isCarrierGradeNAT && entry.interface.hasPrefix("ts"))
        }.map { ($0.interface, $0.address) }
    }

    /// The default IPv4 gateway from the kernel's routing table, or nil.
    public static func defaultGatewayIPv4(routeTable: String? = nil) -> IPAddressBytes? {
        guard let table = routeTable ?? (try? String(contentsOfFile: "/proc/net/route", encoding: .utf8)) else { return nil }
        return parseDefaultGateway(table)
    }

    /// The default IPv6 route's next hop from the kernel's table, or nil.
    public static func defaultGatewayIPv6(routeTable: String? = nil) -> IPAddressBytes? {
        guard let table = routeTable ?? (try? String(contentsOfFile: "/proc/net/ipv6_route", encoding: .utf8)) else { return nil }
        return parseDefaultGatewayIPv6(table)
    }

    /// Reads `/proc/net/ipv6_route`'s text: the next hop of the first route to ::/0 that has one.
    static func parseDefaultGatewayIPv6(_ table: String) -> IPAddressBytes? {
        for line in table.split(separator: "\n").prefix(4096) {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 10, fields[0].allSatisfy({ $0 == "0" }), fields[1] == "00",
                fields[4].utf8.count == 32, !fields[4].allSatisfy({ $0 == "0" })
            else { continue }
            var bytes: [UInt8] = []
            var index = fields[4].startIndex
            while index < fields[4].endIndex {
                let next = fields[4].index(index, offsetBy: 2)
                guard let byte = UInt8(fields[4][index..<next], radix: 16) else { return nil }
                bytes.append(byte)
                index = next
            }
            return IPAddressBytes(bytes16: bytes)
        }
        return nil
    }

    /// Reads `/proc/net/route`'s text: the gateway of the first up route to 0.0.0.0/0.
    static func parseDefaultGateway(_ table: String) -> IPAddressBytes? {
        for line in table.split(separator: "\n").dropFirst().prefix(4096) {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 8, fields[1] == "00000000", fields[7] == "00000000",
                let gateway = UInt32(fields[2], radix: 16), gateway != 0,
                let flags = UInt32(fields[3], radix: 16), flags & 0x3 == 0x3  // RTF_UP | RTF_GATEWAY
            else { continue }
            // The kernel writes the address in host (little-endian) byte order.
            let bytes = withUnsafeBytes(of: UInt32(littleEndian: gateway)) { Array($0) }
            return IPAddressBytes(ipv4: bytes)
        }
        return nil
    }

    /// The local address the kernel would use to reach `remote` (a UDP socket "connected" there;
    /// nothing is sent). Nil when there is no route.
    public static func sourceAddress(toward remote: IPAddressBytes) -> IPAddressBytes? {
        guard let target = try? SocketAddress(ipAddress: remote.description, port: 9) else { return nil }
        let descriptor = socket(Int32(target.protocol.rawValue), Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        guard target.withSockAddr({ connect(descriptor, $0, socklen_t($1)) }) == 0 else { return nil }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafeBytes(of: &storage) { raw in
                withUnsafeBytes(of: raw.load(as: sockaddr_in.self).sin_addr) { IPAddressBytes(ipv4: Array($0)) }
            }
        case AF_INET6:
            return withUnsafeBytes(of: &storage) { raw in
                withUnsafeBytes(of: raw.load(as: sockaddr_in6.self).sin6_addr) { IPAddressBytes(bytes16: Array($0)) }
            }
        default:
            return nil
        }
    }
}
