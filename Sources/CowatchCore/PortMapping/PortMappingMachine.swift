/// Keeps a server's port forwarded by the gateway for as long as the server runs.
///
/// It tries the protocols of its `PortMappingMode` in order until one maps the port, renews the
/// mapping at half its lease (a renewal is a fresh request, so a router that forgot the mapping
/// — rebooted, cleared its table — gets it again), falls back to the other protocols when a
/// renewal fails, retries with a growing delay when nothing worked, and removes the mapping when
/// stopped. A gateway whose own outside address is private or carrier-grade NAT cannot make us
/// reachable: that is reported, the useless mapping removed, and asked again much later.
///
/// The shell carries out `Action`s (one attempt at a time), feeds results back with
/// `attemptFinished`, and calls `tick` at or after the instant of the last `.wake`.
///
/// Threading: a value type; one owner.
public struct PortMappingMachine: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// The lease asked for, in seconds. Default 3600 (an hour; renewed at half).
        public var lease: Double = 3600
        /// The first delay before asking again after nothing worked; doubled each time up to `maxRetry`.
        public var firstRetry: Double = 60
        public var maxRetry: Double = 1800
        /// Before asking again when the gateway's outside address is not public.
        public var unusableRetry: Double = 3600
        /// The shortest time between renewals, whatever lease a gateway grants.
        public var minRenewal: Double = 2

        public init() {}
    }

    /// What one attempt with one protocol found.
    public enum AttemptResult: Sendable, Equatable {
        case mapped(GatewayMapping)
        /// The gateway answered, but its outside address is private or carrier-grade NAT (and
        /// any mapping made is in `mapping`, to be removed).
        case outsideNotPublic(IPAddressBytes, method: PortMappingProtocol, mapping: GatewayMapping?)
        case refused(method: PortMappingProtocol, reason: String)
        case noAnswer(method: PortMappingProtocol)
    }

    public enum Action: Sendable, Equatable {
        /// Ask the gateway for the port with this protocol (a renewal when `renewing` is set).
        case attempt(PortMappingProtocol, renewing: GatewayMapping?)
        /// Ask the gateway to drop this mapping (best effort, bounded in time).
        case remove(GatewayMapping)
        /// Tell the person and the status: the reachability changed.
        case report(Reachability)
        /// Call `tick` at this instant.
        case wake(at: Double)
    }

    public let mode: PortMappingMode
    public let configuration: Configuration
    public private(set) var reachability: Reachability
    private(set) var mapping: GatewayMapping?
    private var pending: [PortMappingProtocol] = []
    private var results: [AttemptResult] = []
    private var attempting = false
    private var wakeAt: Double?
    private var retryDelay: Double
    private var stopped = false

    public init(mode: PortMappingMode, configuration: Configuration = Configuration()) {
        self.mode = mode
        self.configuration = configuration
        reachability = mode == .off ? .notAsked : .checking
        retryDelay = configuration.firstRetry
    }

    /// Starts. `publicAddress` is a public address this machine has itself (then nothing is
    /// asked of any gateway).
    public mutating func start(publicAddress: IPAddressBytes?, now: Double) -> [Action] {
        if let publicAddress, mode != .off { return [.report(set(.direct(publicAddress)))] }
        guard mode != .off else { return [.report(reachability)] }
        return beginRound(renewing: nil)
    }

    /// The result of the attempt last asked for.
    public mutating func attemptFinished(_ result: AttemptResult, now: Double) -> [Action] {
        guard attempting, !stopped else {
            // Stopped meanwhile: a mapping made after all is removed at once.
            if case .mapped(let late) = result, late != mapping { return [.remove(late)] }
            return []
        }
        attempting = false
        switch result {
        case .mapped(let granted):
            var actions: [Action] = []
            if let old = mapping, old.method != granted.method || old.externalPort != granted.externalPort || old.gateway != granted.gateway {
                actions.append(.remove(old))
            }
            mapping = granted
            pending = []
            results = []
            retryDelay = configuration.firstRetry
            let renewIn = granted.lease > 0 ? max(configuration.minRenewal, granted.lease / 2) : configuration.lease / 2
            wakeAt = now + renewIn
            if reachability != .mapped(granted) { actions.append(.report(set(.mapped(granted)))) }
            actions.append(.wake(at: now + renewIn))
            return actions
        case .outsideNotPublic(let outside, let method, let made):
            var actions: [Action] = []
            if let made { actions.append(.remove(made)) }
            if let old = mapping, old != made { actions.append(.remove(old)) }
            mapping = nil
            pending = []
            results = []
            let report: Reachability = outside.isCarrierGradeNAT
                ? .carrierGradeNAT(outside: outside, method: method) : .doubleNAT(outside: outside, method: method)
            if reachability != report { actions.append(.report(set(report))) }
            wakeAt = now + configuration.unusableRetry
            actions.append(.wake(at: now + configuration.unusableRetry))
            return actions
        case .refused, .noAnswer:
            results.append(result)
            if !pending.isEmpty { return [nextAttempt()] }
            // Every protocol tried: whatever mapping we had is gone or unreachable.
            var actions: [Action] = []
            let lost = mapping
            mapping = nil
            let report = roundReport()
            if reachability != report { actions.append(.report(set(report))) }
            if lost != nil {
                // Renewal failed everywhere: start over soon (a router that restarts answers again).
                retryDelay = configuration.firstRetry
            }
            wakeAt = now + retryDelay
            actions.append(.wake(at: now + retryDelay))
            retryDelay = min(configuration.maxRetry, retryDelay * 2)
            results = []
            return actions
        }
    }

    /// Time passed: renews or retries when due.
    public mutating func tick(now: Double) -> [Action] {
        guard !stopped, !attempting, let due = wakeAt, now >= due else { return [] }
        wakeAt = nil
        return beginRound(renewing: mapping)
    }

    /// Stops: the mapping (if any) is removed; later results are dropped.
    public mutating func stop() -> [Action] {
        guard !stopped else { return [] }
        stopped = true
        wakeAt = nil
        defer { mapping = nil }
        return mapping.map { [.remove($0)] } ?? []
    }

    private mutating func beginRound(renewing: GatewayMapping?) -> [Action] {
        var order = mode.methods
        // A renewal asks the protocol that worked first.
        if let renewing, let index = order.firstIndex(of: renewing.method) {
            order.remove(at: index)
            order.insert(renewing.method, at: 0)
        }
        pending = order
        results = []
        return [nextAttempt()]
    }

    private mutating func nextAttempt() -> Action {
        let method = pending.removeFirst()
        attempting = true
        let renewing = mapping?.method == method ? mapping : nil
        return .attempt(method, renewing: renewing)
    }

    /// The most useful thing a round of failures says: a refusal (a gateway is there) over no answer.
    private func roundReport() -> Reachability {
        for case .refused(let method, let reason) in results { return .refused(method: method, reason: reason) }
        return .noGateway(tried: results.compactMap { if case .noAnswer(let method) = $0 { method } else { nil } })
    }

    private mutating func set(_ new: Reachability) -> Reachability {
        reachability = new
        return new
    }
}
