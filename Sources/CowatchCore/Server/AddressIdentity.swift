import Glibc

/// What one peer's address costs to make, as the server's budgets count it (issue 22): the
/// caps per address (connections, handshakes, rooms created, members of one room), cool-downs and
/// lockouts all count this key, not the raw address.
///
/// An IPv4 address is one identity. An IPv6 address counts as its /64: one subscriber's network
/// gets a whole /64 (often a /56), and its devices pick any address in it at will, so counting
/// single IPv6 addresses would hand one attacker 2^64 identities. An IPv4-mapped IPv6 address
/// (`::ffff:192.0.2.7`, what a dual-stack socket reports for IPv4 peers) is its IPv4 address.
/// Anything else (a Unix socket's "local", a name) is kept as it is.
///
/// Threading: pure functions.
public enum AddressIdentity {
    /// The budget key of `address` (an IP address in text, as the socket reports it; a zone
    /// such as `%eth0` is dropped).
    public static func key(of address: String) -> String {
        let bare = address.split(separator: "%", maxSplits: 1).first.map(String.init) ?? address
        var v4 = in_addr()
        if inet_pton(AF_INET, bare, &v4) == 1 { return bare }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, bare, &v6) == 1 else { return address }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        // The first four 16-bit groups, in the shortest hex.
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }
}
