/// Syncplay's protocol (servers and clients 1.6.x and 1.7.x) as typed values.
///
/// One line of Syncplay's protocol is one JSON object whose every key is a command, so one line
/// may carry several commands. `SyncplayCodec` turns lines into `[SyncplayCommand]` and back;
/// nothing else reads or writes Syncplay's JSON. Facts about the protocol: docs/syncplay.md.
public enum SyncplayCommand: Sendable, Equatable {
    /// STARTTLS: a client asks with `.send`; a server answers `.accepted` or `.refused`.
    case tls(SyncplayTLS)
    case hello(SyncplayHello)
    case set([SyncplaySetting])
    /// From a client, `nil`: "send me the list". From a server: every user it lists.
    case list([SyncplayListedUser]?)
    case state(SyncplayState)
    case chat(SyncplayChat)
    /// Said just before the sender drops the connection.
    case error(String)
}

/// The STARTTLS exchange's words.
public enum SyncplayTLS: String, Sendable, Equatable {
    case send
    case accepted = "true"
    case refused = "false"
}

/// `Hello`: a client's first command after the STARTTLS exchange, and the server's answer.
public struct SyncplayHello: Sendable, Equatable {
    /// The server's answer may change it (a taken name gets `_` appended).
    public var username: String
    /// The MD5 hex of the server password (clients only; Syncplay's own weak scheme).
    public var passwordHash: String?
    public var room: String
    /// What clients send as `version` (`1.2.255`, so that 1.2 servers accept them).
    public var version: String
    /// The real version, numeric `x.y.z` (a server compares its parts).
    public var realVersion: String?
    /// The server's message of the day (may hold newlines; shown after cleaning).
    public var motd: String?
    public var features: SyncplayFeatures

    public init(
        username: String, passwordHash: String? = nil, room: String, version: String = SyncplayHello.compatibleVersion,
        realVersion: String? = nil, motd: String? = nil, features: SyncplayFeatures = SyncplayFeatures()
    ) {
        self.username = username
        self.passwordHash = passwordHash
        self.room = room
        self.version = version
        self.realVersion = realVersion
        self.motd = motd
        self.features = features
    }

    /// The `version` every current client sends.
    public static let compatibleVersion = "1.2.255"
}

/// The features object of a `Hello` or a `Set.features`: what a client or a server can do.
/// Unknown keys are dropped on reading.
public struct SyncplayFeatures: Sendable, Equatable {
    public var sharedPlaylists: Bool?
    public var chat: Bool?
    public var readiness: Bool?
    public var managedRooms: Bool?
    public var persistentRooms: Bool?
    public var setOthersReadiness: Bool?
    public var featureList: Bool?
    public var isolateRooms: Bool?
    public var uiMode: String?
    public var maxChatMessageLength: Int?
    public var maxUsernameLength: Int?
    public var maxRoomNameLength: Int?
    public var maxFilenameLength: Int?

    public init() {}

    /// What a Cowatch daemon in a Syncplay room says it can do.
    public static var cowatchClient: SyncplayFeatures {
        var features = SyncplayFeatures()
        features.sharedPlaylists = true
        features.chat = true
        features.readiness = true
        features.managedRooms = true
        features.persistentRooms = false
        features.setOthersReadiness = true
        features.featureList = true
        features.uiMode = "CLI"
        return features
    }
}

/// The file a user plays, as Syncplay names it: a base name (or URL), never a path.
public struct SyncplayFile: Sendable, Equatable {
    public var name: String
    public var duration: Double?
    /// Bytes; a client in a privacy mode sends a hash instead (`sizeHash`).
    public var size: Double?
    public var sizeHash: String?

    public init(name: String, duration: Double? = nil, size: Double? = nil, sizeHash: String? = nil) {
        self.name = name
        self.duration = duration
        self.size = size
        self.sizeHash = sizeHash
    }
}

/// One key of a `Set` command.
public enum SyncplaySetting: Sendable, Equatable {
    case room(name: String, password: String?)
    case file(SyncplayFile)
    case user(SyncplayUserUpdate)
    case ready(SyncplayReady)
    /// The whole list, replaced (`user`: who changed it, from a server).
    case playlistChange(files: [String], user: String?)
    case playlistIndex(index: Int?, user: String?)
    case controllerAuth(SyncplayControllerAuth)
    case newControlledRoom(roomName: String, password: String)
    case features(username: String?, SyncplayFeatures)
}

/// `Set.user`: a user joined, left, or changed room or file.
public struct SyncplayUserUpdate: Sendable, Equatable {
    public enum Event: String, Sendable { case joined, left }
    public var username: String
    public var room: String?
    public var file: SyncplayFile?
    public var event: Event?

    public init(username: String, room: String? = nil, file: SyncplayFile? = nil, event: Event? = nil) {
        self.username = username
        self.room = room
        self.file = file
        self.event = event
    }
}

/// `Set.ready`: a client sets its own readiness (or, with `username`, another's); a server tells
/// who is ready.
public struct SyncplayReady: Sendable, Equatable {
    public var username: String?
    /// `nil`: not known (a client without the readiness feature).
    public var isReady: Bool?
    public var manuallyInitiated: Bool?

    public init(username: String? = nil, isReady: Bool?, manuallyInitiated: Bool? = nil) {
        self.username = username
        self.isReady = isReady
        self.manuallyInitiated = manuallyInitiated
    }
}

/// `Set.controllerAuth`: a client's claim (`room`, `password`), a server's verdict (`user`,
/// `room`, `success`).
public struct SyncplayControllerAuth: Sendable, Equatable {
    public var room: String?
    public var password: String?
    public var user: String?
    public var success: Bool?

    public init(room: String? = nil, password: String? = nil, user: String? = nil, success: Bool? = nil) {
        self.room = room
        self.password = password
        self.user = user
        self.success = success
    }
}

/// `State`, sent by the server once a second and answered by the client every time.
public struct SyncplayState: Sendable, Equatable {
    /// Each side's clock stamp, echoed by the other (see `SyncplayClient`).
    public struct Ping: Sendable, Equatable {
        /// The server's stamp (from a server), or that stamp echoed (from a client).
        public var latencyCalculation: Double?
        /// The client's stamp (from a client), or that stamp echoed plus the server's holding time.
        public var clientLatencyCalculation: Double?
        public var serverRtt: Double?
        public var clientRtt: Double?

        public init(latencyCalculation: Double? = nil, clientLatencyCalculation: Double? = nil, serverRtt: Double? = nil, clientRtt: Double? = nil) {
            self.latencyCalculation = latencyCalculation
            self.clientLatencyCalculation = clientLatencyCalculation
            self.serverRtt = serverRtt
            self.clientRtt = clientRtt
        }
    }

    /// Where the sender's player is (client), or where the room is (server).
    public struct Playstate: Sendable, Equatable {
        public var position: Double
        public var paused: Bool?
        public var doSeek: Bool?
        /// Who made the last change (server).
        public var setBy: String?

        public init(position: Double, paused: Bool?, doSeek: Bool? = nil, setBy: String? = nil) {
            self.position = position
            self.paused = paused
            self.doSeek = doSeek
            self.setBy = setBy
        }
    }

    /// The counters of changes not yet acknowledged (see `SyncplayClient`).
    public struct Ignoring: Sendable, Equatable {
        public var server: Int?
        public var client: Int?

        public init(server: Int? = nil, client: Int? = nil) {
            self.server = server
            self.client = client
        }
    }

    public var ping: Ping?
    public var playstate: Playstate?
    public var ignoring: Ignoring?

    public init(ping: Ping? = nil, playstate: Playstate? = nil, ignoring: Ignoring? = nil) {
        self.ping = ping
        self.playstate = playstate
        self.ignoring = ignoring
    }
}

/// One user of a server's `List` answer.
public struct SyncplayListedUser: Sendable, Equatable {
    public var room: String
    public var username: String
    public var position: Double?
    public var file: SyncplayFile?
    public var controller: Bool
    public var isReady: Bool?
    public var features: SyncplayFeatures?

    public init(
        room: String, username: String, position: Double? = nil, file: SyncplayFile? = nil, controller: Bool = false,
        isReady: Bool? = nil, features: SyncplayFeatures? = nil
    ) {
        self.room = room
        self.username = username
        self.position = position
        self.file = file
        self.controller = controller
        self.isReady = isReady
        self.features = features
    }
}

/// A chat line: from a client, only the message (a bare string on the wire); from a server, who
/// said it too.
public struct SyncplayChat: Sendable, Equatable {
    public var username: String?
    public var message: String

    public init(username: String? = nil, message: String) {
        self.username = username
        self.message = message
    }
}
