/// A room with a secret, for a Syncplay client (see `SyncplayGuest`). Syncplay has no room
/// secrets, only one server password (sent as its unsalted MD5); a client that gave it is let
/// into a room with a secret only when the gateway may prove that room's secret for it:
/// - with the secret it was given (`Configuration.roomSecret`: a hosting daemon's own room);
/// - with the verifier key its server keeps for the room (`Configuration.secretRooms`, the rooms
///   `cowatch-server --syncplay-secret-rooms` names): the shell looks it up in the server's own
///   state (`Action.lookUpVerifier`) and hands it to `storedVerifier`.
/// Anything else turns the client away before any proof is tried.
extension SyncplayGuest {
    /// The room's challenge, kept while the shell looks up the verifier the server keeps.
    struct PendingSecret: Sendable, Equatable {
        var salt: String
        var serverNonce: String
    }

    static let secretRefusal = "This Cowatch room has a secret, which Syncplay clients cannot prove: ask its host for a room without one"

    /// The room asked for its secret's proof (`salt`, the server's nonce).
    mutating func secretChallenge(salt: String, serverNonce: String) -> [Action] {
        // Only for a client that gave this gateway's Syncplay password (checked at its hello).
        guard configuration.passwordHash != nil, let room else { return refuse(.authFailed, Self.secretRefusal) }
        if let secret = configuration.roomSecret {
            guard let verifier = try? RoomSecret.verifier(secret: secret.text, salt: salt) else {
                return refuse(.authFailed, Self.secretRefusal)
            }
            return proof(key: verifier.key, serverNonce: serverNonce)
        }
        guard configuration.secretRooms.admits(room) else { return refuse(.authFailed, Self.secretRefusal) }
        pendingSecret = PendingSecret(salt: salt, serverNonce: serverNonce)
        return [.lookUpVerifier(room: room)]
    }

    /// The verifier the server keeps for the room (nil: none), after `lookUpVerifier`: the proof,
    /// or the client turned away when there is none or it is not the one the room's challenge
    /// named (the room's secret changed meanwhile).
    public mutating func storedVerifier(_ verifier: RoomVerifier?, now: Double) -> [Action] {
        guard let pending = pendingSecret else { return [] }
        pendingSecret = nil
        guard let verifier, verifier.salt == pending.salt, Hex.decode(verifier.key)?.count == RoomSecret.keyBytes else {
            return refuse(.authFailed, Self.secretRefusal)
        }
        return proof(key: verifier.key, serverNonce: pending.serverNonce)
    }

    /// The client's side of the room's handshake, proved with `key` (bound to this connection's
    /// nonces, the room, the name and the server's certificate, as a daemon's proof is).
    private func proof(key: String, serverNonce: String) -> [Action] {
        guard let name, let room else { return [] }
        let proof = RoomSecret.proof(
            key: key, side: .client, room: room, name: name, clientNonce: nonce, serverNonce: serverNonce, fingerprint: serverFingerprint)
        return [.cowatch(.auth(.init(proof: proof)))]
    }
}
