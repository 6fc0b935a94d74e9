/// Where a daemon connects next when its room server is one of a cluster — a pure state machine.
///
/// Every attempt starts at the daemon's own server address (`origin`: an invite's or `--join`'s,
/// often a DNS round-robin name or a TCP balancer). A server that does not host the room answers
/// the hello with a `redirect`; the next connection goes there, pinned to the certificate key the
/// redirecting server proved (a cluster shares one certificate, so a redirect can never lead to a
/// server the daemon would not trust at its origin). At most `maxHops` redirects follow one
/// another; then the chain is given up and the daemon backs off and starts again at the origin
/// (the directory is changing hands: an owner died and its lease has not run out yet).
///
/// When a connection ends, the next attempt goes to the origin again: the owner may be gone, and
/// the origin either claims the room or redirects.
///
/// Threading: a value type; one owner.
public struct ClusterRoute: Sendable {
    /// Redirects in a row before the chain is given up. Default 3.
    public let maxHops: Int
    public let origin: Endpoint
    /// Where the next connection goes.
    public private(set) var target: Endpoint
    /// The certificate fingerprint (`sha256:…`) the next connection must present; nil at the
    /// origin (the daemon's own pinning rules apply there).
    public private(set) var pinned: String?
    /// Redirects followed since the chain began at the origin.
    public private(set) var hops = 0

    public init(origin: Endpoint, maxHops: Int = 3) {
        self.origin = origin
        self.target = origin
        self.maxHops = maxHops
    }

    public enum Next: Sendable, Hashable {
        /// Connect to `target` now.
        case follow
        /// Too many redirects in a row: back off, then start again at the origin.
        case giveUp(CowatchError)
    }

    /// A server redirected us to `endpoint`; `fingerprint`: the key it proved on this link
    /// (empty without TLS).
    public mutating func redirected(to endpoint: Endpoint, fingerprint: String) -> Next {
        hops += 1
        guard hops <= maxHops else {
            backToOrigin()
            return .giveUp(CowatchError(.serverBusy, "redirected more than \(maxHops) times in a row; the cluster's directory is changing, trying again"))
        }
        target = endpoint
        pinned = fingerprint.isEmpty ? nil : fingerprint
        return .follow
    }

    /// A welcome: the chain reached the room.
    public mutating func welcomed() {
        hops = 0
    }

    /// A connection ended (after a welcome or not, but not with a redirect): the next one starts
    /// at the origin.
    public mutating func connectionEnded() {
        backToOrigin()
    }

    private mutating func backToOrigin() {
        target = origin
        pinned = nil
        hops = 0
    }
}
