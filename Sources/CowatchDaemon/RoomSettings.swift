import CowatchCore

/// How this daemon takes part in a room. Threading: a value type.
public struct RoomSettings: Sendable, Equatable {
    /// The room's name. Default "cowatch".
    public var room: String
    /// The room server to join.
    public var serverHost: String
    public var serverPort: Int
    /// When set, this daemon also runs the room server, listening here (`--host [ADDR:]PORT`).
    public var hostAddress: String?
    public var hostPort: Int?
    /// Drift correction: thresholds and gains (see `DriftController.Configuration`).
    public var drift: DriftController.Configuration
    /// Seconds between drift checks. Default 0.05 s.
    public var tickInterval: Double
    /// Hosting only: the room policy "play when everyone is ready". Default false.
    public var playWhenReady = false
    /// Hosting only: seconds the group waits for a stalled or unready participant. Default 5 s.
    public var waitTimeout: Double = 5
    /// TLS on the room link. Default true; `--no-tls` (loopback and tests only) turns it off.
    public var tls = true
    /// The server key to accept (`sha256:…`): from the invite; nil trusts the key `known_hosts`
    /// remembers for the server, or the first one seen.
    public var fingerprint: CertificateFingerprint?
    /// `--trust-first-key`: prove (or set) the room's secret to a server whose key nothing pinned.
    public var trustFirstKey = false
    /// Hosting: a certificate chain and key (PEM paths) for the embedded server; nil makes and
    /// keeps a self-signed one.
    public var certificate: CertificatePaths?
    /// Hosting: the session token our own server issued us in advance, so only we can create
    /// (and own) our room. A secret: prints as "…".
    public var hostToken: RoomSecretValue?
    /// Hosting only: a managed room, where only the owner and operators control playback.
    /// Default false: everyone controls playback (`--managed` turns it on).
    public var managed = false
    /// The room secret: proves this participant to a guarded room, or guards the room this
    /// daemon creates. Prints as "…".
    public var secret: RoomSecretValue?
    /// What a room may make this player open (`--allow-scheme`, `--accept-open`).
    public var openPolicy = OpenPolicy()
    /// Joining: more addresses of the server (the invite's `alt=`), raced with the first.
    public var alternates: [Endpoint] = []
    /// Hosting: whether to ask the home router to forward `hostPort` (`--map-port`). Default
    /// `.auto` with `--host`.
    public var portMapping: PortMappingMode = .off
    /// Hosting: the lease asked of the router, renewed at half (`--map-lease`). Default 3600 s.
    public var mapLease: Double = 3600
    /// Hosting: this machine's Tailscale MagicDNS name, for invites (asked at start when a
    /// Tailscale interface is up).
    public var tailscaleName: String?
    /// Joining a Syncplay server's room instead of a Cowatch room (`--join syncplay://…`); the
    /// daemon then talks to it through `SyncplayLink`. nil for a Cowatch room.
    public var syncplay: SyncplayRoomSettings?
    /// Hosting: also take stock Syncplay clients into the room on this port (`--syncplay-port`).
    public var syncplayListenPort: Int?
    /// Hosting: the MD5 hex of the password Syncplay clients must give (`--syncplay-password-file`
    /// beside `--syncplay-port`); required when the room has a secret.
    public var syncplayGuestPasswordHash: SyncplaySecret?

    public init(
        room: String, serverHost: String, serverPort: Int, hostAddress: String? = nil, hostPort: Int? = nil,
        drift: DriftController.Configuration = .init(), tickInterval: Double = 0.05
    ) {
        self.room = room
        self.serverHost = serverHost
        self.serverPort = serverPort
        self.hostAddress = hostAddress
        self.hostPort = hostPort
        self.drift = drift
        self.tickInterval = tickInterval
    }
}

/// Where a certificate chain and its private key are (PEM files).
public struct CertificatePaths: Sendable, Equatable {
    public var chain: String
    public var key: String

    public init(chain: String, key: String) {
        self.chain = chain
        self.key = key
    }
}
