/// Writes each Syncplay command's body (see `SyncplayCodec.encode`). Absent optionals are left
/// out, as Syncplay's own peers do.
enum SyncplayEncoder {
    static func command(_ command: SyncplayCommand) -> (String, JSONValue) {
        switch command {
        case .tls(let word):
            return ("TLS", ["startTLS": .string(word.rawValue)])
        case .hello(let hello):
            var body: [String: JSONValue] = [
                "username": .string(hello.username), "room": ["name": .string(hello.room)], "version": .string(hello.version),
                "features": features(hello.features),
            ]
            body["password"] = hello.passwordHash.map(JSONValue.string)
            body["realversion"] = hello.realVersion.map(JSONValue.string)
            body["motd"] = hello.motd.map(JSONValue.string)
            return ("Hello", .object(body))
        case .set(let settings):
            var body: [String: JSONValue] = [:]
            var users: [String: JSONValue] = [:]
            for setting in settings {
                if case .user(let update) = setting {
                    users[update.username] = user(update)
                } else {
                    let (key, value) = Self.setting(setting)
                    body[key] = value
                }
            }
            if !users.isEmpty { body["user"] = .object(users) }
            return ("Set", .object(body))
        case .list(let users):
            guard let users else { return ("List", .null) }
            var rooms: [String: [String: JSONValue]] = [:]
            for listed in users {
                var entry: [String: JSONValue] = [
                    "position": .finite(listed.position ?? 0), "file": listed.file.map(file) ?? [:],
                    "controller": .bool(listed.controller),
                ]
                entry["isReady"] = listed.isReady.map(JSONValue.bool)
                entry["features"] = listed.features.map(features)
                rooms[listed.room, default: [:]][listed.username] = .object(entry)
            }
            return ("List", .object(rooms.mapValues(JSONValue.object)))
        case .state(let state):
            return ("State", self.state(state))
        case .chat(let chat):
            guard let username = chat.username else { return ("Chat", .string(chat.message)) }
            return ("Chat", ["username": .string(username), "message": .string(chat.message)])
        case .error(let message):
            return ("Error", ["message": .string(message)])
        }
    }

    static func setting(_ setting: SyncplaySetting) -> (String, JSONValue) {
        switch setting {
        case .room(let name, let password):
            var body: [String: JSONValue] = ["name": .string(name)]
            body["password"] = password.map(JSONValue.string)
            return ("room", .object(body))
        case .file(let value):
            return ("file", file(value))
        case .user(let update):
            return ("user", [update.username: user(update)])
        case .ready(let ready):
            var body: [String: JSONValue] = ["isReady": ready.isReady.map(JSONValue.bool) ?? .null]
            body["username"] = ready.username.map(JSONValue.string)
            body["manuallyInitiated"] = ready.manuallyInitiated.map(JSONValue.bool)
            return ("ready", .object(body))
        case .playlistChange(let files, let user):
            // `user` always, null when nobody: Syncplay's client reads the key unconditionally.
            let body: [String: JSONValue] = ["files": .array(files.map(JSONValue.string)), "user": user.map(JSONValue.string) ?? .null]
            return ("playlistChange", .object(body))
        case .playlistIndex(let index, let user):
            let body: [String: JSONValue] = ["index": index.map { .number(Double($0)) } ?? .null, "user": user.map(JSONValue.string) ?? .null]
            return ("playlistIndex", .object(body))
        case .controllerAuth(let auth):
            var body: [String: JSONValue] = [:]
            body["room"] = auth.room.map(JSONValue.string)
            body["password"] = auth.password.map(JSONValue.string)
            body["user"] = auth.user.map(JSONValue.string)
            body["success"] = auth.success.map(JSONValue.bool)
            return ("controllerAuth", .object(body))
        case .newControlledRoom(let roomName, let password):
            return ("newControlledRoom", ["roomName": .string(roomName), "password": .string(password)])
        case .features(let username, let value):
            guard let username else { return ("features", features(value)) }
            return ("features", ["username": .string(username), "features": features(value)])
        }
    }

    static func user(_ update: SyncplayUserUpdate) -> JSONValue {
        var body: [String: JSONValue] = [:]
        body["room"] = update.room.map { ["name": .string($0)] }
        body["file"] = update.file.map(file)
        body["event"] = update.event.map { [$0.rawValue: true] }
        return .object(body)
    }

    static func file(_ file: SyncplayFile) -> JSONValue {
        var body: [String: JSONValue] = ["name": .string(file.name)]
        body["duration"] = file.duration.map { JSONValue.finite($0) }
        if let hash = file.sizeHash { body["size"] = .string(hash) } else { body["size"] = file.size.map { JSONValue.finite($0) } }
        return .object(body)
    }

    static func features(_ features: SyncplayFeatures) -> JSONValue {
        var body: [String: JSONValue] = [:]
        body["sharedPlaylists"] = features.sharedPlaylists.map(JSONValue.bool)
        body["chat"] = features.chat.map(JSONValue.bool)
        body["readiness"] = features.readiness.map(JSONValue.bool)
        body["managedRooms"] = features.managedRooms.map(JSONValue.bool)
        body["persistentRooms"] = features.persistentRooms.map(JSONValue.bool)
        body["setOthersReadiness"] = features.setOthersReadiness.map(JSONValue.bool)
        body["featureList"] = features.featureList.map(JSONValue.bool)
        body["isolateRooms"] = features.isolateRooms.map(JSONValue.bool)
        body["uiMode"] = features.uiMode.map(JSONValue.string)
        body["maxChatMessageLength"] = features.maxChatMessageLength.map { .number(Double($0)) }
        body["maxUsernameLength"] = features.maxUsernameLength.map { .number(Double($0)) }
        body["maxRoomNameLength"] = features.maxRoomNameLength.map { .number(Double($0)) }
        body["maxFilenameLength"] = features.maxFilenameLength.map { .number(Double($0)) }
        return .object(body)
    }

    static func state(_ state: SyncplayState) -> JSONValue {
        var body: [String: JSONValue] = [:]
        if let ping = state.ping {
            var value: [String: JSONValue] = [:]
            value["latencyCalculation"] = ping.latencyCalculation.map { JSONValue.finite($0) }
            value["clientLatencyCalculation"] = ping.clientLatencyCalculation.map { JSONValue.finite($0) }
            value["serverRtt"] = ping.serverRtt.map { JSONValue.finite($0) }
            value["clientRtt"] = ping.clientRtt.map { JSONValue.finite($0) }
            body["ping"] = .object(value)
        }
        if let playstate = state.playstate {
            var value: [String: JSONValue] = ["position": .finite(playstate.position)]
            value["paused"] = playstate.paused.map(JSONValue.bool)
            value["doSeek"] = playstate.doSeek.map(JSONValue.bool)
            value["setBy"] = playstate.setBy.map(JSONValue.string)
            body["playstate"] = .object(value)
        }
        if let ignoring = state.ignoring {
            var value: [String: JSONValue] = [:]
            value["server"] = ignoring.server.map { .number(Double($0)) }
            value["client"] = ignoring.client.map { .number(Double($0)) }
            body["ignoringOnTheFly"] = .object(value)
        }
        return .object(body)
    }
}
