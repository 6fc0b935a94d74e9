/// A port forwarding the gateway granted.
///
/// Threading: a value type, safe to share.
public struct GatewayMapping: Sendable, Equatable {
    public var method: PortMappingProtocol
    /// The gateway's address on our network (as text, for messages).
    public var gateway: String
    /// The gateway's outside address: where friends connect.
    public var externalAddress: IPAddressBytes
    public var externalPort: Int
    public var internalPort: Int
    /// Seconds the gateway granted (0: until removed, which UPnP allows).
    public var lease: Double

    public init(
        method: PortMappingProtocol, gateway: String, externalAddress: IPAddressBytes, externalPort: Int, internalPort: Int,
        lease: Double
    ) {
        self.method = method
        self.gateway = gateway
        self.externalAddress = externalAddress
        self.externalPort = externalPort
        self.internalPort = internalPort
        self.lease = lease
    }
}

/// Whether friends on the internet can reach a server on this machine, as far as this machine
/// can tell, and what a person can do about it.
///
/// Threading: a value type, safe to share.
public enum Reachability: Sendable, Equatable {
    /// Still asking the gateway.
    case checking
    /// Nobody asked (`--map-port off`): only the addresses this machine has are known.
    case notAsked
    /// This machine has a public address of its own: no gateway in the way.
    case direct(IPAddressBytes)
    /// The gateway forwards the port.
    case mapped(GatewayMapping)
    /// The gateway's outside address is itself behind the provider's NAT (100.64.0.0/10).
    case carrierGradeNAT(outside: IPAddressBytes, method: PortMappingProtocol)
    /// The gateway's outside address is private: another router stands before it.
    case doubleNAT(outside: IPAddressBytes, method: PortMappingProtocol)
    /// A gateway answered and said no.
    case refused(method: PortMappingProtocol, reason: String)
    /// No gateway answered any of these.
    case noGateway(tried: [PortMappingProtocol])

    /// A stable word for programs (`get_status`): checking, not-asked, direct, mapped,
    /// carrier-grade-nat, double-nat, refused, no-gateway.
    public var state: String {
        switch self {
        case .checking: "checking"
        case .notAsked: "not-asked"
        case .direct: "direct"
        case .mapped: "mapped"
        case .carrierGradeNAT: "carrier-grade-nat"
        case .doubleNAT: "double-nat"
        case .refused: "refused"
        case .noGateway: "no-gateway"
        }
    }

    /// True when friends on the internet can probably connect.
    public var reachable: Bool {
        switch self {
        case .direct, .mapped: true
        default: false
        }
    }

    /// The address friends on the internet connect to, when there is one.
    public var publicAddress: IPAddressBytes? {
        switch self {
        case .direct(let address): address
        case .mapped(let mapping): mapping.externalAddress
        default: nil
        }
    }

    /// One line for a person: what is known.
    public func summary(port: Int) -> String {
        switch self {
        case .checking:
            return "asking the router to forward port \(port)…"
        case .notAsked:
            return "port mapping is off: friends on the internet reach this machine only if its port \(port) is forwarded"
        case .direct(let address):
            return "friends can reach this machine at \(Invite.authority(host: address.description, port: port)) (a public address of its own)"
        case .mapped(let mapping):
            let lease = mapping.lease > 0 ? "for \(Self.duration(mapping.lease)), renewed while running" : "until this server stops"
            if !mapping.externalAddress.isIPv4 {
                return "friends with IPv6 can reach this machine at \(Invite.authority(host: mapping.externalAddress.description, port: mapping.externalPort)) "
                    + "(the router \(mapping.gateway) opened its firewall for it by \(mapping.method) \(lease))"
            }
            return "friends can reach this machine at \(Invite.authority(host: mapping.externalAddress.description, port: mapping.externalPort)) "
                + "(the router \(mapping.gateway) forwards it by \(mapping.method) \(lease))"
        case .carrierGradeNAT(let outside, _):
            return "friends cannot reach this machine: the router's internet address \(outside) is behind the provider's own NAT (carrier-grade NAT)"
        case .doubleNAT(let outside, _):
            return "friends cannot reach this machine: the router's internet address \(outside) is private (another router stands before it)"
        case .refused(let method, let reason):
            return "the router refused to forward port \(port) by \(method): \(reason)"
        case .noGateway(let tried):
            return "no router answered (\(tried.map(\.description).joined(separator: ", "))): friends on the internet cannot reach port \(port) unless it is forwarded"
        }
    }

    /// What a person can do, in one line; nil when nothing needs doing.
    public var advice: String? {
        switch self {
        case .checking, .direct, .mapped: nil
        case .carrierGradeNAT:
            "use a cowatch-server on a VPS, or a VPN such as Tailscale or WireGuard (friends in the same VPN can join)"
        case .doubleNAT:
            "forward the port on the outer router too, or use a cowatch-server on a VPS or a VPN such as Tailscale or WireGuard"
        case .notAsked, .refused, .noGateway:
            "turn on UPnP or NAT-PMP in the router (or forward the port by hand), or use a cowatch-server on a VPS or a VPN such as Tailscale or WireGuard"
        }
    }

    static func duration(_ seconds: Double) -> String {
        if seconds >= 3600, seconds.truncatingRemainder(dividingBy: 3600) == 0 { return "\(Int(seconds / 3600)) h" }
        if seconds >= 120 { return "\(Int(seconds / 60)) min" }
        return "\(Int(seconds)) s"
    }
}
