import CowatchCore
import CowatchNet
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How this daemon joins a Syncplay server's room (`--join syncplay://HOST[:PORT]/ROOM`).
/// Threading: a value type.
public struct SyncplayRoomSettings: Sendable, Equatable {
    public var address: SyncplayAddress
    /// The MD5 hex of the server's password (Syncplay's scheme), from `--syncplay-password-file`.
    public var passwordHash: SyncplaySecret?
    /// A managed room's controller password (`AB-123-456`), from `--syncplay-room-password-file`.
    public var roomPassword: SyncplaySecret?
    /// Refuse a server without TLS (`--syncplay-require-tls`). Default false: plaintext with a warning.
    public var requireTLS = false
    /// Certificate authorities trusted besides the system's, a PEM file (`--syncplay-ca-file`).
    public var extraTrustRoots: String?

    public init(address: SyncplayAddress) {
        self.address = address
    }

    /// What `SyncplayClient` is configured with for a daemon named `name`.
    func client(name: String) -> SyncplayClient.Configuration {
        var room = address.room
        if let password = roomPassword?.text, SyncplayManagedRoom.parse(room) != nil { room += ":" + password }
        return SyncplayClient.Configuration(
            username: name, room: room, passwordHash: passwordHash?.text, requireTLS: requireTLS)
    }
}

/// A Syncplay password (or its hash) that prints as "…".
public struct SyncplaySecret: Sendable, Equatable, CustomStringConvertible {
    public let text: String
    public init(_ text: String) { self.text = text }
    public var description: String { "…" }
}

extension DaemonConfiguration {
    /// `--syncplay-port` beside `--host`: the port Syncplay clients join the hosted room on, and
    /// the password they must give (`syncplay-password-file`, 0600). Errors: `invalid-configuration`,
    /// `unsafe-path`.
    static func loadSyncplayGuests(_ layered: LayeredConfig, into settings: inout RoomSettings) throws(CowatchError) {
        guard let port = try layered.int("syncplay-port") else {
            if try layered.string("syncplay-password-file") != nil {
                throw CowatchError(.invalidConfiguration, "with --host, --syncplay-password-file goes with --syncplay-port")
            }
            return
        }
        guard (1...65535).contains(port), port != settings.hostPort else {
            throw CowatchError(.invalidConfiguration, "--syncplay-port must be a port 1–65535 other than --host's")
        }
        settings.syncplayListenPort = port
        if let path = try layered.string("syncplay-password-file") {
            let password = try SyncplayPasswordReader.read(path: path, what: "Syncplay password file")
            settings.syncplayGuestPasswordHash = SyncplaySecret(SyncplayPassword.hash(password))
        }
    }

    /// The Syncplay settings beside a `syncplay://` join: `syncplay-password-file` (the server's
    /// password), `syncplay-room-password-file` (a managed room's), `syncplay-require-tls`,
    /// `syncplay-ca-file`. Passwords come only from files (0600, owned by this user), never flags.
    /// Errors: `invalid-configuration`, `unsafe-path`.
    static func loadSyncplay(_ address: SyncplayAddress, layered: LayeredConfig) throws(CowatchError) -> SyncplayRoomSettings {
        var settings = SyncplayRoomSettings(address: address)
        if let path = try layered.string("syncplay-password-file") {
            let password = try SyncplayPasswordReader.read(path: path, what: "Syncplay server password file")
            settings.passwordHash = SyncplaySecret(SyncplayPassword.hash(password))
        }
        if let path = try layered.string("syncplay-room-password-file") {
            let password = try SyncplayPasswordReader.read(path: path, what: "Syncplay room password file")
            guard SyncplayManagedRoom.isPassword(password) else {
                throw CowatchError(.invalidConfiguration, "\(path): a Syncplay room password looks like AB-123-456")
            }
            guard SyncplayManagedRoom.parse(address.room) != nil else {
                throw CowatchError(
                    .invalidConfiguration, "--syncplay-room-password-file is for a managed room (+name:HASH), and \(address.room) is not one")
            }
            settings.roomPassword = SyncplaySecret(password)
        }
        settings.requireTLS = try layered.bool("syncplay-require-tls") ?? false
        if let path = try layered.string("syncplay-ca-file") {
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw CowatchError(.invalidConfiguration, "syncplay-ca-file \(path) cannot be read")
            }
            settings.extraTrustRoots = path
        }
        return settings
    }
}
