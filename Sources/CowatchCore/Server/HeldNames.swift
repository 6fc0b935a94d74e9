/// Whose each name in one room is: a name belongs to the session token that last joined under it.
///
/// A name someone was in the room under stays theirs while they step out (a network blip,
/// `leave` then `join`, a restart): another joiner under it — without a token, or with another
/// one — is refused `name-taken`, and only the holder's token gets it back. A hold lasts as long
/// as the room's record: while the room lives, the `dormantRoomMemory` it sleeps after emptying,
/// and across server restarts (it is kept on disk with the roles); `end` forgets it with the
/// record. Roles (owner, operators) hold their names the same way, in the record's own fields.
///
/// Bounded: at most `limit` holds a room. A new hold past it forgets the oldest hold of whichever
/// address holds the most names (never the name of someone in the room), so a flood of names
/// from one address pushes out its own holds, not those of the people it came to impersonate.
/// An address is this run's only (not kept on disk); a hold without one counts as its own.
///
/// Threading: a value type; part of a `RoomRecord` (one owner).
public struct HeldNames: Sendable, Equatable {
    public struct Hold: Sendable, Equatable {
        public var name: String
        /// The id (`SessionTokens.id(of:)`) of the token that holds it.
        public var tokenID: String
        /// Where that token last joined from (this run only), for the bound's fairness.
        public var address: String?

        public init(name: String, tokenID: String, address: String? = nil) {
            self.name = name
            self.tokenID = tokenID
            self.address = address
        }
    }

    /// The holds, least recently joined first; one per name.
    public private(set) var holds: [Hold] = []

    /// Holds as kept (oldest first): a later hold of a name replaces an earlier one, and only the
    /// newest `limit` are kept.
    public init(_ holds: [Hold] = [], limit: Int = .max) {
        // From the newest back, the first of each name, until the bound: linear in a long list.
        var seen: Set<String> = []
        var kept: [Hold] = []
        for hold in holds.reversed() where kept.count < max(0, limit) && seen.insert(hold.name).inserted {
            kept.append(hold)
        }
        self.holds = kept.reversed()
    }

    public var count: Int { holds.count }

    /// The id of the token `name` belongs to, if someone holds it.
    public func holder(of name: String) -> String? {
        holds.first { $0.name == name }?.tokenID
    }

    /// True when `name` belongs to a token other than `tokenID` (nil: the joiner proved none).
    public func refuses(_ name: String, tokenID: String?) -> Bool {
        guard let held = holder(of: name) else { return false }
        return tokenID.map { !RoomSecret.matches(held, $0) } ?? true
    }

    /// `tokenID` joined as `name` from `address`: the name is its own now, as the most recent
    /// hold. Past `limit`, the oldest hold of the address holding the most names goes, never a
    /// name `present` says is in the room; when every other hold is present, `name` is not held.
    public mutating func hold(_ name: String, tokenID: String, address: String?, limit: Int, present: (String) -> Bool) {
        holds.removeAll { $0.name == name }
        while holds.count >= limit {
            var counts: [String: Int] = [:]
            let absent = holds.indices.filter { !present(holds[$0].name) }
            for index in absent { counts[Self.owner(of: holds[index]), default: 0] += 1 }
            guard let most = counts.values.max(),
                let oldest = absent.first(where: { counts[Self.owner(of: holds[$0])] == most })
            else { return }
            holds.remove(at: oldest)
        }
        holds.append(Hold(name: name, tokenID: tokenID, address: address))
    }

    /// Whose share of the bound a hold counts in: its address, else its own token.
    private static func owner(of hold: Hold) -> String {
        hold.address.map { "address:" + $0 } ?? "token:" + hold.tokenID
    }

    /// What goes to disk: names and token ids, in order (addresses are this run's).
    public var persisted: HeldNames {
        var kept = self
        for index in kept.holds.indices { kept.holds[index].address = nil }
        return kept
    }
}

extension HeldNames {
    /// As kept on disk and in a cluster's directory: `[[name, token id], …]`, oldest first
    /// (read back by `RoomSequencer.RoomRecord.holds(from:)`).
    public var json: JSONValue {
        .array(holds.map { .array([.string($0.name), .string($0.tokenID)]) })
    }
}
