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

    public init(
        settings: Settings, logger: Logger, now: @escaping @Sendable () -> Double,
        onReport: @escaping @Sendable (Reachability) async -> Void
    ) {
        self.settings = settings
        self.logger = logger
        self.now = now
        self.onReport = onReport
    }

    public func run() async throws {
        let loop = PortMapperLoop(service: self)
        await cancelWhenGracefulShutdown { await loop.run() }
        // Graceful shutdown (or cancellation): the mapping goes, within a deadline.
        await loop.stop()
    }
}

/// The machine and its gateway clients, owned by one actor so that the loop and the shutdown
/// see the same state.
private actor PortMapperLoop {
    let service: PortMapperService
    var machine: PortMappingMachine
    let clients: GatewayClients
    var wakeAt: Double?

    init(service: PortMapperService) {
        self.service = service
        machine = PortMappingMachine(mode: service.settings.mode, configuration: service.settings.machine)
        clients = GatewayClients(
            request: .init(internalPort: service.settings.internalPort, lease: service.settings.machine.lease),
            gateway: service.settings.gateway, logger: service.logger)
    }

    func run() async {
        let own = service.settings.trustOwnPublicAddress ? LocalNetwork.publicIPv4() : nil
        var queue = machine.start(publicAddress: own, now: service.now())
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
                    await service.onReport(reachability)
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
