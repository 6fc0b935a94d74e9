import CowatchCore

extension PlayerStatus {
    /// The `room`, `clock` and `drift` sections as the control socket carries them (through
    /// their one codec), for integration tests that check the wire's keys themselves. Programs
    /// read `room`, `clock` and `drift`.
    ///
    /// Threading: a value; safe anywhere.
    public var extra: [String: JSONValue] {
        var sections: [String: JSONValue] = [:]
        if let room { sections["room"] = room.json }
        if let clock { sections["clock"] = clock.json }
        if let drift { sections["drift"] = drift.json }
        return sections
    }
}
