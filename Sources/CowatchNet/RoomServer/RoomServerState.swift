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
///   secret, and gives roles (and their names) back only to the same tokens.
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

    /// The rooms saved by the last run (empty when none).
    public func loadRecords() throws(CowatchError) -> [String: RoomSequencer.RoomRecord] {
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
            for (name, token) in entry["operators"]?.objectValue ?? [:] {
                if let token = token.stringValue { record.operators[name] = token }
            }
            records[name] = record
        }
        return records
    }

    public func saveRecords(_ records: [String: RoomSequencer.RoomRecord]) throws(CowatchError) {
        var rooms: [String: JSONValue] = [:]
        for (name, record) in records {
            var entry: [String: JSONValue] = ["operators": .object(record.operators.mapValues(JSONValue.string))]
            if let verifier = record.verifier {
                entry["salt"] = .string(verifier.salt)
                entry["key"] = .string(verifier.key)
            }
            if let owner = record.owner { entry["owner"] = .string(owner) }
            if let ownerToken = record.ownerToken { entry["owner_token"] = .string(ownerToken) }
            rooms[name] = .object(entry)
        }
        try write(Data(JSONValue.object(["rooms": .object(rooms)]).encoded()), to: roomsPath)
    }

    /// Creates the directory (0700, refused if unsafe) if needed and writes `data` atomically, mode 0600.
    private func write(_ data: Data, to path: String) throws(CowatchError) {
        // systemd's StateDirectory= with DynamicUser= is a symlink to /var/lib/private/…: follow it.
        try StatePaths.ensureDirectory((directory as NSString).resolvingSymlinksInPath)
        try StatePaths.writeAtomically((path as NSString).resolvingSymlinksInPath, contents: Array(data))
    }
}
