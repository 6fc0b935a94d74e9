import CowatchCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What a room server keeps on disk, in its state directory (mode 0700):
/// - `token.key`: the key that signs session tokens (0600), so tokens outlive a restart;
/// - `rooms.json`: each room's secret verifier (salt and scrypt key — never the secret, but
///   enough to join the room: keep this file as private as the secret), owner and operators with
///   the ids of their session tokens, so a restarted server lets back only those who know the
///   secret, and gives roles (and their names) back only to the same tokens; and every other
///   name held in the room (`HeldNames`, oldest first) with its token's id, for the same reason;
///   and the room's playlist (`RoomPlaylist.recordJSON`), so the list outlives a restart.
///
/// Threading: a value type; its methods do blocking file I/O (small files), called from the
/// server's hub. Errors: `invalid-configuration` with the path and what is wrong.
public struct RoomServerState: Sendable {
    public let directory: String

    public init(directory: String) {
        self.directory = directory
    }

    private var keyPath: String { directory + "/token.key" }
    private var roomsPath: String { directory + "/rooms.json" }

    /// The token key, created on first use.
    public func tokenKey() throws(CowatchError) -> [UInt8] {
        if let data = try StatePaths.readFile((keyPath as NSString).resolvingSymlinksInPath, requirePrivate: true).map({ Data($0) }) {
            guard data.count >= 32 else { throw CowatchError(.invalidConfiguration, "\(keyPath) is too short; remove it to make a new one") }
            return Array(data)
        }
        let key = SessionTokens.newKey()
        try write(Data(key), to: keyPath)
        return key
    }

    /// The rooms saved by the last run (empty when none). A kept timeline's instant is put on
    /// the caller's clock: `now` on it is `wallNow` (seconds since 1970) on the file's.
    public func loadRecords(now: Double = 0, wallNow: Double = 0) throws(CowatchError) -> [String: RoomSequencer.RoomRecord] {
        guard let data = FileManager.default.contents(atPath: roomsPath) else { return [:] }
        guard let value = try? JSONValue.parse(Array(data)), let rooms = value["rooms"]?.objectValue else {
            throw CowatchError(.invalidConfiguration, "\(roomsPath) is not a room list; remove it to start afresh")
        }
        var records: [String: RoomSequencer.RoomRecord] = [:]
        for (name, entry) in rooms where RoomName.isValid(name) {
            var record = RoomSequencer.RoomRecord()
            if let salt = entry["salt"]?.stringValue, let key = entry["key"]?.stringValue {
                record.verifier = RoomVerifier(salt: salt, key: key)
            }
            record.owner = entry["owner"]?.stringValue
            record.ownerToken = entry["owner_token"]?.stringValue
            if let kept = entry["timeline"], let url = kept["url"]?.stringValue, let position = kept["position"]?.numberValue,
                let playing = kept["playing"]?.boolValue, let rate = kept["rate"]?.numberValue, let wall = kept["wall"]?.numberValue,
                position.isFinite, position >= 0, rate.isFinite, rate > 0, wall.isFinite
            {
                record.timeline = RoomSequencer.KeptTimeline(
                    url: url, title: kept["title"]?.stringValue, position: position, playing: playing, rate: rate,
                    at: now - (wallNow - wall))
            }
            for (name, token) in entry["operators"]?.objectValue ?? [:] {
                if let token = token.stringValue { record.operators[name] = token }
            }
            record.names = HeldNames(entry["names"].map(RoomSequencer.RoomRecord.holds(from:)) ?? [])
            if let playlist = entry["playlist"].flatMap(RoomPlaylist.init(recordJSON:)) { record.playlist = playlist }
            records[name] = record
        }
        return records
    }

    /// Writes the records; a kept timeline's instant `now` on the caller's clock is written as
    /// `wallNow` (seconds since 1970), so the next run can tell how long ago it was.
    public func saveRecords(_ records: [String: RoomSequencer.RoomRecord], now: Double = 0, wallNow: Double = 0) throws(CowatchError) {
        var rooms: [String: JSONValue] = [:]
        for (name, record) in records {
            var entry: [String: JSONValue] = ["operators": .object(record.operators.mapValues(JSONValue.string))]
            if let verifier = record.verifier {
                entry["salt"] = .string(verifier.salt)
                entry["key"] = .string(verifier.key)
            }
            if let owner = record.owner { entry["owner"] = .string(owner) }
            if let ownerToken = record.ownerToken { entry["owner_token"] = .string(ownerToken) }
            entry["names"] = record.names.json
            if record.playlist.version > 0 { entry["playlist"] = record.playlist.recordJSON }
            if let kept = record.timeline {
                entry["timeline"] = [
                    "url": .string(kept.url), "title": kept.title.map(JSONValue.string) ?? .null, "position": .number(kept.position),
                    "playing": .bool(kept.playing), "rate": .number(kept.rate), "wall": .number(wallNow - (now - kept.at)),
                ]
            }
            rooms[name] = .object(entry)
        }
        try write(Data(JSONValue.object(["rooms": .object(rooms)]).encoded()), to: roomsPath)
    }

    /// What `claimHostedRoom` changed in the host's own room's record.
    public enum HostedRoomClaim: Sendable, Equatable {
        /// No record yet, or it already matches the host's secret (or lack of one).
        case unchanged
        /// The host's secret differs from the one the room was guarded with: the new one replaces it.
        case secretChanged
        /// The room had no secret; now it has the host's.
        case secretAdded
        /// The room had a secret; the host now runs it without one.
        case secretRemoved
    }

    /// The hosting daemon owns its room's record: before its server starts, the record's
    /// verifier is made to match the secret the host runs with now (a fresh salt for a new
    /// secret), so a host that changed its secret is not refused by its own server, and old
    /// invites stop working. Roles are kept.
    ///
    /// Threading: blocking file I/O; any thread. Errors: the state files' (`invalid-configuration`,
    /// `io-error`), or `invalid-configuration` for a secret that cannot be derived.
    public func claimHostedRoom(_ room: String, secret: RoomSecretValue?) throws(CowatchError) -> HostedRoomClaim {
        var records = try loadRecords()
        guard var record = records[room] else { return .unchanged }
        let claim: HostedRoomClaim
        switch (record.verifier, secret) {
        case (nil, nil):
            return .unchanged
        case (.some, nil):
            record.verifier = nil
            claim = .secretRemoved
        case (nil, .some(let secret)):
            record.verifier = try RoomSecret.verifier(secret: secret.text)
            claim = .secretAdded
        case (.some(let stored), .some(let secret)):
            let derived = try RoomSecret.verifier(secret: secret.text, salt: stored.salt)
            guard !RoomSecret.matches(derived.key, stored.key) else { return .unchanged }
            record.verifier = try RoomSecret.verifier(secret: secret.text)
            claim = .secretChanged
        }
        records[room] = record
        try saveRecords(records)
        return claim
    }

    /// Creates the directory (0700, refused if unsafe) if needed and writes `data` atomically, mode 0600.
    private func write(_ data: Data, to path: String) throws(CowatchError) {
        // systemd's StateDirectory= with DynamicUser= is a symlink to /var/lib/private/…: follow it.
        try StatePaths.ensureDirectory((directory as NSString).resolvingSymlinksInPath)
        try StatePaths.writeAtomically((path as NSString).resolvingSymlinksInPath, contents: Array(data))
    }
}
