import Configuration
import CowatchCore
import CowatchNet
import Foundation
import SystemPackage

/// The values given on the command line; nil means "not given".
public struct DaemonFlags: Sendable {
    public var media: String?
    /// Every media given as an argument, in order (`cowatchd a.mkv b.mkv c.mkv`); `media` is the
    /// first (or `--media`). Two or more seed a new room's playlist. Empty means none.
    public var mediaList: [String] = []
    /// `--playlist FILE`: an M3U whose entries seed a new room's playlist.
    public var playlist: String?
    public var name: String?
    public var control: String?
    public var mpv: [String] = []
    public var paused: Bool?
    public var osd: Bool?
    public var config: String?
    public var logLevel: String?
    public var host: String?
    public var join: String?
    public var noTLS: Bool?
    /// `--server-key sha256:…` (the key `--join HOST:PORT` pins) and `--trust-first-key`.
    public var serverKey: String?
    public var trustFirstKey: Bool?
    public var room: String?
    public var title: String?
    public var type: String?
    public var fallbackURL: String?
    public var onEnd: String?
    public var ready: Bool?
    public var waitForMe: Bool?
    public var playWhenReady: Bool?
    public var waitTimeout: Double?
    public var openTimeout: Double?
    public var seekTimeout: Double?
    /// A file holding the room secret (never the secret itself: flags show in `ps`).
    public var roomSecretFile: String?
    /// `--unmanaged`: the embedded room server lets everyone control playback.
    public var managed: Bool?
    public var unmanaged: Bool?
    /// `--tls-cert`, `--tls-key`: the embedded server's certificate and key (with `--host`).
    public var tlsCert: String?
    public var tlsKey: String?
    /// `--allow-scheme`, repeatable; empty means "not given".
    public var allowSchemes: [String] = []
    public var acceptOpen: String?
    /// `--trust-host`, repeatable; empty means "not given".
    public var trustHosts: [String] = []
    /// `--auto-subtitles yes|no`.
    public var autoSubtitles: Bool?
    /// `--transfer-rate SIZE` (a second).
    public var transferRate: String?
    /// `--player-nice N`.
    public var playerNice: Int?
    /// `--player-realtime N`.
    public var playerRealtime: Int?
    /// `--map-port auto|upnp|natpmp|pcp|off` (with `--host`).
    public var mapPort: String?
    /// `--map-lease SECONDS`.
    public var mapLease: Double?
    /// `--media-dir`, repeatable; empty means "not given".
    public var mediaDirectories: [String] = []
    /// `--syncplay-password-file`, `--syncplay-room-password-file`, `--syncplay-require-tls`,
    /// `--syncplay-ca-file` (with `--join syncplay://…`).
    public var syncplayPasswordFile: String?
    public var syncplayRoomPasswordFile: String?
    public var syncplayRequireTLS: Bool?
    public var syncplayCAFile: String?
    /// `--syncplay-port` (with `--host`).
    public var syncplayPort: Int?
    /// `--share`, `--accept-stream yes|missing|no`, `--share-rate TOTAL[,EACH]`, `--share-to NAME`
    /// (repeatable; empty means "not given").
    public var share: Bool?
    public var acceptStream: String?
    public var shareRate: String?
    public var shareTo: [String] = []
    /// `--stream-cache SIZE`.
    public var streamCache: String?
    public init() {}
}

extension DaemonConfiguration {
    /// The config file read when `--config` is not given: `$XDG_CONFIG_HOME/cowatch/cowatchd.json`
    /// (or `~/.config/cowatch/cowatchd.json`). A missing default file is fine; a missing named one is not.
    public static func defaultConfigFile(environment: [String: String]) -> String {
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"] ?? "") + "/.config")
        return base + "/cowatch/cowatchd.json"
    }

    /// Loads the configuration: flags > `COWATCH_*` environment > config file > defaults.
    ///
    /// Keys (file / environment): `media` / `COWATCH_MEDIA`, `name` / `COWATCH_NAME`,
    /// `control` / `COWATCH_CONTROL`, `mpv` (array of `KEY=VALUE`) / `COWATCH_MPV` (comma-separated),
    /// `paused`, `osd`, `seek-timeout`, `open-timeout`, `log-level`, `title`, `type`, `fallback-url`,
    /// `on-end`, `ready`, `wait-for-me`, `room-secret-file`, `allow-scheme`, `accept-open`,
    /// `trust-host` (a list; environment `COWATCH_TRUST_HOSTS`, comma-separated), `auto-subtitles`,
    /// `transfer-rate`, `player-nice`, `player-realtime`, `media-dir` (a list; environment
    /// `COWATCH_MEDIA_DIRS`, colon-separated: see `loadMediaDirectories`), `playlist` /
    /// `COWATCH_PLAYLIST` (an M3U whose entries, after the media given as arguments when there are
    /// several, seed a new room's playlist: see `loadPlaylistSeeds`), and for
    /// `--host` `play-when-ready`, `wait-timeout`, `managed`, `map-port` and `map-lease`. mpv options from all three sources
    /// are applied file first, then environment, then flags, so the later one wins inside mpv.
    /// The room secret comes from `--room-secret-file`, `COWATCH_ROOM_SECRET_FILE`,
    /// `COWATCH_ROOM_SECRET` (the secret itself, environment only) or `room-secret-file`, in that
    /// order (see `loadRoomSecret`).
    ///
    /// Throws `CowatchError` with `invalid-configuration` naming the key and the source, or
    /// `unsafe-path` for a room secret file others may read.
    public static func load(flags: DaemonFlags, environment: [String: String]) async throws -> DaemonConfiguration {
        let configPath = flags.config ?? environment["COWATCH_CONFIG"]
        let filePath = configPath ?? defaultConfigFile(environment: environment)
        // Our own reading first: its messages name the line and column and the key, where the
        // provider's would print an NSCocoaErrorDomain dump.
        try checkFile(filePath, mustExist: configPath != nil)
        let file: ConfigReader
        do {
            file = ConfigReader(
                provider: try await FileProvider<JSONSnapshot>(
                    filePath: FilePath(filePath), allowMissing: configPath == nil))
        } catch {
            throw CowatchError(.invalidConfiguration, "config file \(filePath): \(error)")
        }
        let env = ConfigReader(
            provider: EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: "cowatch"))
        var flagValues: [AbsoluteConfigKey: ConfigValue] = [:]
        func put(_ key: String, _ content: ConfigContent?) {
            if let content { flagValues[AbsoluteConfigKey(stringLiteral: key)] = ConfigValue(content, isSecret: false) }
        }
        put("media", flags.media.map(ConfigContent.string))
        put("name", flags.name.map(ConfigContent.string))
        put("control", flags.control.map(ConfigContent.string))
        put("paused", flags.paused.map(ConfigContent.bool))
        put("osd", flags.osd.map(ConfigContent.bool))
        put("log-level", flags.logLevel.map(ConfigContent.string))
        put("host", flags.host.map(ConfigContent.string))
        put("join", flags.join.map(ConfigContent.string))
        put("no-tls", flags.noTLS.map(ConfigContent.bool))
        put("server-key", flags.serverKey.map(ConfigContent.string))
        put("trust-first-key", flags.trustFirstKey.map(ConfigContent.bool))
        put("room", flags.room.map(ConfigContent.string))
        put("title", flags.title.map(ConfigContent.string))
        put("type", flags.type.map(ConfigContent.string))
        put("fallback-url", flags.fallbackURL.map(ConfigContent.string))
        put("on-end", flags.onEnd.map(ConfigContent.string))
        put("ready", flags.ready.map(ConfigContent.bool))
        put("wait-for-me", flags.waitForMe.map(ConfigContent.bool))
        put("play-when-ready", flags.playWhenReady.map(ConfigContent.bool))
        put("wait-timeout", flags.waitTimeout.map(ConfigContent.double))
        put("open-timeout", flags.openTimeout.map(ConfigContent.double))
        put("seek-timeout", flags.seekTimeout.map(ConfigContent.double))
        put("managed", flags.managed.map(ConfigContent.bool))
        put("unmanaged", flags.unmanaged.map(ConfigContent.bool))
        put("tls-cert", flags.tlsCert.map(ConfigContent.string))
        put("tls-key", flags.tlsKey.map(ConfigContent.string))
        put("accept-open", flags.acceptOpen.map(ConfigContent.string))
        put("auto-subtitles", flags.autoSubtitles.map(ConfigContent.bool))
        put("transfer-rate", flags.transferRate.map(ConfigContent.string))
        put("player-nice", flags.playerNice.map(ConfigContent.int))
        put("player-realtime", flags.playerRealtime.map(ConfigContent.int))
        put("map-port", flags.mapPort.map(ConfigContent.string))
        put("map-lease", flags.mapLease.map(ConfigContent.double))
        put("syncplay-password-file", flags.syncplayPasswordFile.map(ConfigContent.string))
        put("syncplay-room-password-file", flags.syncplayRoomPasswordFile.map(ConfigContent.string))
        put("syncplay-require-tls", flags.syncplayRequireTLS.map(ConfigContent.bool))
        put("syncplay-ca-file", flags.syncplayCAFile.map(ConfigContent.string))
        put("syncplay-port", flags.syncplayPort.map(ConfigContent.int))
        put("share", flags.share.map(ConfigContent.bool))
        put("accept-stream", flags.acceptStream.map(ConfigContent.string))
        put("share-rate", flags.shareRate.map(ConfigContent.string))
        put("stream-cache", flags.streamCache.map(ConfigContent.string))
        let flagReader = ConfigReader(provider: InMemoryProvider(name: "flags", values: flagValues))
        let layered = LayeredConfig(sources: [("flag", flagReader), ("environment", env), ("config file \(filePath)", file)])

        let seeds = try loadPlaylistSeeds(flags: flags, environment: environment, layered: layered, configFile: filePath)
        // Without media of its own, a daemon with a playlist plays its first entry.
        // Joining, a daemon may come without media: it plays the room's from a member who shares it.
        let joiningWithout = try layered.string("join") != nil && layered.string("host") == nil
        guard let media = try layered.string("media") ?? seeds.first?.source.text ?? (joiningWithout ? "" : nil),
            !media.isEmpty || joiningWithout
        else {
            throw CowatchError(.invalidConfiguration, "no media given: use --media URL (or COWATCH_MEDIA, or \"media\" in the config file)")
        }
        // The room protocol carries it (as the activity's URL): the same rules apply here.
        guard media.utf8.count <= 4096, !media.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) else {
            throw CowatchError(.invalidConfiguration, "media must be at most 4096 bytes without control characters")
        }
        let name = try ParticipantName.validate(
            try layered.string("name") ?? ControlSocketPath.defaultName(environment: environment))
        let control = try layered.string("control")
            ?? ControlSocketPath.defaultPath(name: name, environment: environment)
        // sun_path holds 108 bytes including the terminator; say so now, not after opening the media.
        guard control.utf8.count <= 107 else {
            throw CowatchError(.invalidConfiguration, "control socket path is longer than 107 bytes: \(control)")
        }

        var mpvTexts: [String] = []
        mpvTexts += try layered.stringArray("mpv", in: 2)
        mpvTexts += try layered.stringArray("mpv", in: 1)
        mpvTexts += flags.mpv
        var mpvOptions: [MpvOption] = []
        for text in mpvTexts where !text.isEmpty { mpvOptions.append(try MpvOption(parsing: text)) }

        var configuration = DaemonConfiguration(media: media, name: name, controlPath: control, mpvOptions: mpvOptions)
        configuration.startPaused = try layered.bool("paused") ?? configuration.startPaused
        configuration.osd = try layered.bool("osd") ?? configuration.osd
        configuration.autoSubtitles = try layered.bool("auto-subtitles") ?? configuration.autoSubtitles
        if let rate = try layered.string("transfer-rate") {
            guard let bytes = RoomJournal.parseSize(rate) else {
                throw CowatchError(.invalidConfiguration, "transfer-rate takes bytes a second, such as 20M or 0 (unlimited), not \(rate)")
            }
            configuration.transferRate = Double(bytes)
        }
        if let nice = try layered.int("player-nice") {
            guard (-20...19).contains(nice) else {
                throw CowatchError(.invalidConfiguration, "player-nice must be a whole number from -20 (highest priority) to 19, not \(nice)")
            }
            configuration.playerNice = Int32(nice)
        }
        if let priority = try layered.int("player-realtime") {
            guard (1...99).contains(priority) else {
                throw CowatchError(.invalidConfiguration, "player-realtime must be a SCHED_FIFO priority from 1 to 99, not \(priority)")
            }
            configuration.playerRealtime = Int32(priority)
        }
        configuration.seekTimeout = try layered.positive("seek-timeout") ?? configuration.seekTimeout
        configuration.openTimeout = try layered.positive("open-timeout") ?? configuration.openTimeout
        let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        if let level = try layered.string("log-level") {
            guard levels.contains(level) else {
                throw CowatchError(.invalidConfiguration, "log-level must be one of \(levels.joined(separator: ", "))")
            }
            configuration.logLevel = level
        }
        try loadActivity(layered, into: &configuration)
        configuration.mediaDirectories = try loadMediaDirectories(
            flags: flags, environment: environment, layered: layered, configFile: filePath)
        configuration.room = try loadRoom(layered)
        if var room = configuration.room, room.syncplay != nil {
            if try loadRoomSecret(flags: flags, environment: environment, layered: layered) != nil {
                throw CowatchError(
                    .invalidConfiguration,
                    "a Syncplay room has no Cowatch room secret: give the Syncplay server's password with --syncplay-password-file")
            }
            room.openPolicy = try loadOpenPolicy(flags: flags, layered: layered)
            configuration.room = room
        } else if var room = configuration.room {
            // An invite's secret, else the configured one (both at once: the invite's wins, it is
            // what the host gave for this room).
            room.secret = try room.secret ?? loadRoomSecret(flags: flags, environment: environment, layered: layered)
            if room.syncplayListenPort != nil, room.secret != nil, room.syncplayGuestPasswordHash == nil {
                throw CowatchError(
                    .invalidConfiguration,
                    "Syncplay clients cannot prove a room secret: with --syncplay-port, a room with a secret needs --syncplay-password-file (the password they give instead)")
            }
            room.openPolicy = try loadOpenPolicy(flags: flags, layered: layered)
            configuration.room = room
        }
        try adoptPlaylistSeeds(seeds, into: &configuration)
        configuration.streams = try loadStreams(flags: flags, layered)
        if configuration.media.isEmpty, !configuration.streams.acceptStreams {
            throw CowatchError(.invalidConfiguration, "without media of its own, this daemon can only play the room's from a member who shares it: drop --accept-stream no, or give the media")
        }
        return configuration
    }
}

extension DaemonConfiguration {
    /// Every key the config file may hold (`drift` is an object of `driftKeys`).
    static let fileKeys: Set<String> = [
        "media", "name", "control", "mpv", "paused", "osd", "seek-timeout", "open-timeout", "log-level", "host", "join", "no-tls",
        "server-key", "trust-first-key", "room", "drift", "title", "type", "fallback-url", "on-end", "ready", "wait-for-me", "play-when-ready",
        "wait-timeout", "room-secret-file", "managed", "unmanaged", "allow-scheme", "accept-open", "trust-host", "tls-cert", "tls-key",
        "auto-subtitles", "transfer-rate", "player-nice", "player-realtime", "map-port", "map-lease", "media-dir",
        "playlist", "syncplay-password-file", "syncplay-room-password-file", "syncplay-require-tls", "syncplay-ca-file", "syncplay-port",
        "share", "accept-stream", "share-rate", "share-to", "stream-cache",
    ]
    static let driftKeys: Set<String> = ["seek-threshold", "correction-time", "start-correction-time", "max-adjust", "interval"]

    /// Refuses a config file that is not JSON (saying where), not an object, or holds a key we do
    /// not know: a misspelt key would otherwise be ignored in silence and its default used. The
    /// `drift` keys may be nested (`"drift": {"max-adjust": …}`) or flat (`"drift.max-adjust"`),
    /// not both. A missing file is fine unless it was named (`--config`, `COWATCH_CONFIG`).
    static func checkFile(_ path: String, mustExist: Bool) throws(CowatchError) {
        guard FileManager.default.fileExists(atPath: path) else {
            if mustExist { throw CowatchError(.invalidConfiguration, "config file \(path) does not exist") }
            return
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CowatchError(.invalidConfiguration, "config file \(path) cannot be read")
        }
        if let problem = JSONSyntax.firstProblem(in: Array(data)) {
            throw CowatchError(.invalidConfiguration, "config file \(path) is not valid JSON: \(problem)")
        }
        guard let object = (try? JSONValue.parse(Array(data)))?.objectValue else {
            throw CowatchError(.invalidConfiguration, "config file \(path) must hold one JSON object: { \"media\": …, … }")
        }
        var unknown: [String] = []
        var driftGiven: [String] = []
        for key in object.keys.sorted() {
            if key.hasPrefix("drift."), driftKeys.contains(String(key.dropFirst(6))) {
                driftGiven.append(key)
            } else if !fileKeys.contains(key) {
                unknown.append(key)
            }
        }
        if let drift = object["drift"], drift.objectValue == nil, drift != .null {
            throw CowatchError(.invalidConfiguration, "config file \(path): drift must be an object such as {\"max-adjust\": 0.05}")
        }
        if let drift = object["drift"]?.objectValue {
            unknown += drift.keys.filter { !driftKeys.contains($0) }.sorted().map { "drift.\($0)" }
            if let twice = drift.keys.sorted().first(where: { driftGiven.contains("drift.\($0)") }) {
                throw CowatchError(.invalidConfiguration, "config file \(path): drift.\(twice) is given twice, nested and flat")
            }
        }
        guard unknown.isEmpty else {
            throw CowatchError(
                .invalidConfiguration,
                "config file \(path): unknown key\(unknown.count > 1 ? "s" : "") \(unknown.map { "\"\($0)\"" }.joined(separator: ", "))")
        }
    }

    /// The activity and session keys: `title`, `type` (watch|listen), `fallback-url`,
    /// `on-end` (keep|quit), `ready`, `wait-for-me`.
    static func loadActivity(_ layered: LayeredConfig, into configuration: inout DaemonConfiguration) throws(CowatchError) {
        configuration.title = try layered.string("title")
        if let type = try layered.string("type") {
            guard let parsed = ActivityType(rawValue: type) else {
                throw CowatchError(.invalidConfiguration, "type must be watch or listen, not \"\(type.prefix(40))\"")
            }
            configuration.activityType = parsed
        }
        configuration.fallbackURL = try layered.string("fallback-url")
        if let onEnd = try layered.string("on-end") {
            guard let parsed = GroupSessionMachine.OnEnd(rawValue: onEnd) else {
                throw CowatchError(.invalidConfiguration, "on-end must be keep or quit, not \"\(onEnd.prefix(40))\"")
            }
            configuration.onEnd = parsed
        }
        configuration.readyAtStart = try layered.bool("ready") ?? configuration.readyAtStart
        configuration.waitForMe = try layered.bool("wait-for-me") ?? configuration.waitForMe
        for (key, value, limit) in [
            ("title", configuration.title, Activity.maxTitleBytes), ("fallback-url", configuration.fallbackURL, 4096),
        ] {
            if let value, value.isEmpty || value.utf8.count > limit || value.unicodeScalars.contains(where: { $0.value < 0x20 }) {
                throw CowatchError(.invalidConfiguration, "\(key) must be 1–\(limit) bytes without control characters")
            }
        }
    }

    /// `host`, `join`, `room` and the `drift.*` keys. `--host [ADDR:]PORT` runs the room server
    /// inside this daemon (default address `::`, every IPv6 and IPv4 address, where the machine
    /// has IPv6; else 0.0.0.0) and joins it over loopback.
    static func loadRoom(_ layered: LayeredConfig) throws(CowatchError) -> RoomSettings? {
        let host = try layered.string("host")
        let join = try layered.string("join")
        let roomName = try layered.string("room") ?? "cowatch"
        guard RoomName.isValid(roomName) else {
            throw CowatchError(.invalidConfiguration, "room \"\(roomName.prefix(70))\" must be 1–64 letters, digits, '.', '_' or '-'")
        }
        var settings: RoomSettings
        switch (host, join) {
        case (nil, nil):
            return nil
        case (.some, .some):
            throw CowatchError(.invalidConfiguration, "use either --host or --join, not both")
        case (let host?, nil):
            let endpoint = try Endpoint(parsing: host, defaultHost: LocalNetwork.anyAddress)
            guard endpoint.port > 0 else {
                throw CowatchError(.invalidConfiguration, "--host needs a fixed port that others can --join")
            }
            settings = RoomSettings(
                room: roomName, serverHost: "127.0.0.1", serverPort: endpoint.port, hostAddress: endpoint.host,
                hostPort: endpoint.port)
            try loadSyncplayGuests(layered, into: &settings)
        case (nil, .some) where try layered.int("syncplay-port") != nil:
            throw CowatchError(.invalidConfiguration, "--syncplay-port takes Syncplay clients into a room this daemon hosts: it goes with --host")
        case (nil, let join?) where SyncplayAddress.isLink(join):
            // A Syncplay server's room: its name is in the link, its password in a file.
            let address = try SyncplayAddress(parsing: join)
            if try layered.string("room") != nil {
                throw CowatchError(.invalidConfiguration, "the Syncplay link names the room (\(address.room)): drop --room")
            }
            settings = RoomSettings(room: address.room, serverHost: address.host, serverPort: address.port)
            settings.syncplay = try loadSyncplay(address, layered: layered)
        case (nil, let join?) where join.lowercased().hasPrefix(Invite.scheme + ":"):
            // An invite link: where, which room, its secret and the server's key.
            let invite = try Invite.parse(join)
            if let given = try layered.string("room"), given != invite.room {
                throw CowatchError(.invalidConfiguration, "the invite is for room \(invite.room), not \(given): drop --room")
            }
            settings = RoomSettings(room: invite.room, serverHost: invite.host, serverPort: invite.port)
            settings.fingerprint = invite.fingerprint
            settings.tls = invite.tls
            settings.alternates = invite.alternates
            if let secret = invite.secret { settings.secret = try RoomSecretValue(secret) }
        case (nil, let join?):
            let endpoint = try Endpoint(parsing: join, defaultHost: nil)
            guard endpoint.port > 0 else { throw CowatchError(.invalidConfiguration, "--join needs a port") }
            settings = RoomSettings(room: roomName, serverHost: endpoint.host, serverPort: endpoint.port)
        }
        if let key = try layered.string("server-key") {
            guard let fingerprint = CertificateFingerprint(text: key) else {
                throw CowatchError(.invalidConfiguration, "server-key \(key.prefix(80)) is not a key such as sha256:… (the fp= of the host's invite)")
            }
            if let given = settings.fingerprint, given != fingerprint {
                throw CowatchError(.invalidConfiguration, "--server-key contradicts the invite's fp=: drop one")
            }
            settings.fingerprint = fingerprint
        }
        settings.trustFirstKey = try layered.bool("trust-first-key") ?? false
        if try layered.bool("no-tls") == true {
            guard settings.fingerprint == nil else {
                throw CowatchError(.invalidConfiguration, "--no-tls contradicts the invite's fp= (the server speaks TLS)")
            }
            settings.tls = false
        }
        settings.drift.seekThreshold = try layered.positive("drift.seek-threshold") ?? settings.drift.seekThreshold
        settings.drift.correctionTime = try layered.positive("drift.correction-time") ?? settings.drift.correctionTime
        settings.drift.startCorrectionTime =
            try layered.positive("drift.start-correction-time") ?? settings.drift.startCorrectionTime
        settings.drift.maxAdjust = try layered.positive("drift.max-adjust") ?? settings.drift.maxAdjust
        settings.tickInterval = try layered.positive("drift.interval") ?? settings.tickInterval
        settings.playWhenReady = try layered.bool("play-when-ready") ?? settings.playWhenReady
        settings.waitTimeout = try layered.positive("wait-timeout") ?? settings.waitTimeout
        // Everyone in a hosted room controls playback (GroupActivities' model); `managed` opts in
        // to owner-and-operators only. `unmanaged`, once needed for that, still reads.
        let managed = try layered.bool("managed")
        let unmanaged = try layered.bool("unmanaged")
        if let managed, let unmanaged, managed == unmanaged {
            throw CowatchError(.invalidConfiguration, "managed and unmanaged contradict each other: give one")
        }
        settings.managed = managed ?? unmanaged.map { !$0 } ?? false
        // A host at home asks its router to forward the port, unless told not to.
        let mapPort = try layered.string("map-port")
        if let mapPort { settings.portMapping = try PortMappingMode(parsing: mapPort) }
        else if settings.hostPort != nil, !Self.isLoopback(settings.hostAddress) { settings.portMapping = .auto }
        if let lease = try layered.positive("map-lease") {
            guard (30...86_400).contains(lease) else {
                throw CowatchError(.invalidConfiguration, "map-lease must be 30–86400 seconds")
            }
            settings.mapLease = lease
        }
        if settings.hostPort == nil, mapPort != nil, settings.portMapping != .off {
            throw CowatchError(.invalidConfiguration, "map-port is for the room server this daemon hosts: use it with --host")
        }
        switch (try layered.string("tls-cert"), try layered.string("tls-key")) {
        case (nil, nil):
            break
        case (let certificate?, let key?):
            guard settings.hostPort != nil else {
                throw CowatchError(.invalidConfiguration, "tls-cert and tls-key are for the server this daemon hosts: use them with --host")
            }
            guard settings.tls else { throw CowatchError(.invalidConfiguration, "--no-tls and --tls-cert/--tls-key contradict each other") }
            settings.certificate = CertificatePaths(chain: certificate, key: key)
        default:
            throw CowatchError(.invalidConfiguration, "tls-cert and tls-key go together")
        }
        guard settings.waitTimeout <= 3600 else {
            throw CowatchError(.invalidConfiguration, "wait-timeout must be at most 3600 seconds")
        }
        let policyGiven = try layered.bool("play-when-ready") == true
        let waitGiven = try layered.positive("wait-timeout") != nil
        if settings.hostPort == nil, policyGiven || waitGiven || managed != nil || unmanaged != nil {
            // The room's server decides these; a joining daemon cannot.
            throw CowatchError(
                .invalidConfiguration,
                "play-when-ready, wait-timeout and managed are the room server's: use them with --host or on cowatch-server")
        }
        guard settings.drift.maxAdjust < 0.5 else {
            throw CowatchError(.invalidConfiguration, "drift.max-adjust must be below 0.5")
        }
        return settings
    }
}

extension DaemonConfiguration {
    /// A server that listens on loopback only serves this machine: no router needs asking.
    static func isLoopback(_ address: String?) -> Bool {
        guard let address, let parsed = IPAddressBytes(text: address) else { return address == "localhost" }
        return parsed.isLoopback
    }
}

/// Reads a key from the first source that has it, and reports a value of the wrong type as an
/// error naming the key and the source instead of silently falling back to a default.
struct LayeredConfig {
    var sources: [(name: String, reader: ConfigReader)]

    private func lookup<T>(_ key: String, what: String, _ read: (ConfigReader) -> T?) throws(CowatchError) -> T? {
        let configKey = ConfigKey(stringLiteral: key)
        for (name, reader) in sources {
            if let value = read(reader) { return value }
            if isPresent(configKey, in: reader) {
                throw CowatchError(.invalidConfiguration, "\(key) from \(name) must be \(what)")
            }
        }
        return nil
    }

    private func isPresent(_ key: ConfigKey, in reader: ConfigReader) -> Bool {
        reader.string(forKey: key) != nil || reader.double(forKey: key) != nil || reader.bool(forKey: key) != nil
            || reader.int(forKey: key) != nil || reader.stringArray(forKey: key) != nil
    }

    func string(_ key: String) throws(CowatchError) -> String? {
        try lookup(key, what: "a string") { $0.string(forKey: ConfigKey(stringLiteral: key)) }
    }

    func int(_ key: String) throws(CowatchError) -> Int? {
        try lookup(key, what: "a whole number") { $0.int(forKey: ConfigKey(stringLiteral: key)) }
    }

    func bool(_ key: String) throws(CowatchError) -> Bool? {
        try lookup(key, what: "true or false") { $0.bool(forKey: ConfigKey(stringLiteral: key)) }
    }

    func positive(_ key: String) throws(CowatchError) -> Double? {
        let value = try lookup(key, what: "a number") { reader -> Double? in
            reader.double(forKey: ConfigKey(stringLiteral: key)) ?? reader.int(forKey: ConfigKey(stringLiteral: key)).map(Double.init)
        }
        if let value, !(value.isFinite && value > 0) {
            throw CowatchError(.invalidConfiguration, "\(key) must be a positive number, got \(value)")
        }
        return value
    }

    /// One source's array (sources are merged by the caller for `mpv`).
    func stringArray(_ key: String, in sourceIndex: Int) throws(CowatchError) -> [String] {
        let reader = sources[sourceIndex].reader
        let configKey = ConfigKey(stringLiteral: key)
        if let values = reader.stringArray(forKey: configKey) { return values }
        if let single = reader.string(forKey: configKey) { return [single] }
        if isPresent(configKey, in: reader) {
            throw CowatchError(.invalidConfiguration, "\(key) from \(sources[sourceIndex].name) must be a list of KEY=VALUE strings")
        }
        return []
    }
}
