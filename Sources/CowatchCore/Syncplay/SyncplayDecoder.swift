/// Reads each Syncplay command's body (see `SyncplayCodec.decode`).
enum SyncplayDecoder {
    static func command(_ name: String, _ body: JSONValue) throws(CowatchError) -> SyncplayCommand {
        switch name {
        case "TLS":
            let fields = try SyncplayFields(body, "TLS")
            let word = try fields.string("startTLS") ?? ""
            guard let answer = SyncplayTLS(rawValue: word) else { throw .syncplayLine("TLS.startTLS is \(SyncplayText.quoted(word))") }
            return .tls(answer)
        case "Hello":
            return .hello(try hello(try SyncplayFields(body, "Hello")))
        case "Set":
            let fields = try SyncplayFields(body, "Set")
            var settings: [SyncplaySetting] = []
            for key in fields.object.keys.sorted() {
                settings += try setting(key, fields)
            }
            return .set(settings)
        case "List":
            if body == .null { return .list(nil) }
            return .list(try listedUsers(try SyncplayFields(body, "List")))
        case "State":
            return .state(try state(try SyncplayFields(body, "State")))
        case "Chat":
            if case .string(let message) = body { return .chat(SyncplayChat(message: try SyncplayText.check(message, "Chat"))) }
            let fields = try SyncplayFields(body, "Chat")
            return .chat(SyncplayChat(username: try fields.string("username"), message: try fields.required("message")))
        default:
            if case .string(let message) = body { return .error(try SyncplayText.check(message, "Error", lines: true)) }
            return .error(try SyncplayFields(body, "Error").string("message", lines: true) ?? "")
        }
    }

    static func hello(_ fields: SyncplayFields) throws(CowatchError) -> SyncplayHello {
        let room = try fields.fields("room")
        let version = try fields.string("version")
        let realVersion = try fields.string("realversion")
        guard let anyVersion = version ?? realVersion else { throw .syncplayLine("Hello has no version") }
        return SyncplayHello(
            username: try fields.required("username"), passwordHash: try fields.string("password"),
            room: try room?.required("name") ?? "", version: anyVersion, realVersion: realVersion,
            motd: try fields.string("motd", lines: true), features: try fields.fields("features").map(features) ?? SyncplayFeatures())
    }

    static func features(_ fields: SyncplayFields) throws(CowatchError) -> SyncplayFeatures {
        var features = SyncplayFeatures()
        features.sharedPlaylists = try fields.bool("sharedPlaylists")
        features.chat = try fields.bool("chat")
        features.readiness = try fields.bool("readiness")
        features.managedRooms = try fields.bool("managedRooms")
        features.persistentRooms = try fields.bool("persistentRooms")
        features.setOthersReadiness = try fields.bool("setOthersReadiness")
        features.featureList = try fields.bool("featureList")
        features.isolateRooms = try fields.bool("isolateRooms")
        features.uiMode = try fields.string("uiMode")
        features.maxChatMessageLength = try fields.int("maxChatMessageLength")
        features.maxUsernameLength = try fields.int("maxUsernameLength")
        features.maxRoomNameLength = try fields.int("maxRoomNameLength")
        features.maxFilenameLength = try fields.int("maxFilenameLength")
        return features
    }

    static func file(_ fields: SyncplayFields) throws(CowatchError) -> SyncplayFile? {
        // A user without a file is listed with `{}`.
        if fields.object.isEmpty { return nil }
        var file = SyncplayFile(name: try fields.required("name"), duration: try fields.number("duration"))
        switch fields.object["size"] {
        case .string(let hash): file.sizeHash = try SyncplayText.check(hash, "\(fields.what).size")
        default: file.size = try fields.number("size")
        }
        return file
    }

    static func setting(_ key: String, _ set: SyncplayFields) throws(CowatchError) -> [SyncplaySetting] {
        guard let fields = try set.fields(key) else { return [] }
        switch key {
        case "room":
            return [.room(name: try fields.required("name"), password: try fields.string("password"))]
        case "file":
            return try file(fields).map { [.file($0)] } ?? []
        case "user":
            var updates: [SyncplaySetting] = []
            for username in fields.object.keys.sorted() {
                guard let user = try fields.fields(username) else { continue }
                var update = SyncplayUserUpdate(username: try SyncplayText.check(username, "Set.user's name"))
                update.room = try user.fields("room")?.string("name")
                update.file = try user.fields("file").flatMap(file)
                if let event = try user.fields("event") {
                    update.event = event.object["joined"] != nil ? .joined : event.object["left"] != nil ? .left : nil
                }
                updates.append(.user(update))
            }
            return updates
        case "ready":
            return [.ready(SyncplayReady(
                username: try fields.string("username"), isReady: try fields.bool("isReady"),
                manuallyInitiated: try fields.bool("manuallyInitiated")))]
        case "playlistChange":
            guard case .array(let names)? = fields.object["files"] else { throw .syncplayLine("Set.playlistChange.files is not a list") }
            guard names.count <= SyncplayCodec.maxPlaylistFiles else {
                throw .syncplayLine("a playlist of \(names.count) files (Syncplay's bound is \(SyncplayCodec.maxPlaylistFiles))")
            }
            var files: [String] = []
            for name in names {
                guard case .string(let text) = name else { throw .syncplayLine("Set.playlistChange.files holds a non-string") }
                files.append(try SyncplayText.check(text, "a playlist file"))
            }
            return [.playlistChange(files: files, user: try fields.string("user"))]
        case "playlistIndex":
            return [.playlistIndex(index: try fields.int("index"), user: try fields.string("user"))]
        case "controllerAuth":
            return [.controllerAuth(SyncplayControllerAuth(
                room: try fields.string("room"), password: try fields.string("password"), user: try fields.string("user"),
                success: try fields.bool("success")))]
        case "newControlledRoom":
            return [.newControlledRoom(roomName: try fields.required("roomName"), password: try fields.required("password"))]
        case "features":
            // From a server: whose, and what; from a client: its own features object.
            if let nested = try fields.fields("features") {
                return [.features(username: try fields.string("username"), try features(nested))]
            }
            return [.features(username: nil, try features(fields))]
        default:
            return []  // Newer versions add settings; Syncplay ignores the ones it does not know.
        }
    }

    static func listedUsers(_ rooms: SyncplayFields) throws(CowatchError) -> [SyncplayListedUser] {
        var users: [SyncplayListedUser] = []
        for room in rooms.object.keys.sorted() {
            guard let members = try rooms.fields(room) else { continue }
            let roomName = try SyncplayText.check(room, "a listed room")
            for name in members.object.keys.sorted() {
                guard let user = try members.fields(name) else { continue }
                guard users.count < SyncplayCodec.maxListedUsers else {
                    throw .syncplayLine("a list of more than \(SyncplayCodec.maxListedUsers) users")
                }
                users.append(SyncplayListedUser(
                    room: roomName, username: try SyncplayText.check(name, "a listed user"), position: try user.number("position"),
                    file: try user.fields("file").flatMap(file), controller: try user.bool("controller") ?? false,
                    isReady: try user.bool("isReady"), features: try user.fields("features").map(features)))
            }
        }
        return users
    }

    static func state(_ fields: SyncplayFields) throws(CowatchError) -> SyncplayState {
        var state = SyncplayState()
        if let ping = try fields.fields("ping") {
            state.ping = SyncplayState.Ping(
                latencyCalculation: try ping.number("latencyCalculation"),
                clientLatencyCalculation: try ping.number("clientLatencyCalculation"),
                serverRtt: try ping.number("serverRtt"), clientRtt: try ping.number("clientRtt"))
        }
        if let playstate = try fields.fields("playstate") {
            state.playstate = SyncplayState.Playstate(
                position: try playstate.number("position") ?? 0, paused: try playstate.bool("paused"),
                doSeek: try playstate.bool("doSeek"), setBy: try playstate.string("setBy"))
        }
        if let ignoring = try fields.fields("ignoringOnTheFly") {
            state.ignoring = SyncplayState.Ignoring(server: try ignoring.int("server"), client: try ignoring.int("client"))
        }
        return state
    }
}

/// A command body's members, read by kind; absent and `null` read as `nil`, anything else of
/// the wrong kind is refused.
struct SyncplayFields {
    let object: [String: JSONValue]
    let what: String

    init(_ value: JSONValue, _ what: String) throws(CowatchError) {
        guard case .object(let object) = value else { throw .syncplayLine("\(what) is not an object") }
        self.object = object
        self.what = what
    }

    func fields(_ key: String) throws(CowatchError) -> SyncplayFields? {
        guard let value = present(key) else { return nil }
        return try SyncplayFields(value, "\(what).\(key)")
    }

    func string(_ key: String, lines: Bool = false) throws(CowatchError) -> String? {
        guard let value = present(key) else { return nil }
        guard case .string(let text) = value else { throw .syncplayLine("\(what).\(key) is not a string") }
        return try SyncplayText.check(text, "\(what).\(key)", lines: lines)
    }

    func required(_ key: String) throws(CowatchError) -> String {
        guard let text = try string(key) else { throw .syncplayLine("\(what) has no \(key)") }
        return text
    }

    /// A finite number of at most 10¹² in size (epoch seconds, positions, durations, sizes).
    func number(_ key: String) throws(CowatchError) -> Double? {
        guard let value = present(key) else { return nil }
        guard case .number(let number) = value, number.isFinite, abs(number) <= 1e12 else {
            throw .syncplayLine("\(what).\(key) is not a usable number")
        }
        return number
    }

    /// A whole number from 0 to 2³¹ − 1 (counters, indices, lengths).
    func int(_ key: String) throws(CowatchError) -> Int? {
        guard let value = present(key) else { return nil }
        guard case .number(let number) = value, number.rounded() == number, number >= 0, number <= Double(Int32.max) else {
            throw .syncplayLine("\(what).\(key) is not a whole number from 0 to \(Int32.max)")
        }
        return Int(number)
    }

    func bool(_ key: String) throws(CowatchError) -> Bool? {
        guard let value = present(key) else { return nil }
        guard case .bool(let flag) = value else { throw .syncplayLine("\(what).\(key) is not true or false") }
        return flag
    }

    private func present(_ key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }
}
