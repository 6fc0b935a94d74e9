import CowatchCore
import Logging
import ServiceLifecycle

/// Keeps a server's port forwarded by the home router while the server runs (`--map-port`),
/// carrying out a `PortMappingMachine`; removes the mapping on graceful shutdown.
///
/// `onReport` hears every change of reachability (the first one once the gateway answered or
/// every protocol was tried): the daemon says it to the person and puts it in its invite and
/// status. `now` is the one clock this service reads (monotonic seconds).
///
/// Threading: `run` once, from a `ServiceGroup`. Errors: none; a gateway that fails is a report.
public struct PortMapperService: Service {
    public struct Settings: Sendable {
        public var mode: PortMappingMode
        public var internalPort: Int
        public var machine = PortMappingMachine.Configuration()
        /// Where the gateway is (tests); nil: the default route's gateway.
        public var gateway: IPAddressBytes?
        /// Whether a public address of this machine's own makes mapping needless (default true).
        public var trustOwnPublicAddress = true
        /// Also ask, by PCP, for a pinhole in the router's IPv6 firewall when this machine has a
        /// global IPv6 address and the mode allows PCP (default true).
        public var ipv6Pinhole = true
        /// The IPv6 router to ask (tests); nil: the default IPv6 route's next hop.
        public var gatewayIPv6: IPAddressBytes?

        public init(mode: PortMappingMode, internalPort: Int) {
            self.mode = mode
            self.internalPort = internalPort
        }
    }

    /// How long a removal may take at shutdown.
    static let removalDeadline = 2.0

    let settings: Settings
    let logger: Logger
    let now: @Sendable () -> Double
    let onReport: @Sendable (Reachability) async -> Void
    let onReportIPv6: (@Sendable (Reachability) async -> Void)?

    /// `onReportIPv6`, when given, hears the IPv6 pinhole's reachability (asked only when this
    /// machine has a global IPv6 address and an IPv6 router that is not link-local).
    public init(
        settings: Settings, logger: Logger, now: @escaping @Sendable () -> Double,
        onReport: @escaping @Sendable (Reachability) async -> Void,
        onReportIPv6: (@Sendable (Reachability) async -> Void)? = nil
    ) {
        self.settings = settings
        self.logger = logger
        self.now = now
        self.onReport = onReport
        self.onReportIPv6 = onReportIPv6
    }

    public func run() async throws {
        var loops = [
            PortMapperLoop(
                service: self, mode: settings.mode, gateway: settings.gateway,
                ownPublicAddress: settings.trustOwnPublicAddress ? LocalNetwork.publicIPv4() : nil, onReport: onReport)
        ]
        if let pinhole = ipv6PinholeGateway(), let onReportIPv6 {
            loops.append(PortMapperLoop(service: self, mode: .only(.pcp), gateway: pinhole, ownPublicAddress: nil, onReport: onReportIPv6))
        }
        let running = loops
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                for loop in running { group.addTask { await loop.run() } }
            }
        }
        // Graceful shutdown (or cancellation): the mappings go, within a deadline.
        for loop in loops { await loop.stop() }
    }

    /// The IPv6 router to ask for a pinhole, when one should be asked.
    func ipv6PinholeGateway() -> IPAddressBytes? {
        guard settings.ipv6Pinhole, settings.mode.methods.contains(.pcp), !LocalNetwork.globalIPv6().isEmpty,
            let router = settings.gatewayIPv6 ?? LocalNetwork.defaultGatewayIPv6()
        else { return nil }
        guard !router.isLinkLocal else {
            // PCP to a link-local router needs its interface named; not done yet.
            logger.debug("the IPv6 router is link-local: no pinhole asked", metadata: ["cowatch.map.router": "\(router)"])
            return nil
        }
        return router
    }
}

/// The machine and its gateway clients, owned by one actor so that the loop and the shutdown
/// see the same state.
private actor PortMapperLoop {
    let service: PortMapperService
    var machine: PortMappingMachine
    let clients: GatewayClients
    let ownPublicAddress: IPAddressBytes?
    let onReport: @Sendable (Reachability) async -> Void
    var wakeAt: Double?

    init(
        service: PortMapperService, mode: PortMappingMode, gateway: IPAddressBytes?, ownPublicAddress: IPAddressBytes?,
        onReport: @escaping @Sendable (Reachability) async -> Void
    ) {
        self.service = service
        self.ownPublicAddress = ownPublicAddress
        self.onReport = onReport
        machine = PortMappingMachine(mode: mode, configuration: service.settings.machine)
        clients = GatewayClients(
            request: .init(internalPort: service.settings.internalPort, lease: service.settings.machine.lease),
            gateway: gateway, logger: service.logger)
    }

    func run() async {
        var queue = machine.start(publicAddress: ownPublicAddress, now: service.now())
        while !Task.isCancelled {
            while let action = queue.first {
                queue.removeFirst()
                switch action {
                case .attempt(let method, let renewing):
                    service.logger.debug("asking the gateway", metadata: ["cowatch.map.method": "\(method)"])
                    let result = await clients.attempt(method, renewing: renewing)
                    queue += machine.attemptFinished(result, now: service.now())
                case .remove(let mapping):
                    await clients.remove(mapping)
                case .report(let reachability):
                    service.logger.debug("reachability", metadata: ["cowatch.map.state": "\(reachability.state)"])
                    await onReport(reachability)
                case .wake(let at):
                    wakeAt = at
                }
            }
            guard let due = wakeAt else {
                // Nothing more to do (off, or a public address of our own): wait for the end.
                try? await Task.sleep(for: .seconds(86_400))
                continue
            }
            let delay = max(0, due - service.now())
            // Rounded up, so the machine finds its instant reached.
            try? await Task.sleep(for: .milliseconds(Int((delay * 1000).rounded(.up)) + 1))
            guard !Task.isCancelled else { return }
            queue += machine.tick(now: service.now())
            if !queue.isEmpty { wakeAt = nil }
        }
    }

    func stop() async {
        for case .remove(let mapping) in machine.stop() {
            let clients = clients
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await clients.remove(mapping) }
                group.addTask { try? await Task.sleep(for: .milliseconds(Int(PortMapperService.removalDeadline * 1000))) }
                await group.next()
                group.cancelAll()
            }
        }
    }
}
