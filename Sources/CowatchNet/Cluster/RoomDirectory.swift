import CowatchCore

/// The cluster's room directory in Redis: one key per room (`cowatch:room:NAME`) holding the
/// advertised `HOST:PORT` of the server that hosts it, with a lease (the key's expiry).
///
/// Claims and renewals are one Lua script (atomic in Redis): the key is set to us if absent,
/// its expiry extended if it is ours, and left alone if it is another's — and the owner after
/// that is returned. A release deletes the key only if it is still ours, so a server whose lease
/// ran out can never delete its successor's claim.
///
/// Threading: a value type over the `RedisClient` actor; call from any task. Errors: those of
/// `RedisClient`, and `protocol-violation` when Redis answers something unexpected.
public struct RoomDirectory: Sendable {
    public let redis: RedisClient
    public let me: Endpoint
    public let keyPrefix: String

    public init(redis: RedisClient, me: Endpoint, keyPrefix: String = "cowatch:room:") {
        self.redis = redis
        self.me = me
        self.keyPrefix = keyPrefix
    }

    /// KEYS[1] room key, ARGV[1] our address, ARGV[2] lease in ms → the owner afterwards.
    static let placeScript = """
        local owner = redis.call('GET', KEYS[1])
        if not owner then
          redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
          return ARGV[1]
        end
        if owner == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
        return owner
        """

    /// KEYS[1] room key, ARGV[1] our address → 1 if deleted.
    static let releaseScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
        """

    /// Claims `room` if nobody holds it, extends our lease if we do; returns the owner's address
    /// as stored (ours, or another server's).
    public func place(_ room: String, lease: Double) async throws(CowatchError) -> String {
        let reply = try await redis.send([
            "EVAL", Self.placeScript, "1", keyPrefix + room, RoomPlacement.text(of: me), String(Self.milliseconds(lease)),
        ])
        guard let owner = reply.text, !owner.isEmpty, owner.utf8.count <= 300 else {
            throw CowatchError(.protocolViolation, "redis: unexpected answer to a room claim: \(Self.describe(reply))")
        }
        return owner
    }

    /// Deletes `room`'s key if we hold it; true when it was ours.
    @discardableResult
    public func release(_ room: String) async throws(CowatchError) -> Bool {
        let reply = try await redis.send(["EVAL", Self.releaseScript, "1", keyPrefix + room, RoomPlacement.text(of: me)])
        guard case .integer(let deleted) = reply else {
            throw CowatchError(.protocolViolation, "redis: unexpected answer to a release: \(Self.describe(reply))")
        }
        return deleted == 1
    }

    /// The address stored for `room` (nil when nobody holds it).
    public func owner(of room: String) async throws(CowatchError) -> String? {
        let reply = try await redis.send(["GET", keyPrefix + room])
        if case .bulk(nil) = reply { return nil }
        guard let owner = reply.text else {
            throw CowatchError(.protocolViolation, "redis: unexpected answer to GET: \(Self.describe(reply))")
        }
        return owner
    }

    /// Where a room's record (secret verifier, roles) is kept beside its claim.
    static let recordPrefix = "cowatch:record:"
    /// The longest record accepted from the directory.
    static let maxRecordBytes = 16_384

    /// The record kept for `room` (JSON text), nil when none.
    public func record(of room: String) async throws(CowatchError) -> String? {
        let reply = try await redis.send(["GET", Self.recordPrefix + room])
        if case .bulk(nil) = reply { return nil }
        guard case .bulk(let bytes?) = reply, bytes.count <= Self.maxRecordBytes else {
            throw CowatchError(.protocolViolation, "redis: unexpected answer to GET: \(Self.describe(reply))")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Keeps `room`'s record for `ttl` seconds (as long as an empty room's secret is remembered).
    public func saveRecord(_ room: String, _ json: String, ttl: Double) async throws(CowatchError) {
        let reply = try await redis.send(["SET", Self.recordPrefix + room, json, "PX", String(Self.milliseconds(ttl))])
        guard case .simple("OK") = reply else {
            throw CowatchError(.protocolViolation, "redis: unexpected answer to SET: \(Self.describe(reply))")
        }
    }

    static func milliseconds(_ seconds: Double) -> Int { max(1, Int((seconds * 1000).rounded())) }

    /// A reply in words, bounded (Redis error texts name what went wrong).
    static func describe(_ reply: RESPValue) -> String {
        switch reply {
        case .error(let text): return "error " + String(text.prefix(200))
        case .integer(let value): return "integer \(value)"
        case .simple(let text): return "\"" + String(text.prefix(200)) + "\""
        case .bulk(nil): return "nil"
        case .bulk(let bytes?): return "\(bytes.count) bytes"
        case .array(let values): return "an array of \(values?.count ?? 0)"
        }
    }
}
