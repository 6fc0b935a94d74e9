/// The ways of asking a home router to forward a port, in the order `auto` tries them.
///
/// PCP (RFC 6887) first: the newest, and the only one that opens an IPv6 pinhole; NAT-PMP
/// (RFC 6886) next, which PCP servers answer too; UPnP-IGD last, the most common on home routers
/// but the slowest to find (a multicast search that waits for answers).
public enum PortMappingProtocol: String, Sendable, CaseIterable, CustomStringConvertible {
    case pcp
    case natpmp
    case upnp

    /// The name a person knows it by.
    public var description: String {
        switch self {
        case .pcp: "PCP"
        case .natpmp: "NAT-PMP"
        case .upnp: "UPnP-IGD"
        }
    }
}

/// `--map-port auto|upnp|natpmp|pcp|off`: whether, and how, a server asks the gateway to
/// forward its port.
///
/// Threading: a value type, safe to share.
public enum PortMappingMode: Sendable, Equatable, CustomStringConvertible {
    case off
    /// Try every protocol, in `PortMappingProtocol.allCases` order.
    case auto
    case only(PortMappingProtocol)

    /// Parses the option's value. Errors: `invalid-configuration` naming the choices.
    public init(parsing text: String) throws(CowatchError) {
        switch text.lowercased() {
        case "off", "no", "none": self = .off
        case "auto", "yes", "on": self = .auto
        case let name:
            guard let method = PortMappingProtocol(rawValue: name) else {
                throw CowatchError(.invalidConfiguration, "--map-port must be auto, upnp, natpmp, pcp or off, not \"\(text.prefix(40))\"")
            }
            self = .only(method)
        }
    }

    /// The protocols to try, in order (none when off).
    public var methods: [PortMappingProtocol] {
        switch self {
        case .off: []
        case .auto: PortMappingProtocol.allCases
        case .only(let method): [method]
        }
    }

    public var description: String {
        switch self {
        case .off: "off"
        case .auto: "auto"
        case .only(let method): method.rawValue
        }
    }
}
