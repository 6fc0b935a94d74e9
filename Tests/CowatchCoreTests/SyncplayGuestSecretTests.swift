import Testing

@testable import CowatchCore

/// Issue 24: a Syncplay client in a room with a secret of `cowatch-server`, proved with the
/// verifier key the server keeps (`--syncplay-secret-rooms`), only for a client that gave the
/// Syncplay password.
@Suite("Syncplay: a guest proves a room's secret with the verifier its server keeps")
struct SyncplayGuestSecretTests {
    typealias T = SyncplayGuestTests

    static let password = "friends only"
    /// A verifier as the server keeps it (16 bytes of salt, 32 of key; hex).
    static let kept = RoomVerifier(salt: String(repeating: "ab", count: 16), key: String(repeating: "5c", count: 32))

    /// A guest whose client gave `password` for room "movies", its room connection up, challenged
    /// for the secret with `kept`'s salt; and what the challenge made it do.
    static func challenged(
        secretRooms: SyncplaySecretRooms, passwordHash: String? = SyncplayPassword.hash(password), given: String = password
    ) -> (SyncplayGuest, [SyncplayGuest.Action]) {
        var configuration = SyncplayGuest.Configuration(passwordHash: passwordHash)
        configuration.secretRooms = secretRooms
        var guest = SyncplayGuest(configuration: configuration)
        _ = guest.connected(now: 0)
        _ = guest.received([.hello(SyncplayHello(username: "carol", passwordHash: SyncplayPassword.hash(given), room: "movies", realVersion: "1.6.9"))], now: 0)
        guest.nonce = String(repeating: "1", count: 64)
        guest.serverFingerprint = "sha256:server"
        _ = guest.roomConnected(now: 0)
        let actions = guest.fromRoom(.challenge(.init(nonce: "feed", access: .secret(salt: kept.salt))), now: 0)
        return (guest, actions)
    }

    @Test("a room the server lets Syncplay clients into: the guest asks for the kept verifier and proves the secret with its key, as the room checks it")
    func provesWithKeptVerifier() throws {
        var (guest, asked) = Self.challenged(secretRooms: .named(["movies"]))
        #expect(asked == [.lookUpVerifier(room: "movies")], "no proof before the key is there: \(asked)")
        let answered = guest.storedVerifier(Self.kept, now: 0.1)
        guard case .auth(let auth)? = T.toRoom(answered).first, let proof = auth.proof else {
            Issue.record("no proof: \(answered)")
            return
        }
        // What the room's sequencer computes for this hello and its challenge.
        let expected = RoomSecret.proof(
            key: Self.kept.key, side: .client, room: "movies", name: "carol", clientNonce: String(repeating: "1", count: 64),
            serverNonce: "feed", fingerprint: "sha256:server")
        #expect(RoomSecret.matches(proof, expected))
        #expect(T.closes(answered) == nil && auth.create == nil, "the key itself never goes out")
        #expect(guest.storedVerifier(Self.kept, now: 0.2).isEmpty, "one proof per challenge")
    }

    @Test("refused, with no proof tried: without the opt-in, a room it does not name, a gateway without a Syncplay password, no kept verifier, another salt")
    func refusals() {
        for rooms in [SyncplaySecretRooms.none, .named(["other"])] {
            let (_, actions) = Self.challenged(secretRooms: rooms)
            #expect(T.closes(actions)?.code == .authFailed && T.toRoom(actions).isEmpty, "\(rooms): \(actions)")
            #expect(T.sent(actions).contains { if case .error(let text) = $0 { text.contains("has a secret") } else { false } })
        }
        let (_, noPassword) = Self.challenged(secretRooms: .all, passwordHash: nil)
        #expect(T.closes(noPassword)?.code == .authFailed && !noPassword.contains(.lookUpVerifier(room: "movies")))
        var (none, _) = Self.challenged(secretRooms: .all)
        let missing = none.storedVerifier(nil, now: 0.1)
        #expect(T.closes(missing)?.code == .authFailed && T.toRoom(missing).isEmpty)
        var (changed, _) = Self.challenged(secretRooms: .all)
        let other = changed.storedVerifier(RoomVerifier(salt: String(repeating: "cd", count: 16), key: Self.kept.key), now: 0.1)
        #expect(T.closes(other)?.code == .authFailed && T.toRoom(other).isEmpty, "a verifier for another salt proves nothing")
    }

    @Test("a wrong Syncplay password never reaches the room: refused at hello")
    func wrongPassword() {
        var configuration = SyncplayGuest.Configuration(passwordHash: SyncplayPassword.hash(Self.password))
        configuration.secretRooms = .all
        var guest = SyncplayGuest(configuration: configuration)
        let said = guest.received([.hello(SyncplayHello(username: "eve", passwordHash: SyncplayPassword.hash("guess"), room: "movies", realVersion: "1.6.9"))], now: 0)
        #expect(T.closes(said)?.code == .authFailed && !said.contains(.connectRoom("movies")))
    }

    @Test("--syncplay-secret-rooms: all, or room names separated by commas")
    func parsing() throws {
        #expect(try SyncplaySecretRooms.parse("all") == .all)
        #expect(try SyncplaySecretRooms.parse("movies,series-2") == .named(["movies", "series-2"]))
        #expect(try SyncplaySecretRooms.parse("movies").admits("movies") && !(try SyncplaySecretRooms.parse("movies").admits("other")))
        #expect(!SyncplaySecretRooms.none.admits("movies") && SyncplaySecretRooms.all.admits("anything"))
        for bad in ["", "movies,,other", "movie night", "+base:0123456789AB", ".hidden"] {
            #expect(throws: CowatchError.self, "\(bad)") { try SyncplaySecretRooms.parse(bad) }
        }
    }
}
