/// The session tokens a daemon was given, kept in its state directory so that a restarted daemon
/// resumes as the same person: its name and role come back, and nobody else may take them.
///
/// One entry per server, room and name. The server is named by its certificate key
/// (`sha256:…`) where the link is TLS, so a token never goes to another server at the same
/// address; by `host:port` without TLS. The file (`session-tokens.json`, mode 0600, private
/// directory) holds secrets: whoever reads it can be that person in that room.
///
/// Threading: a value type; its methods do blocking file I/O (one small file); any thread.
/// Errors: `unsafe-path` for a file or directory others could read or change; `io-error`;
/// `invalid-configuration` for a file that is not ours (remove it to start afresh).
public struct SessionTokenFile: Sendable {
    public let path: String

    /// Which token: the server (key or address), the room and the name in it.
    public struct Key: Sendable, Hashable {
        public var server: String
        public var room: String
        public var name: String

        public init(server: String, room: String, name: String) {
            self.server = server
            self.room = room
            self.name = name
        }
    }

    public init(path: String) {
        self.path = path
    }

    /// `session-tokens.json` in the state directory.
    public static func defaultPath(environment: [String: String]) throws(CowatchError) -> String {
        try StatePaths.defaultDirectory(environment: environment) + "/session-tokens.json"
    }

    /// The token kept for `key`, if any.
    public func token(for key: Key) throws(CowatchError) -> String? {
        try entries()[key]
    }

    /// Keeps `token` for `key` (replacing the one before).
    public func save(_ token: String, for key: Key) throws(CowatchError) {
        var all = try entries()
        guard all[key] != token else { return }
        all[key] = token
        try write(all)
    }

    /// Drops the tokens for `room` (only `name`'s when given, on every server); returns how many.
    public func forget(room: String, name: String? = nil) throws(CowatchError) -> Int {
        var all = try entries()
        let dropped = all.keys.filter { $0.room == room && (name == nil || $0.name == name) }
        guard !dropped.isEmpty else { return 0 }
        for key in dropped { all[key] = nil }
        try write(all)
        return dropped.count
    }

    /// Every entry in the file (none when it does not exist).
    public func entries() throws(CowatchError) -> [Key: String] {
        guard let bytes = try StatePaths.readFile(path, requirePrivate: true) else { return [:] }
        guard let list = (try? JSONValue.parse(bytes))?["tokens"]?.arrayValue else {
            throw CowatchError(.invalidConfiguration, "\(path) is not a session token list; remove it to start afresh")
        }
        var result: [Key: String] = [:]
        for entry in list {
            guard let server = entry["server"]?.stringValue, let room = entry["room"]?.stringValue,
                let name = entry["name"]?.stringValue, let token = entry["token"]?.stringValue
            else { continue }
            result[Key(server: server, room: room, name: name)] = token
        }
        return result
    }

    private func write(_ all: [Key: String]) throws(CowatchError) {
        let list = all.sorted { ($0.key.server, $0.key.room, $0.key.name) < ($1.key.server, $1.key.room, $1.key.name) }
            .map { key, token -> JSONValue in
                ["server": .string(key.server), "room": .string(key.room), "name": .string(key.name), "token": .string(token)]
            }
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !directory.isEmpty { try StatePaths.ensureDirectory(directory) }
        try StatePaths.writeAtomically(path, contents: JSONValue.object(["tokens": .array(list)]).encoded())
    }
}
