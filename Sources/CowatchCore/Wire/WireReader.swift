/// Reads fields of one wire object with validation; every failure is a `protocol-violation`.
struct WireReader {
    private let object: [String: JSONValue]

    init<Bytes: Collection<UInt8>>(line: Bytes) throws(CowatchError) {
        guard line.count <= wireMaxLineBytes else { throw Self.violation("line longer than \(wireMaxLineBytes) bytes") }
        // The frequent flat lines without Foundation's decoder; anything else as before.
        if let object = FlatJSONObject.parse(line) {
            try self.init(object: .object(object))
            return
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(line)
        } catch {
            throw Self.violation("not JSON")
        }
        try self.init(object: value)
    }

    init(object value: JSONValue) throws(CowatchError) {
        guard let object = value.objectValue else { throw Self.violation("expected a JSON object") }
        self.object = object
    }

    static func violation(_ message: String) -> CowatchError {
        CowatchError(.protocolViolation, message)
    }

    func raw(_ key: String) -> JSONValue? {
        let value = object[key]
        return value == .null ? nil : value
    }

    /// The message type: a word (see `word`), so an unknown one can be named in `unsupported`.
    func type() throws(CowatchError) -> String {
        guard let type = object["type"]?.stringValue, Self.isWord(type) else { throw Self.violation("missing \"type\"") }
        return type
    }

    /// 1–32 of `a-z`, `0-9`, `_`, `-`: message types, feature names, error codes.
    static func isWord(_ text: String) -> Bool {
        (1...32).contains(text.utf8.count)
            && text.utf8.allSatisfy { (0x61...0x7a).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5f || $0 == 0x2d }
    }

    func word(_ key: String) throws(CowatchError) -> String {
        guard let value = try optionalWord(key) else { throw Self.violation("missing \"\(key)\"") }
        return value
    }

    func optionalWord(_ key: String) throws(CowatchError) -> String? {
        guard let raw = raw(key) else { return nil }
        guard let value = raw.stringValue, Self.isWord(value) else {
            throw Self.violation("\"\(key)\" must be a word of a-z, 0-9, '_' or '-'")
        }
        return value
    }

    /// A bounded list of words (feature names); at most 64.
    func optionalWords(_ key: String) throws(CowatchError) -> [String]? {
        guard let raw = raw(key) else { return nil }
        guard let list = raw.arrayValue, list.count <= 64 else { throw Self.violation("\"\(key)\" must be a list of words") }
        var words: [String] = []
        for entry in list {
            guard let word = entry.stringValue, Self.isWord(word) else { throw Self.violation("\"\(key)\" must be a list of words") }
            words.append(word)
        }
        return words
    }

    /// Exactly `bytes` bytes as lowercase hex (nonces, proofs, salts).
    func hex(_ key: String, bytes: Int) throws(CowatchError) -> String {
        guard let value = try optionalHex(key, bytes: bytes) else { throw Self.violation("missing \"\(key)\"") }
        return value
    }

    func optionalHex(_ key: String, bytes: Int) throws(CowatchError) -> String? {
        guard let raw = raw(key) else { return nil }
        guard let value = raw.stringValue, value.utf8.count == bytes * 2, Self.isLowerHex(value) else {
            throw Self.violation("\"\(key)\" must be \(bytes) bytes of lowercase hex")
        }
        return value
    }

    static func isLowerHex(_ text: String) -> Bool {
        text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// A session token: `SessionToken.textLength` characters of hex and one `.`.
    func token(_ key: String) throws(CowatchError) -> String {
        guard let value = try optionalToken(key) else { throw Self.violation("missing \"\(key)\"") }
        return value
    }

    func optionalToken(_ key: String) throws(CowatchError) -> String? {
        guard let raw = raw(key) else { return nil }
        guard let value = raw.stringValue, value.utf8.count <= 128,
            value.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) || $0 == 0x2e })
        else { throw Self.violation("\"\(key)\" must be a session token") }
        return value
    }

    func number(_ key: String, range: ClosedRange<Double>) throws(CowatchError) -> Double {
        guard let value = try optionalNumber(key, range: range) else { throw Self.violation("missing number \"\(key)\"") }
        return value
    }

    func optionalNumber(_ key: String, range: ClosedRange<Double>) throws(CowatchError) -> Double? {
        guard let raw = raw(key) else { return nil }
        guard let value = raw.numberValue, value.isFinite, range.contains(value) else {
            throw Self.violation("\"\(key)\" must be a finite number in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    func integer(_ key: String) throws(CowatchError) -> Int {
        guard let value = try optionalInteger(key) else { throw Self.violation("missing integer \"\(key)\"") }
        return value
    }

    func optionalInteger(_ key: String) throws(CowatchError) -> Int? {
        guard let value = try optionalNumber(key, range: 0...9.0e15) else { return nil }
        guard value.rounded() == value else { throw Self.violation("\"\(key)\" must be a whole number") }
        return Int(value)
    }

    /// A request id (`request-ids`): a whole number in 0...`wireMaxRequestID`, if present.
    func optionalRequestID(_ key: String) throws(CowatchError) -> Int? {
        guard let raw = raw(key) else { return nil }
        guard let value = raw.numberValue, value.isFinite, value.rounded() == value, 0 <= value,
            value <= Double(wireMaxRequestID)
        else { throw Self.violation("\"\(key)\" must be a whole number in 0...\(wireMaxRequestID)") }
        return Int(value)
    }

    func bool(_ key: String) throws(CowatchError) -> Bool {
        guard let value = object[key]?.boolValue else { throw Self.violation("\"\(key)\" must be true or false") }
        return value
    }

    func optionalString(_ key: String, maxLength: Int) throws(CowatchError) -> String? {
        guard let raw = raw(key) else { return nil }
        guard let value = raw.stringValue, value.utf8.count <= maxLength else {
            throw Self.violation("\"\(key)\" must be a string of at most \(maxLength) bytes")
        }
        return value
    }

    func name(_ key: String, maxLength: Int) throws(CowatchError) -> String {
        guard let value = try optionalString(key, maxLength: maxLength), (try? ParticipantName.validate(value)) != nil
            || (maxLength > ParticipantName.maxLength && RoomName.isValid(value))
        else {
            throw Self.violation("\"\(key)\" must be 1–\(maxLength) letters, digits, '.', '_' or '-'")
        }
        return value
    }

    func enumeration<E: RawRepresentable<String>>(_ key: String, _ type: E.Type) throws(CowatchError) -> E {
        guard let text = object[key]?.stringValue, let value = E(rawValue: text) else {
            throw Self.violation("\"\(key)\" has an unknown value")
        }
        return value
    }
}

extension WireReader {
    /// The longest media URL or path accepted.
    static let maxURLBytes = 4096

    func optionalBool(_ key: String) throws(CowatchError) -> Bool? {
        guard let raw = raw(key) else { return nil }
        guard let value = raw.boolValue else { throw Self.violation("\"\(key)\" must be true or false") }
        return value
    }

    /// A media URL or path: non-empty, bounded, no control characters (C0, DEL or C1: a C1
    /// character in a URL once became a title that every participant refused).
    func optionalURL(_ key: String) throws(CowatchError) -> String? {
        guard let value = try optionalString(key, maxLength: Self.maxURLBytes) else { return nil }
        guard !value.isEmpty, !value.unicodeScalars.contains(where: ControlCharacters.isControl) else {
            throw Self.violation("\"\(key)\" must be a URL or path without control characters")
        }
        return value
    }

    func url(_ key: String) throws(CowatchError) -> String {
        guard let value = try optionalURL(key) else { throw Self.violation("missing \"\(key)\"") }
        return value
    }

    /// Text shown to people (titles, reasons, chat): bounded, and without control characters,
    /// which could drive a terminal that prints it, or bidirectional overrides and other
    /// invisibles, which could make it read as someone else's (`ControlCharacters.isDeceptive`).
    func optionalText(_ key: String, maxLength: Int) throws(CowatchError) -> String? {
        guard let value = try optionalString(key, maxLength: maxLength) else { return nil }
        guard !value.unicodeScalars.contains(where: ControlCharacters.isUnfitForDisplay) else {
            throw Self.violation("\"\(key)\" must not contain control characters, direction overrides or invisible characters")
        }
        return value
    }

    /// A bounded list of participant names.
    func optionalNames(_ key: String) throws(CowatchError) -> [String]? {
        guard let raw = raw(key) else { return nil }
        guard let list = raw.arrayValue, list.count <= 1024 else { throw Self.violation("\"\(key)\" must be a list of names") }
        var names: [String] = []
        for entry in list {
            guard let name = entry.stringValue, (try? ParticipantName.validate(name)) != nil else {
                throw Self.violation("\"\(key)\" must be a list of names")
            }
            names.append(name)
        }
        return names
    }

    /// A nested object, if present.
    func optionalObject(_ key: String) throws(CowatchError) -> WireReader? {
        guard let raw = raw(key) else { return nil }
        return try WireReader(object: raw)
    }
}
