/// Reads fields of one wire object with validation; every failure is a `protocol-violation`.
struct WireReader {
    private let object: [String: JSONValue]

    init<Bytes: Collection<UInt8>>(line: Bytes) throws(CowatchError) {
        guard line.count <= wireMaxLineBytes else { throw Self.violation("line longer than \(wireMaxLineBytes) bytes") }
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

    func type() throws(CowatchError) -> String {
        guard let type = object["type"]?.stringValue, type.utf8.count <= 32 else { throw Self.violation("missing \"type\"") }
        return type
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

    /// A media URL or path: non-empty, bounded, no control characters.
    func optionalURL(_ key: String) throws(CowatchError) -> String? {
        guard let value = try optionalString(key, maxLength: Self.maxURLBytes) else { return nil }
        guard !value.isEmpty, !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) else {
            throw Self.violation("\"\(key)\" must be a URL or path without control characters")
        }
        return value
    }

    func url(_ key: String) throws(CowatchError) -> String {
        guard let value = try optionalURL(key) else { throw Self.violation("missing \"\(key)\"") }
        return value
    }

    /// Text shown to people (titles, reasons): bounded, and without control characters, which
    /// could drive a terminal that prints it.
    func optionalText(_ key: String, maxLength: Int) throws(CowatchError) -> String? {
        guard let value = try optionalString(key, maxLength: maxLength) else { return nil }
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7f...0x9f).contains($0.value) }) else {
            throw Self.violation("\"\(key)\" must not contain control characters")
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
