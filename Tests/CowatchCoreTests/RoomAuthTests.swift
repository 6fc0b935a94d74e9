import Testing

@testable import CowatchCore

@Suite("Room secrets and session tokens", .computeBound)
struct RoomAuthTests {
    static let secret = "correct horse battery"

    @Test("the verifier depends on the salt; proofs on every bound field")
    func proofs() throws {
        let first = try RoomSecret.verifier(secret: Self.secret)
        let same = try RoomSecret.verifier(secret: Self.secret, salt: first.salt)
        #expect(first == same)
        #expect(try RoomSecret.verifier(secret: Self.secret).key != first.key)  // fresh salt
        let base = RoomSecret.proof(
            key: first.key, side: .client, room: "r", name: "bob", clientNonce: "01", serverNonce: "02", fingerprint: "sha256:x")
        for changed in [
            RoomSecret.proof(key: first.key, side: .server, room: "r", name: "bob", clientNonce: "01", serverNonce: "02", fingerprint: "sha256:x"),
            RoomSecret.proof(key: first.key, side: .client, room: "s", name: "bob", clientNonce: "01", serverNonce: "02", fingerprint: "sha256:x"),
            RoomSecret.proof(key: first.key, side: .client, room: "r", name: "bo", clientNonce: "b01", serverNonce: "02", fingerprint: "sha256:x"),
            RoomSecret.proof(key: first.key, side: .client, room: "r", name: "bob", clientNonce: "01", serverNonce: "03", fingerprint: "sha256:x"),
            RoomSecret.proof(key: first.key, side: .client, room: "r", name: "bob", clientNonce: "01", serverNonce: "02", fingerprint: "sha256:y"),
        ] {
            #expect(!RoomSecret.matches(changed, base))
        }
        #expect(RoomSecret.matches(base, base))
        #expect(throws: CowatchError(.invalidConfiguration, "")) { try RoomSecret.verifier(secret: "short") }
        #expect(throws: CowatchError(.invalidConfiguration, "")) { try RoomSecret.verifier(secret: "long enough\u{85}") }
    }

    @Test("tokens are good for one name in one room, under one key")
    func tokens() {
        let tokens = SessionTokens(key: SessionTokens.newKey())
        let token = tokens.issue(room: "r", name: "bob")
        #expect(tokens.verify(token, room: "r", name: "bob"))
        #expect(!tokens.verify(token, room: "r", name: "bobby"))
        #expect(!tokens.verify(token, room: "s", name: "bob"))
        #expect(!SessionTokens(key: SessionTokens.newKey()).verify(token, room: "r", name: "bob"))
        var forged = Array(token)
        forged[forged.count - 1] = forged.last == "0" ? "1" : "0"
        #expect(!tokens.verify(String(forged), room: "r", name: "bob"))
        #expect(!tokens.verify("garbage", room: "r", name: "bob"))
    }

    /// Runs a coordinator against a sequencer in memory until the handshake settles.
    func handshake(
        _ coordinator: inout RoomCoordinator, _ sequencer: inout RoomSequencer, id: Int, now: Double,
        fingerprint: String = "sha256:server"
    ) -> [RoomCoordinator.Action] {
        _ = sequencer.connected(id, address: "10.0.0.\(id)", now: now)
        var pending = coordinator.connected(now: now, fingerprint: fingerprint)
        var results: [RoomCoordinator.Action] = []
        for _ in 0..<6 {
            var replies: [ServerMessage] = []
            for case .send(let message) in pending where !(message.isTimeRequest) {
                for case .send(id, let reply) in sequencer.received(message, from: id, now: now) { replies.append(reply) }
            }
            pending = replies.flatMap { coordinator.received($0, now: now) }
            results += pending
            if replies.isEmpty { break }
        }
        return results
    }

    func sequencer() -> RoomSequencer {
        var configuration = RoomSequencer.Configuration()
        configuration.certificateFingerprint = "sha256:server"
        return RoomSequencer(configuration: configuration)
    }

    @Test("the creator sets the secret; friends who know it join; the secret never crosses")
    func secretRoom() throws {
        var server = sequencer()
        var alice = RoomCoordinator(name: "alice", room: "r", activity: Activity(url: "a.mkv"), secret: Self.secret)
        let created = handshake(&alice, &server, id: 1, now: 0)
        #expect(created.contains { if case .joined(let welcome) = $0 { welcome.role == .owner } else { false } })
        #expect(server.records["r"]?.verifier != nil)

        var bob = RoomCoordinator(name: "bob", room: "r", activity: Activity(url: "a.mkv"), secret: Self.secret)
        let joined = handshake(&bob, &server, id: 2, now: 1)
        #expect(joined.contains { if case .joined(let welcome) = $0 { welcome.role == .member && welcome.proof != nil } else { false } })
        #expect(bob.token != nil)

        var mallory = RoomCoordinator(name: "mallory", room: "r", activity: Activity(url: "a.mkv"), secret: "not the secret!")
        #expect(!handshake(&mallory, &server, id: 3, now: 2).contains { if case .joined = $0 { true } else { false } })
        #expect(!server.tick(now: 2.5).contains(.close(3)))  // the refusal is held back a second
        let refusal = server.tick(now: 3)
        #expect(refusal.contains(.send(3, .error(code: "auth-failed", message: "wrong secret for room r (if its host changed it, ask for the new invite)"))))
        #expect(refusal.contains(.close(3)))

        var nobody = RoomCoordinator(name: "nobody", room: "r", activity: Activity(url: "a.mkv"))
        #expect(handshake(&nobody, &server, id: 4, now: 4).contains(.failed(CowatchError(.authFailed, ""))))
        #expect(server.snapshot()["r"]?.map(\.name) == ["alice", "bob"])
    }

    @Test("a proof made for another certificate (a relay in the middle) is refused")
    func relay() {
        var server = sequencer()
        var alice = RoomCoordinator(name: "alice", room: "r", activity: Activity(url: "a.mkv"), secret: Self.secret)
        _ = handshake(&alice, &server, id: 1, now: 0)
        var bob = RoomCoordinator(name: "bob", room: "r", activity: Activity(url: "a.mkv"), secret: Self.secret)
        // Bob talks to the relay's certificate; the relay passes his messages on unchanged.
        #expect(!handshake(&bob, &server, id: 2, now: 1, fingerprint: "sha256:relay").contains { if case .joined = $0 { true } else { false } })
        #expect(server.tick(now: 2).contains(.close(2)))
    }

    @Test("a server that cannot prove the secret back is not believed")
    func serverProof() {
        var server = RoomSequencer()  // no certificate: fingerprint ""
        var alice = RoomCoordinator(name: "alice", room: "r", activity: Activity(url: "a.mkv"), secret: Self.secret)
        _ = handshake(&alice, &server, id: 1, now: 0, fingerprint: "")
        var bob = RoomCoordinator(name: "bob", room: "r", activity: Activity(url: "a.mkv"), secret: Self.secret)
        _ = bob.connected(now: 1, fingerprint: "")
        _ = bob.received(.challenge(.init(nonce: String(repeating: "1", count: 64), access: .secret(salt: String(repeating: "2", count: 32)))), now: 1)
        let forged = bob.received(.welcome(.init(
            name: "bob", room: "r", timeline: .initial(at: 0), participants: [], activity: Activity(url: "a.mkv"),
            proof: String(repeating: "0", count: 64))), now: 1)
        #expect(forged == [.failed(CowatchError(.authFailed, ""))])
    }
}

extension ClientMessage {
    var isTimeRequest: Bool { if case .timeRequest = self { true } else { false } }
}
