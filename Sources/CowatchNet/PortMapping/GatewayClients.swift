import CowatchCore
import Logging

/// Carries out one `PortMappingMachine` attempt or removal with one protocol against the real
/// gateway: NAT-PMP and PCP to the default gateway's UDP port 5351, UPnP-IGD found by SSDP.
///
/// Our own small codecs on SwiftNIO rather than Debian's libminiupnpc and libnatpmp: a gateway
/// is a peer on the network, and every byte it sends is read here by bounded, pure Swift that the
/// tests feed hostile replies (no C parser of network input inside the daemon); libnatpmp has no
/// PCP, which the IPv6 pinhole needs; and the exchanges run on the daemon's one event loop group
/// with deadlines of their own instead of blocking library calls.
///
/// Threading: an actor; one attempt at a time (the machine asks for no more).
/// Errors: none thrown; every failure becomes the machine's `.refused` or `.noAnswer`.
actor GatewayClients {
    struct Request: Sendable {
        var internalPort: Int
        var lease: Double
    }

    private let request: Request
    private let logger: Logger
    /// Where the gateway is, for tests in network namespaces (nil: the default route's gateway).
    private let gatewayOverride: IPAddressBytes?
    /// PCP asks that a renewal or removal carries the nonce of the mapping it refers to.
    private var pcpNonce: [UInt8] = (0..<PCP.nonceLength).map { _ in UInt8.random(in: 0...255) }
    /// The UPnP control point found last (kept for renewals and removal).
    private var upnp: (control: HTTPLocation, service: IGDService, localAddress: IPAddressBytes)?

    /// NAT-PMP's retransmissions (RFC 6886 starts at 250 ms and doubles); three tries keep a
    /// silent network to under two seconds per protocol.
    static let udpWaits = [0.25, 0.5, 1.0]
    /// SSDP answers come within the MX seconds asked for.
    static let ssdpWaits = [1.0, 1.0]
    static let httpDeadline = 4.0

    init(request: Request, gateway: IPAddressBytes?, logger: Logger) {
        self.request = request
        self.gatewayOverride = gateway
        self.logger = logger
    }

    func attempt(_ method: PortMappingProtocol, renewing: GatewayMapping?) async -> PortMappingMachine.AttemptResult {
        switch method {
        case .natpmp: await natpmp()
        case .pcp: await pcp()
        case .upnp: await upnpMap(renewing: renewing)
        }
    }

    /// Best effort: asks the gateway to drop `mapping`; failures are logged at debug only (the
    /// lease runs out anyway).
    func remove(_ mapping: GatewayMapping) async {
        do {
            switch mapping.method {
            case .natpmp:
                guard let gateway = gatewayAddress() else { return }
                let bytes = NATPMP.mapTCPRequest(internalPort: UInt16(mapping.internalPort), suggestedExternalPort: 0, lifetime: 0)
                _ = try await GatewayExchange.datagram(bytes, to: gateway.description, port: NATPMP.port, waits: [0.25, 0.5]) { reply, _ in
                    (try? NATPMP.parse(reply)) != nil
                }
            case .pcp:
                guard let gateway = gatewayAddress(), let client = LocalNetwork.sourceAddress(toward: gateway) else { return }
                let bytes = PCP.mapRequest(
                    client: client, nonce: pcpNonce, internalPort: UInt16(mapping.internalPort), suggestedExternalPort: 0,
                    suggestedExternalAddress: nil, lifetime: 0)
                _ = try await GatewayExchange.datagram(bytes, to: gateway.description, port: PCP.port, waits: [0.25, 0.5]) { reply, _ in
                    (try? PCP.parse(reply)) != nil
                }
            case .upnp:
                guard let upnp else { return }
                let bytes = try UPnPSOAP.deletePortMapping(control: upnp.control, serviceType: upnp.service.serviceType, externalPort: mapping.externalPort)
                _ = try await soap(bytes, at: upnp.control)
            }
            logger.debug("port mapping removed", metadata: ["cowatch.map.method": "\(mapping.method)"])
        } catch {
            logger.debug("removing the port mapping failed", metadata: ["cowatch.map.error": "\(error)"])
        }
    }

    private func gatewayAddress() -> IPAddressBytes? {
        gatewayOverride ?? LocalNetwork.defaultGatewayIPv4()
    }

    // MARK: NAT-PMP

    private func natpmp() async -> PortMappingMachine.AttemptResult {
        guard let gateway = gatewayAddress() else { return .noAnswer(method: .natpmp) }
        let host = gateway.description
        do {
            // Its outside address first: a private one makes any mapping useless.
            guard let (addressReply, _) = try await GatewayExchange.datagram(
                NATPMP.externalAddressRequest(), to: host, port: NATPMP.port, waits: Self.udpWaits,
                accept: { reply, sender in sender == host && (try? NATPMP.parse(reply)) != nil })
            else { return .noAnswer(method: .natpmp) }
            switch try NATPMP.parse(addressReply) {
            case .externalAddress(_, let outside):
                if !outside.isGlobalUnicast { return .outsideNotPublic(outside, method: .natpmp, mapping: nil) }
                let map = NATPMP.mapTCPRequest(
                    internalPort: UInt16(request.internalPort), suggestedExternalPort: UInt16(request.internalPort),
                    lifetime: UInt32(request.lease))
                guard let (mapReply, _) = try await GatewayExchange.datagram(
                    map, to: host, port: NATPMP.port, waits: Self.udpWaits,
                    accept: { reply, sender in sender == host && (try? NATPMP.parse(reply)) != nil })
                else { return .noAnswer(method: .natpmp) }
                switch try NATPMP.parse(mapReply) {
                case .mapping(_, let internalPort, let externalPort, let lifetime) where Int(internalPort) == request.internalPort:
                    return .mapped(GatewayMapping(
                        method: .natpmp, gateway: host, externalAddress: outside, externalPort: Int(externalPort),
                        internalPort: request.internalPort, lease: Double(lifetime)))
                case .failure(_, let result):
                    return .refused(method: .natpmp, reason: result.description)
                default:
                    return .refused(method: .natpmp, reason: "the router answered with something other than our mapping")
                }
            case .failure(_, let result):
                return .refused(method: .natpmp, reason: result.description)
            case .mapping:
                return .refused(method: .natpmp, reason: "the router answered with something other than its address")
            }
        } catch {
            logger.debug("NAT-PMP failed", metadata: ["cowatch.map.error": "\(error)"])
            return .noAnswer(method: .natpmp)
        }
    }

    // MARK: PCP

    private func pcp() async -> PortMappingMachine.AttemptResult {
        guard let gateway = gatewayAddress(), let client = LocalNetwork.sourceAddress(toward: gateway) else {
            return .noAnswer(method: .pcp)
        }
        let host = gateway.description
        let nonce = pcpNonce
        let bytes = PCP.mapRequest(
            client: client, nonce: nonce, internalPort: UInt16(request.internalPort),
            suggestedExternalPort: UInt16(request.internalPort), suggestedExternalAddress: nil, lifetime: UInt32(request.lease))
        do {
            guard let (reply, _) = try await GatewayExchange.datagram(
                bytes, to: host, port: PCP.port, waits: Self.udpWaits,
                accept: { reply, sender in
                    guard sender == host, let parsed = try? PCP.parse(reply) else { return false }
                    if case .map(let response) = parsed { return PCP.nonceMatches(response, nonce) }
                    return true
                })
            else { return .noAnswer(method: .pcp) }
            switch try PCP.parse(reply) {
            case .map(let response) where response.result == .success:
                let mapping = GatewayMapping(
                    method: .pcp, gateway: host, externalAddress: response.externalAddress,
                    externalPort: Int(response.externalPort), internalPort: request.internalPort, lease: Double(response.lifetime))
                if !response.externalAddress.isGlobalUnicast {
                    return .outsideNotPublic(response.externalAddress, method: .pcp, mapping: mapping)
                }
                return .mapped(mapping)
            case .map(let response):
                return .refused(method: .pcp, reason: response.result.description)
            case .unsupportedVersion:
                return .refused(method: .pcp, reason: "the router speaks NAT-PMP, not PCP")
            case .failure(_, let result):
                // A gateway that cannot map because its own outside address is not public may say which it is.
                if let outside = PCP.failureExternalAddress(reply), !outside.isGlobalUnicast {
                    return .outsideNotPublic(outside, method: .pcp, mapping: nil)
                }
                return .refused(method: .pcp, reason: result.description)
            }
        } catch {
            logger.debug("PCP failed", metadata: ["cowatch.map.error": "\(error)"])
            return .noAnswer(method: .pcp)
        }
    }

    // MARK: UPnP-IGD

    private func upnpMap(renewing: GatewayMapping?) async -> PortMappingMachine.AttemptResult {
        do {
            // A renewal reuses the control point; a router that moved is searched again.
            if renewing == nil || upnp == nil { upnp = try await discover() }
            guard let upnp else { return .noAnswer(method: .upnp) }
            let addressReply = try await soap(
                try UPnPSOAP.getExternalIPAddress(control: upnp.control, serviceType: upnp.service.serviceType), at: upnp.control)
            guard case .ok(let values) = addressReply, let text = values["NewExternalIPAddress"],
                let outside = IPAddressBytes(text: text)
            else {
                if case .fault(let code, let description) = addressReply {
                    return .refused(method: .upnp, reason: UPnPSOAP.faultSummary(code: code, description: description))
                }
                // miniupnpd, for one, answers empty when its own outside address is private.
                return .refused(method: .upnp, reason: "the router does not know an internet address of its own (another NAT may stand before it)")
            }
            if !outside.isGlobalUnicast { return .outsideNotPublic(outside, method: .upnp, mapping: nil) }
            var lease = request.lease
            var answer = try await soap(try addMapping(upnp, lease: lease), at: upnp.control)
            if case .fault(725, _) = answer {
                // Only permanent leases: ask for one, and remove it when we stop.
                lease = 0
                answer = try await soap(try addMapping(upnp, lease: 0), at: upnp.control)
            }
            switch answer {
            case .ok:
                return .mapped(GatewayMapping(
                    method: .upnp, gateway: upnp.control.host, externalAddress: outside, externalPort: request.internalPort,
                    internalPort: request.internalPort, lease: lease))
            case .fault(let code, let description):
                return .refused(method: .upnp, reason: UPnPSOAP.faultSummary(code: code, description: description))
            }
        } catch let error as CowatchError where error.code == .protocolViolation || error.code == .unsupported {
            return .refused(method: .upnp, reason: error.message)
        } catch {
            logger.debug("UPnP failed", metadata: ["cowatch.map.error": "\(error)"])
            upnp = nil
            return .noAnswer(method: .upnp)
        }
    }

    private func addMapping(_ upnp: (control: HTTPLocation, service: IGDService, localAddress: IPAddressBytes), lease: Double) throws(CowatchError) -> [UInt8] {
        try UPnPSOAP.addPortMapping(
            control: upnp.control, serviceType: upnp.service.serviceType, externalPort: request.internalPort,
            internalPort: request.internalPort, internalClient: upnp.localAddress.description, leaseSeconds: Int(lease),
            description: "Cowatch room server (port \(request.internalPort))")
    }

    /// SSDP search for an internet gateway, then its description for the control URL.
    private func discover() async throws -> (control: HTTPLocation, service: IGDService, localAddress: IPAddressBytes)? {
        var found: SSDP.SearchResponse?
        for target in SSDP.gatewaySearchTargets where found == nil {
            let search = SSDP.searchRequest(searchTarget: target, maxWaitSeconds: 1)
            if let (reply, sender) = try await GatewayExchange.datagram(
                search, to: SSDP.multicastAddress, port: SSDP.port, waits: Self.ssdpWaits,
                accept: { reply, sender in (try? SSDP.parseResponse(reply, from: sender)) != nil })
            {
                found = try SSDP.parseResponse(reply, from: sender)
            }
        }
        guard let location = found?.location, let gateway = IPAddressBytes(text: location.host),
            let local = LocalNetwork.sourceAddress(toward: gateway)
        else { return nil }
        guard let response = try await GatewayExchange.http(
            UPnPSOAP.getRequest(location), host: location.host, port: location.port, deadline: Self.httpDeadline,
            isComplete: UPnPSOAP.isComplete)
        else { return nil }
        let (status, body) = try UPnPSOAP.httpBody(response)
        guard status == 200 else { throw CowatchError(.protocolViolation, "the router's description answered HTTP \(status)") }
        let service = try IGDDescription.connectionService(in: body)
        return (try location.resolving(service.controlURL), service, local)
    }

    private func soap(_ bytes: [UInt8], at control: HTTPLocation) async throws -> SOAPResult {
        guard let response = try await GatewayExchange.http(
            bytes, host: control.host, port: control.port, deadline: Self.httpDeadline, isComplete: UPnPSOAP.isComplete)
        else { throw CowatchError(.timeout, "the router's control point did not answer") }
        return try UPnPSOAP.parseResponse(response)
    }
}
