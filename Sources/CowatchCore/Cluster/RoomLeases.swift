/// The rooms this server holds in a cluster's shared directory, and when to renew, release or
/// give them up — a pure state machine; time is a parameter, the directory is the shell's.
///
/// A room belongs to the server whose address its directory key holds, for a lease. The first
/// server asked for a room that nobody holds claims it (`RoomPlacement.decide`); this machine
/// then renews the lease every `renewInterval` while the room lives here, releases it once the
/// room has been empty for `emptyGrace` (a hello claims the room before its welcome, so a just
/// claimed room is given that long to fill), and — when a renewal fails for longer than the
/// lease, or the directory names another owner — tells the shell to evict the room's
/// connections: from then on another server may host it, and two hosts would split the group.
///
/// Expiry is reckoned from when a claim or renewal was *sent* (the directory set the lease no
/// earlier), less `safetyMargin` for clock-rate differences, so this server gives a room up
/// before the directory can hand it to someone else.
///
/// Threading: a value type; one owner.
public struct RoomLeases: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Seconds a claim or renewal holds a room in the directory. Default 10 s.
        public var lease: Double = 10
        /// Seconds between renewals of a room held here. Default 3 s.
        public var renewInterval: Double = 3
        /// Seconds a held room may stay empty (its first hello is still in its handshake, or
        /// everyone left) before it is released. Default 6 s.
        public var emptyGrace: Double = 6
        /// Seconds before a lease's end at which this server stops trusting it. Default 1 s.
        public var safetyMargin: Double = 1

        public init() {}

        /// The same timing scaled to a lease of `seconds` (renew at 30 %, grace 60 %, margin 10 %).
        public init(lease seconds: Double) {
            lease = seconds
            renewInterval = seconds * 0.3
            emptyGrace = seconds * 0.6
            safetyMargin = seconds * 0.1
        }
    }

    /// What the shell does for the directory or the room.
    public enum Action: Sendable, Hashable {
        /// Extend this server's lease on the room, if it still holds it (or re-claim it if the
        /// key vanished); report with `renewed`.
        case renew(String)
        /// Delete the room's key if this server holds it.
        case release(String)
        /// Close the room's connections here: this server no longer owns it. Its daemons
        /// reconnect and are redirected to (or claim it on) whichever server owns it now.
        case evict(String)
    }

    struct Held {
        /// This server trusts its lease until then.
        var trustedUntil: Double
        /// The last time the room had members here (or its claim).
        var lastLive: Double
        var lastRenewSent: Double
        var renewing = false
    }

    public let configuration: Configuration
    private var held: [String: Held] = [:]

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// The rooms this server holds now.
    public var rooms: [String] { held.keys.sorted() }

    /// True when a hello for `room` may be served without asking the directory: this server
    /// holds a lease on it that has not run out.
    public func holds(_ room: String, now: Double) -> Bool {
        guard let entry = held[room] else { return false }
        return now < entry.trustedUntil
    }

    /// The directory says this server holds `room` (a claim that won, or a lookup that named
    /// us), for a request sent at `sentAt`.
    public mutating func claimed(_ room: String, sentAt: Double) {
        let until = sentAt + configuration.lease - configuration.safetyMargin
        if var entry = held[room] {
            entry.trustedUntil = max(entry.trustedUntil, until)
            entry.lastLive = max(entry.lastLive, sentAt)
            held[room] = entry
        } else {
            held[room] = Held(trustedUntil: until, lastLive: sentAt, lastRenewSent: sentAt)
        }
    }

    /// The directory names another owner for `room`: forget it, and evict it if it lives here.
    public mutating func ownedElsewhere(_ room: String, live: Bool) -> [Action] {
        held[room] = nil
        return live ? [.evict(room)] : []
    }

    /// The answer to a `renew` sent at `sentAt`: true when the lease was extended, false when
    /// another server holds the room, nil when the directory could not be reached (the lease
    /// runs on; `tick` gives the room up if it runs out).
    public mutating func renewed(_ room: String, held stillHeld: Bool?, sentAt: Double, live: Bool) -> [Action] {
        guard var entry = held[room] else { return [] }
        entry.renewing = false
        switch stillHeld {
        case true?:
            entry.trustedUntil = max(entry.trustedUntil, sentAt + configuration.lease - configuration.safetyMargin)
            held[room] = entry
            return []
        case false?:
            return ownedElsewhere(room, live: live)
        case nil:
            held[room] = entry
            return []
        }
    }

    /// Runs the leases' deadlines. `live`: the rooms with members on this server now.
    public mutating func tick(now: Double, live: Set<String>) -> [Action] {
        var actions: [Action] = []
        for room in held.keys.sorted() {
            guard var entry = held[room] else { continue }
            let isLive = live.contains(room)
            if isLive { entry.lastLive = now }
            if now >= entry.trustedUntil {
                // Renewals failed for a whole lease: the directory may give the room away.
                held[room] = nil
                if isLive { actions.append(.evict(room)) }
                continue
            }
            if !isLive, now - entry.lastLive >= configuration.emptyGrace, !entry.renewing {
                held[room] = nil
                actions.append(.release(room))
                continue
            }
            if !entry.renewing, now - entry.lastRenewSent >= configuration.renewInterval {
                entry.renewing = true
                entry.lastRenewSent = now
                actions.append(.renew(room))
            }
            held[room] = entry
        }
        return actions
    }

    /// When `tick` must run next (nil when no room is held).
    public func nextDeadline() -> Double? {
        held.values.map { entry in
            min(entry.trustedUntil, entry.renewing ? entry.trustedUntil : entry.lastRenewSent + configuration.renewInterval,
                entry.lastLive + configuration.emptyGrace)
        }.min()
    }
}

/// What a server does with a hello for a room, given the directory's answer.
public enum RoomPlacement: Sendable, Hashable {
    /// The room is this server's (held already, or just claimed): serve the hello.
    case serve
    /// Nobody holds it: claim it (set-if-absent), then decide again on the answer.
    case claim
    /// Another server holds it: send the daemon there.
    case redirect(Endpoint)
    /// The directory holds something that is not an address (or our own claim failed twice):
    /// refuse for now, the daemon retries.
    case unavailable(CowatchError)

    /// `owner`: the directory's value for the room (nil when absent); `me`: our advertised address.
    public static func decide(owner: String?, me: Endpoint) -> RoomPlacement {
        guard let owner else { return .claim }
        guard let endpoint = parseAddress(owner) else {
            return .unavailable(CowatchError(.serverBusy, "the room directory holds a malformed address for this room; try again"))
        }
        return endpoint == me ? .serve : .redirect(endpoint)
    }

    /// A `HOST:PORT` from the directory or the wire, checked: a host name or IP literal of at
    /// most 253 bytes (letters, digits, `.-:_`; `[v6]` brackets stripped), a port 1–65535.
    public static func parseAddress(_ text: String) -> Endpoint? {
        guard text.utf8.count <= 262, let endpoint = try? Endpoint(parsing: text, defaultHost: nil) else { return nil }
        return isValid(host: endpoint.host) && (1...65535).contains(endpoint.port) ? endpoint : nil
    }

    public static func isValid(host: String) -> Bool {
        (1...253).contains(host.utf8.count)
            && host.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x5a).contains($0) || (0x61...0x7a).contains($0)
                    || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "_")
            }
    }

    /// The address as the directory stores it (IPv6 in brackets).
    public static func text(of endpoint: Endpoint) -> String {
        endpoint.host.contains(":") ? "[\(endpoint.host)]:\(endpoint.port)" : "\(endpoint.host):\(endpoint.port)"
    }
}
