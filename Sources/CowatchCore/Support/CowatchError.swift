/// An error with a stable string code.
///
/// The code is what programs match on: it is the `error` field of a control-socket reply and the
/// `code` of a wire-protocol error, and it never changes once released. The message is for people
/// and may change. Two errors are equal when their codes are equal.
///
/// Threading: a value type, safe to share.
public struct CowatchError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, kebab-case error code.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // Control protocol: the request itself is wrong.
        /// The line is not valid JSON.
        public static let invalidJSON = Code(rawValue: "invalid-json")
        /// Valid JSON, but not a request object with a `command` array.
        public static let invalidRequest = Code(rawValue: "invalid-request")
        /// (Client side) An event or a reply's data from the daemon lacks a field, has one of the
        /// wrong type, or a value out of range (`ControlEvent`, `PlayerStatus`, `RoomStatus`).
        public static let malformedControlMessage = Code(rawValue: "malformed-control-message")
        /// The command name is not one this daemon knows.
        public static let unknownCommand = Code(rawValue: "unknown-command")
        /// Too few or too many arguments for the command.
        public static let wrongArgumentCount = Code(rawValue: "wrong-argument-count")
        /// An argument has the wrong type or an out-of-range value (NaN, infinity, negative, …).
        public static let invalidArgument = Code(rawValue: "invalid-argument")
        /// A line exceeded the protocol's size limit; the connection is closed after this reply.
        public static let lineTooLong = Code(rawValue: "line-too-long")

        // The daemon could not do what was asked.
        /// The player has no such property, or it has no value now.
        public static let propertyUnavailable = Code(rawValue: "property-unavailable")
        /// libmpv refused the operation; the message carries mpv's reason.
        public static let playerError = Code(rawValue: "player-error")
        /// The operation did not finish in time.
        public static let timeout = Code(rawValue: "timeout")
        /// The operation needs a room and this daemon is not in one.
        public static let notInRoom = Code(rawValue: "not-in-room")

        // Set-up and client-side errors.
        /// No daemon is listening on the control socket.
        public static let notRunning = Code(rawValue: "not-running")
        /// The client was given no daemon and found several running in the default socket
        /// directory; it lists them instead of picking one.
        public static let severalDaemons = Code(rawValue: "several-daemons")
        /// Another daemon already serves this control socket.
        public static let alreadyRunning = Code(rawValue: "already-running")
        /// The port a room server was to listen on is taken (another `cowatchd --host` or
        /// `cowatch-server`, or any other program).
        public static let addressInUse = Code(rawValue: "address-in-use")
        /// A file is already where one was to be written, and nobody said to replace it.
        public static let alreadyExists = Code(rawValue: "already-exists")
        /// The media could not be opened.
        public static let mediaUnavailable = Code(rawValue: "media-unavailable")
        /// A configuration value (flag, environment, file) is invalid.
        public static let invalidConfiguration = Code(rawValue: "invalid-configuration")
        /// Reading or writing a socket failed.
        public static let ioError = Code(rawValue: "io-error")

        // Room protocol.
        /// The peer speaks a protocol version we do not.
        public static let unsupportedVersion = Code(rawValue: "unsupported-version")
        /// A participant of that name is already in the room.
        public static let nameTaken = Code(rawValue: "name-taken")
        /// A wire message was malformed or out of place.
        public static let protocolViolation = Code(rawValue: "protocol-violation")
        /// The peer sent faster than allowed.
        public static let flooding = Code(rawValue: "flooding")
        /// The room requires credentials this participant did not give (reserved for room secrets).
        public static let authFailed = Code(rawValue: "auth-failed")
        /// The room (or the server) has no room for another participant.
        public static let roomFull = Code(rawValue: "room-full")
        /// The server has too many connections (in total or from this address); try later.
        public static let serverBusy = Code(rawValue: "server-busy")
        /// The server is at its participant cap (`--max-connections`); try later, or another server.
        public static let serverFull = Code(rawValue: "server-full")
        /// The peer does not know this message type or feature; the connection lives.
        public static let unsupported = Code(rawValue: "unsupported")
        /// This participant's role does not allow the request (managed rooms, `end`, `kick`, `op`).
        public static let notPermitted = Code(rawValue: "not-permitted")
        /// Over this participant's budget of actions or stall reports; the request is dropped and
        /// the connection lives.
        public static let rateLimited = Code(rawValue: "rate-limited")
        /// An owner or operator removed this participant from the room.
        public static let kicked = Code(rawValue: "kicked")
        /// The request reached the server after its sender had given up on it; nothing was done.
        public static let expired = Code(rawValue: "expired")
        /// A daemon refused media the room asked it to open (scheme not allowed, local path,
        /// `--accept-open`); the rest of the group carries on.
        public static let openRefused = Code(rawValue: "open-refused")
        /// The daemon would prove (or set) a room secret to a server whose key nothing pinned (no
        /// invite `fp=`, `--server-key` or known_hosts entry): it did not connect. A relay in the
        /// middle of a first connection could otherwise guess the secret offline from the proof.
        public static let keyNotPinned = Code(rawValue: "key-not-pinned")
        /// Another server of the cluster hosts the room (the message names it) and this client
        /// cannot follow a redirect (it lacks the `cluster` feature): connect there instead.
        public static let roomElsewhere = Code(rawValue: "room-elsewhere")

        // The playlist.
        /// A playlist edit was made on a list that changed since (its `version` or `current` is
        /// not the room's): nothing was done, and the sender gets the list as it is.
        public static let stalePlaylist = Code(rawValue: "stale-playlist")
        /// The playlist would hold more than 500 entries, or more than its byte budget.
        public static let playlistFull = Code(rawValue: "playlist-full")

        // The journal (attachments).
        /// An attachment is larger than the server accepts (100 MiB unless configured lower).
        public static let tooLarge = Code(rawValue: "too-large")
        /// The room's or the server's attachment quota would be exceeded; nothing was stored.
        public static let quotaExceeded = Code(rawValue: "quota-exceeded")
        /// The bytes received do not have the SHA-256 they were announced with; they were discarded.
        public static let hashMismatch = Code(rawValue: "hash-mismatch")
        /// No attachment with that id in the room (or no such file to attach).
        public static let notFound = Code(rawValue: "not-found")

        // Secure room link.
        /// The room server's certificate is not the one pinned by the invite or remembered in
        /// `known_hosts`: someone may be in the middle. Nothing was sent.
        public static let certificateMismatch = Code(rawValue: "certificate-mismatch")
        /// The TLS handshake failed (a plaintext server, a port that speaks something else, …).
        public static let tlsFailed = Code(rawValue: "tls-failed")
        /// An invite link (`cowatch://HOST:PORT/ROOM?…`) is malformed.
        public static let invalidInvite = Code(rawValue: "invalid-invite")
        /// A directory or file holding sockets or secrets is not safe: wrong owner, too open a
        /// mode, or a symbolic link.
        public static let unsafePath = Code(rawValue: "unsafe-path")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
