/// A room's record (its secret's verifier, owner and operators with their tokens' ids) as the
/// cluster's directory keeps it beside the room's claim, so the server a room moves to guards it
/// with the same secret and gives the same tokens their roles back.
///
/// Decoding checks everything (the directory is shared infrastructure, not this process): hex
/// of the right lengths, valid names, at most `maxOperators` operators; anything else is nil.
/// Held names (`HeldNames`) travel too; an entry that is not a name and a token id is left out,
/// and only the newest `maxNames` are kept. So does the playlist, once it was ever changed
/// (`RoomPlaylist.recordJSON`, read as leniently); a record without one reads as an empty list.
extension RoomSequencer.RoomRecord {
    public var directoryJSON: JSONValue {
        var entry: [String: JSONValue] = ["operators": .object(operators.mapValues(JSONValue.string))]
        if let verifier {
            entry["salt"] = .string(verifier.salt)
            entry["key"] = .string(verifier.key)
        }
        if let owner { entry["owner"] = .string(owner) }
        if let ownerToken { entry["owner_token"] = .string(ownerToken) }
        entry["names"] = names.json
        if playlist.version > 0 { entry["playlist"] = playlist.recordJSON }
        return .object(entry)
    }

    /// Held names as kept (`[[name, token id], …]`, oldest first); entries that are not a valid
    /// name and a token id are left out.
    public static func holds(from value: JSONValue) -> [HeldNames.Hold] {
        (value.arrayValue ?? []).compactMap { entry in
            guard let pair = entry.arrayValue, pair.count == 2, let name = pair[0].stringValue, let id = pair[1].stringValue,
                (try? ParticipantName.validate(name)) != nil, id.utf8.count == 32, Hex.decode(id) != nil
            else { return nil }
            return HeldNames.Hold(name: name, tokenID: id)
        }
    }

    public init?(directoryJSON value: JSONValue, maxOperators: Int = 32, maxNames: Int = 128) {
        guard let entry = value.objectValue else { return nil }
        func hex(_ key: String, bytes: Int) -> String?? {
            guard let raw = entry[key], raw != .null else { return .some(nil) }
            guard let text = raw.stringValue, text.utf8.count == bytes * 2, Hex.decode(text) != nil else { return nil }
            return .some(text)
        }
        func name(_ value: JSONValue?) -> String?? {
            guard let value, value != .null else { return .some(nil) }
            guard let text = value.stringValue, (try? ParticipantName.validate(text)) != nil else { return nil }
            return .some(text)
        }
        // Token ids are the random half of a session token: 16 bytes of hex.
        func tokenID(_ value: JSONValue?) -> String?? {
            guard let value, value != .null else { return .some(nil) }
            guard let text = value.stringValue, text.utf8.count == 32, Hex.decode(text) != nil else { return nil }
            return .some(text)
        }
        guard let salt = hex("salt", bytes: RoomSecret.saltBytes), let key = hex("key", bytes: RoomSecret.keyBytes),
            (salt == nil) == (key == nil), let owner = name(entry["owner"]), let ownerToken = tokenID(entry["owner_token"])
        else { return nil }
        var operators: [String: String] = [:]
        if let list = entry["operators"], list != .null {
            guard let object = list.objectValue, object.count <= maxOperators else { return nil }
            for (operatorName, token) in object {
                guard let checked = name(.string(operatorName)), let checkedName = checked, let checkedID = tokenID(token),
                    let id = checkedID
                else { return nil }
                operators[checkedName] = id
            }
        }
        self.init(
            verifier: salt.map { RoomVerifier(salt: $0, key: key!) }, owner: owner, ownerToken: ownerToken, operators: operators,
            names: HeldNames(entry["names"].map(Self.holds(from:)) ?? [], limit: maxNames),
            playlist: entry["playlist"].flatMap(RoomPlaylist.init(recordJSON:)) ?? .init())
    }
}

extension RoomSequencer {
    /// A room's record as the cluster's directory has it, for a room this server just claimed:
    /// taken when the room is not live here and what this server remembers of it (if anything)
    /// is dormant — the directory's copy is the newer. Returns whether it was taken.
    @discardableResult
    public mutating func adopt(_ record: RoomRecord, for room: String, now: Double) -> Bool {
        guard rooms[room] == nil, RoomName.isValid(room) else { return false }
        if records[room] == nil, records.count >= configuration.maxRecords { return false }
        var adopted = record.persisted
        adopted.dormantSince = now
        records[room] = adopted
        nextDormantExpiry = min(nextDormantExpiry, now + configuration.dormantRoomMemory)
        return true
    }

    /// What the directory keeps of `room`: its record, when it has one and the room lives here.
    public func directoryRecord(of room: String) -> RoomRecord? {
        guard rooms[room] != nil else { return nil }
        return records[room]?.persisted
    }
}
