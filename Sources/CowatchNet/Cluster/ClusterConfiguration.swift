import CowatchCore

/// How a `cowatch-server` takes part in a cluster (`--cluster redis://HOST:PORT --advertise HOST:PORT`).
///
/// Every server of a cluster must share one TLS certificate and key and one token key (copy
/// them into each server's state directory, or give the same `--tls-cert`/`--tls-key`): a
/// redirected daemon pins the target to the key the redirecting server proved, and a room that
/// moves resumes where it was only on tokens the new owner can verify.
///
/// Threading: a value type.
public struct ClusterConfiguration: Sendable, Equatable {
    /// The Redis server holding the room directory.
    public var redis: Endpoint
    /// The address daemons are sent to for rooms hosted here (reachable by every daemon).
    public var advertise: Endpoint
    /// Lease timing (default: a 10 s lease renewed every 3 s).
    public var leases: RoomLeases.Configuration
    /// Seconds a Redis request may take. Default 1 s.
    public var requestTimeout: Double = 1

    public init(redis: Endpoint, advertise: Endpoint, leases: RoomLeases.Configuration = .init()) {
        self.redis = redis
        self.advertise = advertise
        self.leases = leases
    }

    /// Parses `redis://HOST:PORT` (the port defaults to 6379). Throws `invalid-configuration`.
    public static func parseRedisURL(_ text: String) throws(CowatchError) -> Endpoint {
        guard text.hasPrefix("redis://") else {
            throw CowatchError(.invalidConfiguration, "--cluster must look like redis://HOST:PORT")
        }
        var rest = String(text.dropFirst("redis://".count))
        if rest.hasSuffix("/") { rest.removeLast() }
        guard !rest.contains("@"), !rest.contains("/") else {
            throw CowatchError(.invalidConfiguration, "--cluster takes redis://HOST:PORT only (no password or database in the URL)")
        }
        let hasPort = rest.hasPrefix("[") ? rest.contains("]:") : rest.contains(":")
        guard let endpoint = RoomPlacement.parseAddress(hasPort ? rest : rest + ":6379") else {
            throw CowatchError(.invalidConfiguration, "--cluster must look like redis://HOST:PORT")
        }
        return endpoint
    }
}
