import Crypto
import CryptoExtras
import Foundation

/// Room secrets, proved without ever crossing the wire.
///
/// The creator derives a verifier `key = scrypt(secret, salt)` and gives the server only
/// `(salt, key)`. A joiner gets the salt in the challenge, derives the same key, and answers
/// with `HMAC-SHA256(key, label ‖ room ‖ name ‖ client nonce ‖ server nonce ‖ certificate
/// fingerprint)`. Both nonces make a proof good for one connection only; the fingerprint is the
/// certificate the *client* saw, so a relay in the middle (with its own certificate) cannot pass
/// a proof on. The welcome carries the server's proof (another label), so the client knows the
/// server holds the verifier too.
///
/// Threading: pure functions, callable from any thread. `verifier` takes ~0.1 s and 32 MiB
/// (scrypt N=2^15, r=8, p=1): call it off latency-sensitive paths.
public enum RoomSecret {
    public static let saltBytes = 16
    public static let keyBytes = 32
    public static let proofBytes = 32
    /// Shortest and longest secrets accepted, in bytes of UTF-8.
    public static let minLength = 8
    public static let maxLength = 1024

    /// Which side proves: the two proofs differ so one cannot be replayed as the other.
    public enum Side: String, Sendable {
        case client = "cowatch-room-proof-client-v1"
        case server = "cowatch-room-proof-server-v1"
    }

    /// Checks a secret's length and characters. Errors: `invalid-configuration`.
    public static func validate(_ secret: String) throws(CowatchError) {
        let length = secret.utf8.count
        guard length >= minLength, length <= maxLength else {
            throw CowatchError(.invalidConfiguration, "a room secret must be \(minLength)–\(maxLength) bytes long")
        }
        guard ControlCharacters.isClean(secret) else {
            throw CowatchError(.invalidConfiguration, "a room secret must not contain control characters")
        }
    }

    /// The verifier for `secret` with `salt` (hex; a fresh random one when nil).
    /// Errors: `invalid-configuration` for a bad secret or salt.
    public static func verifier(secret: String, salt: String? = nil) throws(CowatchError) -> RoomVerifier {
        try validate(secret)
        let saltText = salt ?? Hex.random(bytes: saltBytes)
        guard let saltBytes = Hex.decode(saltText), saltBytes.count == Self.saltBytes else {
            throw CowatchError(.invalidConfiguration, "a room salt must be \(Self.saltBytes) bytes of hex")
        }
        do {
            let key = try KDF.Scrypt.deriveKey(
                from: Array(secret.utf8), salt: saltBytes, outputByteCount: keyBytes, rounds: 1 << 15, blockSize: 8,
                parallelism: 1)
            return RoomVerifier(salt: saltText, key: key.withUnsafeBytes { Hex.encode($0) })
        } catch {
            throw CowatchError(.invalidConfiguration, "cannot derive the room key: \(error)")
        }
    }

    /// The proof of `side` for one connection, hex.
    public static func proof(
        key: String, side: Side, room: String, name: String, clientNonce: String, serverNonce: String, fingerprint: String
    ) -> String {
        let keyBytes = Hex.decode(key) ?? []
        var message: [UInt8] = []
        for field in [side.rawValue, room, name, clientNonce, serverNonce, fingerprint] {
            // Length-prefixed, so no two field lists share a message.
            let bytes = Array(field.utf8)
            withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { message += $0 }
            message += bytes
        }
        let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: keyBytes))
        return Hex.encode(code)
    }

    /// Compares a proof in constant time.
    public static func matches(_ given: String, _ expected: String) -> Bool {
        let a = Array(given.utf8)
        let b = Array(expected.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    /// A fresh nonce: 32 random bytes, hex.
    public static func nonce() -> String { Hex.random(bytes: 32) }
}
