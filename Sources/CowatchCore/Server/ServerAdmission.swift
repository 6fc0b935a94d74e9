/// Who may talk to the room server at all, and how much: connection caps, the hello deadline,
/// budgets per connection, and what one address has earned (cool-downs after flooding, slower
/// answers after wrong secrets, a lockout of the one name that keeps getting its secret wrong).
///
/// Many people may share one address (a household's or a dormitory's NAT): what one of them
/// does never locks out the others, short of a flood.
///
/// It knows nothing of rooms beyond the names it is told: `RoomSequencer` asks it before acting
/// and tells it what happened.
/// A pure state machine; time is a parameter. Threading: a value type; one owner.
public struct ServerAdmission: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Seconds a new connection has to complete its handshake (hello, auth). Default 5 s.
        public var helloTimeout: Double = 5
        /// Seconds a joined connection may stay silent (daemons report every second). Default 30 s.
        public var idleTimeout: Double = 30
        /// Connections at once, in total (past it: `server-full`) and from one address. Defaults
        /// 12000 (a 2-core server holds 10 000 participants) and 32.
        public var maxConnections = 12_000
        public var maxConnectionsPerAddress = 32
        /// Connections still in their handshake at once, in total and from one address. Defaults 256 and 8.
        public var maxPending = 256
        public var maxPendingPerAddress = 8
        /// Rooms created by one address that are alive at once. Default 8.
        public var maxRoomsPerAddress = 8
        /// Token bucket for every message of a connection: burst, then per second. Beyond it the
        /// connection is dropped (`flooding`) and its address may not come back for `floodCooldown`.
        public var floodBurst: Double = 200
        public var floodRate: Double = 100
        public var floodCooldown: Double = 60
        /// Token bucket for group actions of one participant: a burst of 5, then 1 a second.
        /// Beyond it, actions are refused (`rate-limited`) and nobody else hears of them.
        public var actionBurst: Double = 5
        public var actionRate: Double = 1
        /// Token bucket for stall reports (buffering, seeking) of one participant: 3, then one per
        /// 20 s. Beyond it, stalls are noted but never hold the group.
        public var stallBurst: Double = 3
        public var stallRate: Double = 0.05
        /// The same two budgets for everyone in one room from one address (its `AddressIdentity`
        /// key), on top of each participant's own: a name costs nothing to make, an address does,
        /// so 30 identities from one address get the actions of two people, not of thirty (issue
        /// 22). Defaults: actions 10, then 2 a second; stalls 6, then one per 10 s. A household
        /// behind one NAT shares them; people do not seek twice a second for long.
        public var addressActionBurst: Double = 10
        public var addressActionRate: Double = 2
        public var addressStallBurst: Double = 6
        public var addressStallRate: Double = 0.1
        /// Token bucket for chat lines of one participant: 5, then one a second (`rate-limited`).
        public var chatBurst: Double = 5
        public var chatRate: Double = 1
        /// Token buckets for messenger messages of one participant: count (64, then 32 a second)
        /// and payload bytes (2 MiB, then 1 MiB a second). Beyond them a reliable message is
        /// refused (`rate-limited`) and an unreliable one dropped; nobody else is slowed.
        public var messageBurst: Double = 64
        public var messageRate: Double = 32
        public var messageByteBurst: Double = 2 * 1_048_576
        public var messageByteRate: Double = 1_048_576
        /// Wrong secrets (and wrong transfer tokens): the refusal waits `authFailureDelay`. After
        /// `maxAuthFailures` within `authFailureWindow` seconds for one name in one room from one
        /// address, that name is refused there from there (`auth-failed`, saying so) for
        /// `authLockout` seconds: a friend who keeps mistyping locks out only themself, never the
        /// others behind the same address (a household's NAT). Only a flood of failures from one
        /// address, `maxAuthFailuresPerAddress` within the window whatever the names (a guesser
        /// cycling names), refuses the whole address for `addressAuthLockout` seconds.
        /// Defaults 1 s; 5 a minute → 60 s; 30 a minute → 300 s.
        public var authFailureDelay: Double = 1
        public var maxAuthFailures = 5
        public var authFailureWindow: Double = 60
        public var authLockout: Double = 60
        public var maxAuthFailuresPerAddress = 30
        public var addressAuthLockout: Double = 300

        public init() {}
    }

    public typealias ConnectionID = Int

    struct Bucket {
        var tokens: Double
        var at: Double

        /// Takes `amount` tokens (one by default) if there are that many.
        mutating func take(_ amount: Double = 1, burst: Double, rate: Double, now: Double) -> Bool {
            tokens = min(burst, tokens + max(0, now - at) * rate)
            at = now
            guard tokens >= amount else { return false }
            tokens -= amount
            return true
        }
    }

    struct Connection {
        var address: String
        var joined = false
        /// Handshake deadline, then idle deadline.
        var deadline: Double
        /// A refusal held back until then (wrong secret), to be sent by `tick`.
        var refusal: (at: Double, error: CowatchError)?
        var messages: Bucket
        var actions: Bucket
        var stalls: Bucket
        var chats: Bucket
        var sent: Bucket
        var bytes: Bucket
    }

    struct AddressRecord {
        var connections = 0
        var pending = 0
        var bannedUntil = -Double.infinity
        var banReason = ""
        var authFailures: [Double] = []
    }

    /// Who failed to prove a secret: one name in one room, from one address.
    struct Claimant: Hashable {
        var address: String
        var room: String
        var name: String
    }

    struct ClaimantRecord {
        var failures: [Double] = []
        var lockedUntil = -Double.infinity
    }

    /// One address in one room: the budgets its participants there share.
    struct RoomAddress: Hashable {
        var room: String
        var address: String
    }

    struct SharedBudgets {
        var actions: Bucket
        var stalls: Bucket
    }

    public let configuration: Configuration
    private var connections: [ConnectionID: Connection] = [:]
    /// Created by an action or a stall, forgotten by `tick` once both buckets are full again:
    /// never more entries than participants that acted in the last minute or so.
    private var shared: [RoomAddress: SharedBudgets] = [:]
    private var addresses: [String: AddressRecord] = [:]
    /// Wrong secrets per name, room and address (see `authFailed`).
    private var claimants: [Claimant: ClaimantRecord] = [:]
    private var pending = 0
    /// Connections by deadline. Deadlines only move later (a message, the join) except for a
    /// held-back refusal, which is pushed; `tick` re-pushes an entry that turns out early.
    private var deadlines = DeadlineHeap<ConnectionID>()
    /// When `tick` next forgets addresses with nothing left to remember (once a second at most).
    private var nextSweep = -Double.infinity

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    public var connectionCount: Int { connections.count }

    /// A new connection from `address`: nil to go on, or why it is refused at once.
    public mutating func connected(_ id: ConnectionID, address: String, now: Double) -> CowatchError? {
        var record = addresses[address] ?? AddressRecord()
        if now < record.bannedUntil {
            let wait = Int((record.bannedUntil - now).rounded(.up))
            return CowatchError(.serverBusy, "\(record.banReason); try again in \(wait) s")
        }
        if connections.count >= configuration.maxConnections {
            return CowatchError(.serverFull, "the server is full (\(configuration.maxConnections) connections); try again later")
        }
        if pending >= configuration.maxPending {
            return CowatchError(.serverBusy, "the server has too many connections; try again later")
        }
        if record.connections >= configuration.maxConnectionsPerAddress || record.pending >= configuration.maxPendingPerAddress {
            return CowatchError(.serverBusy, "too many connections from \(address)")
        }
        record.connections += 1
        record.pending += 1
        addresses[address] = record
        pending += 1
        let full = Bucket(tokens: configuration.floodBurst, at: now)
        connections[id] = Connection(
            address: address, deadline: now + configuration.helloTimeout, messages: full,
            actions: Bucket(tokens: configuration.actionBurst, at: now), stalls: Bucket(tokens: configuration.stallBurst, at: now),
            chats: Bucket(tokens: configuration.chatBurst, at: now), sent: Bucket(tokens: configuration.messageBurst, at: now),
            bytes: Bucket(tokens: configuration.messageByteBurst, at: now))
        deadlines.push(now + configuration.helloTimeout, id)
        return nil
    }

    public mutating func disconnected(_ id: ConnectionID) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        addresses[connection.address]?.connections -= 1
        if !connection.joined {
            addresses[connection.address]?.pending -= 1
            pending -= 1
        }
        // Forget an address with nothing left to remember (bans and failures wait for `tick`).
        if let record = addresses[connection.address], record.connections <= 0, record.bannedUntil == -.infinity,
            record.authFailures.isEmpty
        {
            addresses[connection.address] = nil
        }
    }

    public func address(of id: ConnectionID) -> String? { connections[id]?.address }
    public func isJoined(_ id: ConnectionID) -> Bool { connections[id]?.joined == true }

    /// The handshake is done: the connection now only has to stay alive.
    public mutating func joined(_ id: ConnectionID, now: Double) {
        guard var connection = connections[id], !connection.joined else { return }
        connection.joined = true
        connection.deadline = now + configuration.idleTimeout
        connections[id] = connection
        deadlines.push(connection.deadline, id)
        addresses[connection.address]?.pending -= 1
        pending -= 1
    }

    /// Every message: false when the connection floods (drop it; its address cools down).
    public mutating func received(from id: ConnectionID, now: Double) -> Bool {
        guard var connection = connections[id] else { return false }
        if connection.joined { connection.deadline = now + configuration.idleTimeout }
        let allowed = connection.messages.take(burst: configuration.floodBurst, rate: configuration.floodRate, now: now)
        connections[id] = connection
        if !allowed { ban(connection.address, for: configuration.floodCooldown, reason: "\(connection.address) flooded the server", now: now) }
        return allowed
    }

    /// A group action in `room`: false when over the participant's budget or its address's in
    /// that room (then neither is charged).
    public mutating func allowAction(from id: ConnectionID, in room: String, now: Double) -> Bool {
        take(
            from: id, in: room, now: now, own: \.actions, configuration.actionBurst, configuration.actionRate,
            shared: \.actions, configuration.addressActionBurst, configuration.addressActionRate)
    }

    /// A new stall in `room`: false when over the participant's budget or its address's there.
    public mutating func allowStall(from id: ConnectionID, in room: String, now: Double) -> Bool {
        take(
            from: id, in: room, now: now, own: \.stalls, configuration.stallBurst, configuration.stallRate,
            shared: \.stalls, configuration.addressStallBurst, configuration.addressStallRate)
    }

    /// One token from the participant's bucket `own` and its address's `shared` in `room`, or
    /// from neither.
    private mutating func take(
        from id: ConnectionID, in room: String, now: Double,
        own: WritableKeyPath<Connection, Bucket>, _ ownBurst: Double, _ ownRate: Double,
        shared bucket: WritableKeyPath<SharedBudgets, Bucket>, _ sharedBurst: Double, _ sharedRate: Double
    ) -> Bool {
        guard var connection = connections[id] else { return false }
        let key = RoomAddress(room: room, address: connection.address)
        var budgets = shared[key] ?? freshShared(now: now)
        guard connection[keyPath: own].take(burst: ownBurst, rate: ownRate, now: now),
            budgets[keyPath: bucket].take(burst: sharedBurst, rate: sharedRate, now: now)
        else { return false }
        connections[id] = connection
        shared[key] = budgets
        return true
    }

    private func freshShared(now: Double) -> SharedBudgets {
        SharedBudgets(
            actions: Bucket(tokens: configuration.addressActionBurst, at: now),
            stalls: Bucket(tokens: configuration.addressStallBurst, at: now))
    }

    /// Whether both shared buckets would be full by `now` (nothing to remember).
    private func isRefilled(_ budgets: SharedBudgets, now: Double) -> Bool {
        var actions = budgets.actions
        var stalls = budgets.stalls
        _ = actions.take(0, burst: configuration.addressActionBurst, rate: configuration.addressActionRate, now: now)
        _ = stalls.take(0, burst: configuration.addressStallBurst, rate: configuration.addressStallRate, now: now)
        return actions.tokens >= configuration.addressActionBurst && stalls.tokens >= configuration.addressStallBurst
    }

    /// A chat line: false when over the participant's budget.
    public mutating func allowChat(from id: ConnectionID, now: Double) -> Bool {
        guard connections[id] != nil else { return false }
        return connections[id]!.chats.take(burst: configuration.chatBurst, rate: configuration.chatRate, now: now)
    }

    /// A messenger message of `bytes` payload bytes: false when over either budget (then
    /// neither is charged).
    public mutating func allowMessage(bytes: Int, from id: ConnectionID, now: Double) -> Bool {
        guard var connection = connections[id] else { return false }
        let before = connection
        guard connection.sent.take(burst: configuration.messageBurst, rate: configuration.messageRate, now: now),
            connection.bytes.take(
                Double(bytes), burst: configuration.messageByteBurst, rate: configuration.messageByteRate, now: now)
        else {
            connections[id] = before
            return false
        }
        connections[id] = connection
        return true
    }

    /// Keeps `address` out for `seconds` (new connections are refused with `server-busy`).
    public mutating func ban(_ address: String, for seconds: Double, reason: String, now: Double) {
        var record = addresses[address] ?? AddressRecord()
        if now + seconds > record.bannedUntil {
            record.bannedUntil = now + seconds
            record.banReason = reason
        }
        addresses[address] = record
    }

    /// A wrong secret (or transfer token) from `id`, which claimed `name` in `room`: its refusal
    /// is held back `authFailureDelay`. A name that keeps failing from one address is locked
    /// out there (`authLockout`; this refusal says so), never the others at that address; only
    /// an address that floods failures (`maxAuthFailuresPerAddress`) is locked out whole.
    public mutating func authFailed(_ id: ConnectionID, room: String, name: String, error: CowatchError, now: Double) {
        guard var connection = connections[id] else { return }
        let window = configuration.authFailureWindow
        var record = addresses[connection.address] ?? AddressRecord()
        record.authFailures = record.authFailures.filter { now - $0 < window } + [now]
        addresses[connection.address] = record
        if record.authFailures.count >= configuration.maxAuthFailuresPerAddress {
            ban(
                connection.address, for: configuration.addressAuthLockout,
                reason: "too many wrong room secrets from \(connection.address) (\(record.authFailures.count) within \(Int(window)) s)",
                now: now)
        }
        let claimant = Claimant(address: connection.address, room: room, name: name)
        var claim = claimants[claimant] ?? ClaimantRecord()
        claim.failures = claim.failures.filter { now - $0 < window } + [now]
        var refusal = error
        if claim.failures.count >= configuration.maxAuthFailures {
            claim.lockedUntil = max(claim.lockedUntil, now + configuration.authLockout)
            claim.failures = []  // counted afresh once the lockout is over
            refusal = CowatchError(error.code, "\(error.message); \(Self.lockoutMessage(claimant, wait: claim.lockedUntil - now))")
        }
        claimants[claimant] = claim
        connection.refusal = (now + configuration.authFailureDelay, refusal)
        connection.deadline = .infinity
        connections[id] = connection
        deadlines.push(now + configuration.authFailureDelay, id)
    }

    /// Why `name` may not try a secret for `room` from `id`'s address now (it failed too
    /// often from there: `auth-failed`, saying so), or nil. Others at that address may.
    public func authLockout(of id: ConnectionID, room: String, name: String, now: Double) -> CowatchError? {
        guard let address = connections[id]?.address else { return nil }
        let claimant = Claimant(address: address, room: room, name: name)
        guard let until = claimants[claimant]?.lockedUntil, until > now else { return nil }
        return CowatchError(.authFailed, Self.lockoutMessage(claimant, wait: until - now))
    }

    private static func lockoutMessage(_ claimant: Claimant, wait: Double) -> String {
        "too many wrong secrets for \(claimant.name) in room \(claimant.room) from this address; try again in \(Int(wait.rounded(.up))) s"
    }

    /// True while a held-back refusal waits: the connection must not be served meanwhile.
    public func isRefused(_ id: ConnectionID) -> Bool { connections[id]?.refusal != nil }

    public enum Expiry: Sendable, Equatable {
        /// Send this error and close.
        case refuse(ConnectionID, CowatchError)
    }

    /// Connections whose deadline passed: handshakes not done in time, silent participants,
    /// refusals now due.
    public mutating func tick(now: Double) -> [Expiry] {
        var expired: [Expiry] = []
        var early: [(Double, ConnectionID)] = []
        while let entry = deadlines.popDue(now) {
            guard let connection = connections[entry.key] else { continue }  // gone
            let due = connection.refusal?.at ?? connection.deadline
            guard now >= due else {
                // Its deadline moved later since (it spoke, or joined): look again then.
                if due.isFinite { early.append((due, entry.key)) }
                continue
            }
            if let refusal = connection.refusal {
                expired.append(.refuse(entry.key, refusal.error))
            } else {
                expired.append(.refuse(entry.key, connection.joined
                    ? CowatchError(.timeout, "nothing heard for \(Int(configuration.idleTimeout)) s")
                    : CowatchError(.timeout, "no handshake within \(Int(configuration.helloTimeout)) s")))
            }
            // Still due at the next tick if the caller keeps the connection.
            early.append((due, entry.key))
        }
        for (time, id) in early { deadlines.push(time, id) }
        // Keep the top exact, so `nextDeadline` is: drop entries of gone connections, move
        // entries whose deadline moved later.
        while let top = deadlines.first {
            guard let connection = connections[top.key] else {
                deadlines.popFirst()
                continue
            }
            let due = connection.refusal?.at ?? connection.deadline
            if due == top.time { break }
            deadlines.popFirst()
            if due.isFinite { deadlines.push(due, top.key) }
        }
        if now >= nextSweep {
            nextSweep = now + 1
            // Forget addresses with nothing left to remember.
            addresses = addresses.filter { entry in
                entry.value.connections > 0 || entry.value.bannedUntil > now
                    || entry.value.authFailures.contains { now - $0 < configuration.authFailureWindow }
            }
            shared = shared.filter { !isRefilled($0.value, now: now) }
            claimants = claimants.filter { entry in
                entry.value.lockedUntil > now || entry.value.failures.contains { now - $0 < configuration.authFailureWindow }
            }
        }
        // Distinct: a connection may have had several entries.
        var seen: Set<ConnectionID> = []
        return expired.filter { seen.insert($0.id).inserted }.sorted { $0.id < $1.id }
    }

    /// When `tick` must run next (possibly early: entries are re-checked then).
    public func nextDeadline() -> Double? {
        deadlines.first?.time
    }
}

extension ServerAdmission.Expiry {
    var id: Int { if case .refuse(let id, _) = self { id } else { 0 } }
}
