import Crypto

/// Session tokens: what proves a participant on a reconnect, also after a server restart.
///
/// A token is `RANDOM.MAC`: 16 random bytes and `HMAC-SHA256(server key, room ‖ name ‖ RANDOM)`
/// cut to 16 bytes, all hex. The server keeps no list: it verifies a token by recomputing the
/// MAC with its key, which it keeps on disk, so tokens outlive a restart. A token is good for one
/// name in one room only. Tokens are secrets: never logged.
///
/// Threading: a value type; `issue` and `verify` are pure apart from `issue`'s randomness.
public struct SessionTokens: Sendable {
    private let key: SymmetricKey

    /// `key`: at least 32 bytes of secret (the server's `token.key` file).
    public init(key: [UInt8]) {
        self.key = SymmetricKey(data: key)
    }

    /// A fresh random key for `init(key:)`.
    public static func newKey() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    public func issue(room: String, name: String) -> String {
        let random = Hex.random(bytes: 16)
        return random + "." + mac(room: room, name: name, random: random)
    }

    /// A token's id: its random part, which names one session without being a credential
    /// (the MAC is what proves it).
    public static func id(of token: String) -> String {
        String(token.split(separator: ".", maxSplits: 1).first ?? "")
    }

    /// Bytes of a `sender(ofID:)`.
    public static let senderBytes = 8

    /// What others in the room are told of a token with id `id`, to tell its messages apart from
    /// another session's under the same name (`RoomMessage.sender`): a hash of the id, which
    /// neither is nor reveals it.
    public static func sender(ofID id: String) -> String {
        Hex.encode(Array(SHA256.hash(data: Array("cowatch-sender-v1\0\(id)".utf8))).prefix(senderBytes))
    }

    public func verify(_ token: String, room: String, name: String) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].utf8.count == 32, parts[1].utf8.count == 32 else { return false }
        return RoomSecret.matches(String(parts[1]), mac(room: room, name: name, random: String(parts[0])))
    }

    private func mac(room: String, name: String, random: String) -> String {
        let message = Array("cowatch-token-v1\0\(room)\0\(name)\0\(random)".utf8)
        let code = HMAC<SHA256>.authenticationCode(for: message, using: key)
        return Hex.encode(Array(code).prefix(16))
    }
}
