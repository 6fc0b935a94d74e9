import CowatchCore
import CowatchDaemon
import Foundation
import Testing

@Suite("--join syncplay://…: the link, the password files, TLS settings")
struct SyncplayConfigTests {
    static let environment = ["HOME": "/nonexistent", "XDG_CONFIG_HOME": "/nonexistent"]

    static func flags(join: String = "syncplay://syncplay.pl:8997/movie%20night") -> DaemonFlags {
        var flags = DaemonFlags()
        flags.media = "night.mkv"
        flags.name = "alice"
        flags.control = "/tmp/cowatch-syncplay-config-test.sock"
        flags.join = join
        return flags
    }

    /// A file holding `text`, with `mode`.
    static func file(_ text: String, mode: mode_t = 0o600) throws -> String {
        let path = NSTemporaryDirectory() + "cowatch-syncplay-config-\(UUID().uuidString.prefix(8))"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, mode)
        return path
    }

    @Test("the link gives host, port and room; the password is read from its file and kept as Syncplay's hash; TLS settings from flags and environment")
    func settings() async throws {
        var flags = Self.flags()
        flags.syncplayPasswordFile = try Self.file("right horse\n")
        flags.syncplayRequireTLS = true
        var environment = Self.environment
        environment["COWATCH_SYNCPLAY_CA_FILE"] = try Self.file("not read here")
        let room = try #require(try await DaemonConfiguration.load(flags: flags, environment: environment).room)
        let syncplay = try #require(room.syncplay)
        #expect(room.serverHost == "syncplay.pl" && room.serverPort == 8997 && room.room == "movie night")
        #expect(syncplay.passwordHash?.text == SyncplayPassword.hash("right horse"))
        #expect("\(String(describing: syncplay.passwordHash))".contains("right") == false)
        #expect(syncplay.requireTLS && syncplay.extraTrustRoots == environment["COWATCH_SYNCPLAY_CA_FILE"])
    }

    @Test("refused: --room beside the link, a room secret, a password file others may read, a room password for an unmanaged room")
    func refusals() async throws {
        var withRoom = Self.flags()
        withRoom.room = "other"
        await #expect(throws: CowatchError.self) { try await DaemonConfiguration.load(flags: withRoom, environment: Self.environment) }
        var withSecret = Self.flags()
        withSecret.roomSecretFile = try Self.file("correct horse battery staple")
        await #expect(throws: CowatchError.self) { try await DaemonConfiguration.load(flags: withSecret, environment: Self.environment) }
        var readable = Self.flags()
        readable.syncplayPasswordFile = try Self.file("pw", mode: 0o644)
        do {
            _ = try await DaemonConfiguration.load(flags: readable, environment: Self.environment)
            Issue.record("a password file others may read was taken")
        } catch let error as CowatchError {
            #expect(error.code == .unsafePath)
        }
        var unmanaged = Self.flags()
        unmanaged.syncplayRoomPasswordFile = try Self.file("AB-123-456")
        await #expect(throws: CowatchError.self) { try await DaemonConfiguration.load(flags: unmanaged, environment: Self.environment) }
        var managed = Self.flags(join: "syncplay://h/+movies:0123456789AB")
        managed.syncplayRoomPasswordFile = try Self.file("AB-123-456\n")
        let room = try #require(try await DaemonConfiguration.load(flags: managed, environment: Self.environment).room)
        #expect(room.syncplay?.roomPassword?.text == "AB-123-456")
    }
}

@Suite("--host … --syncplay-port: Syncplay clients in the hosted room")
struct SyncplayHostConfigTests {
    static func hosting() -> DaemonFlags {
        var flags = SyncplayConfigTests.flags()
        flags.join = nil
        flags.host = "7433"
        flags.room = "evening"
        flags.syncplayPort = 8999
        return flags
    }

    static func code(_ flags: DaemonFlags) async -> CowatchError.Code? {
        do {
            _ = try await DaemonConfiguration.load(flags: flags, environment: SyncplayConfigTests.environment)
            return nil
        } catch let error as CowatchError {
            return error.code
        } catch {
            return .ioError
        }
    }

    @Test("an open hosted room takes Syncplay clients on the port; its password, when given, as Syncplay's hash")
    func open() async throws {
        var flags = Self.hosting()
        let room = try #require(try await DaemonConfiguration.load(flags: flags, environment: SyncplayConfigTests.environment).room)
        #expect(room.syncplayListenPort == 8999 && room.syncplayGuestPasswordHash == nil)
        flags.syncplayPasswordFile = try SyncplayConfigTests.file("friends only\n")
        let guarded = try #require(try await DaemonConfiguration.load(flags: flags, environment: SyncplayConfigTests.environment).room)
        #expect(guarded.syncplayGuestPasswordHash?.text == SyncplayPassword.hash("friends only"))
    }

    @Test("refused: a room with a secret without a Syncplay password; --syncplay-port without --host or on --host's port; a password without the port")
    func refusals() async throws {
        var secret = Self.hosting()
        secret.roomSecretFile = try SyncplayConfigTests.file("correct horse battery staple")
        #expect(await Self.code(secret) == .invalidConfiguration)
        secret.syncplayPasswordFile = try SyncplayConfigTests.file("friends only")
        #expect(await Self.code(secret) == nil, "with a password, the secret room takes them")

        var joining = Self.hosting()
        joining.host = nil
        joining.join = "127.0.0.1:7433"
        #expect(await Self.code(joining) == .invalidConfiguration)
        var samePort = Self.hosting()
        samePort.syncplayPort = 7433
        #expect(await Self.code(samePort) == .invalidConfiguration)
        var passwordOnly = Self.hosting()
        passwordOnly.syncplayPort = nil
        passwordOnly.syncplayPasswordFile = try SyncplayConfigTests.file("friends only")
        #expect(await Self.code(passwordOnly) == .invalidConfiguration)
    }
}
