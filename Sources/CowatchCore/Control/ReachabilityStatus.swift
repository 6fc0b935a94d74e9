/// `reachability` in `get_status`'s room section and in `get_invite`'s reply: whether friends
/// can reach this host, in words and for programs.
///
/// Threading: a value type, safe to share.
/// Errors: the decoder throws `malformed-control-message` (see `ControlFields`).
public struct ReachabilityStatus: Sendable, Hashable {
    /// `Reachability.state`: checking, not-asked, direct, mapped, …
    public var state: String
    /// One sentence for people.
    public var summary: String
    /// What a person can do about it, when anything.
    public var advice: String?
    /// The address friends connect to, when known.
    public var address: String?
    /// When the gateway forwards the port.
    public var mapping: Mapping?
    /// The same for IPv6, when this host has a global IPv6 address.
    public var ipv6: IPv6?

    /// A forwarding the gateway granted.
    public struct Mapping: Sendable, Hashable {
        /// `PortMappingProtocol`'s raw value (pcp, nat-pmp, upnp).
        public var method: String
        public var externalPort: Int
        /// Seconds granted (0: until removed).
        public var lease: Double
        public var gateway: String

        public init(method: String, externalPort: Int, lease: Double, gateway: String) {
            self.method = method
            self.externalPort = externalPort
            self.lease = lease
            self.gateway = gateway
        }
    }

    public struct IPv6: Sendable, Hashable {
        public var state: String
        public var summary: String
        public var address: String?

        public init(state: String, summary: String, address: String?) {
            self.state = state
            self.summary = summary
            self.address = address
        }
    }

    public init(
        state: String, summary: String, advice: String? = nil, address: String? = nil, mapping: Mapping? = nil,
        ipv6: IPv6? = nil
    ) {
        self.state = state
        self.summary = summary
        self.advice = advice
        self.address = address
        self.mapping = mapping
        self.ipv6 = ipv6
    }

    /// What `reachability` (and `ipv6`, when known) say about a host listening on `port`.
    public init(_ reachability: Reachability, ipv6: Reachability?, port: Int) {
        self.init(
            state: reachability.state, summary: reachability.summary(port: port), advice: reachability.advice,
            address: reachability.publicAddress?.description)
        if case .mapped(let granted) = reachability {
            mapping = Mapping(
                method: granted.method.rawValue, externalPort: granted.externalPort, lease: granted.lease,
                gateway: granted.gateway)
        }
        if let ipv6 {
            self.ipv6 = IPv6(state: ipv6.state, summary: ipv6.summary(port: port), address: ipv6.publicAddress?.description)
        }
    }

    // MARK: Codec

    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "state": .string(state), "summary": .string(summary), "advice": advice.map(JSONValue.string) ?? .null,
            "address": address.map(JSONValue.string) ?? .null,
        ]
        if let mapping {
            object["method"] = .string(mapping.method)
            object["external_port"] = .count(mapping.externalPort)
            object["lease"] = .number(mapping.lease)
            object["gateway"] = .string(mapping.gateway)
        }
        if let ipv6 {
            object["ipv6"] = [
                "state": .string(ipv6.state), "summary": .string(ipv6.summary),
                "address": ipv6.address.map(JSONValue.string) ?? .null,
            ]
        }
        return .object(object)
    }

    public init(_ fields: ControlFields) throws(CowatchError) {
        state = try fields.string("state")
        summary = try fields.string("summary")
        advice = try fields.optionalString("advice")
        address = try fields.optionalString("address")
        if let method = try fields.optionalString("method") {
            mapping = Mapping(
                method: method, externalPort: try fields.count("external_port"), lease: try fields.number("lease"),
                gateway: try fields.string("gateway"))
        }
        if let inner = try fields.optionalObject("ipv6", what: "\(fields.what)'s ipv6") {
            ipv6 = IPv6(
                state: try inner.string("state"), summary: try inner.string("summary"),
                address: try inner.optionalString("address"))
        }
    }
}
