import Crypto
import Foundation

/// The SHA-256 of a certificate's SubjectPublicKeyInfo (its public key with the algorithm), the
/// pin a client checks the room server against.
///
/// Pinning the key rather than the whole certificate lets a server renew its certificate with the
/// same key without breaking invites or `known_hosts` lines.
///
/// Text form: `sha256:` and the 32 bytes in base64url without padding (43 characters), short
/// enough for an invite link: `sha256:n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg`. `init?(text:)`
/// also accepts `sha256:` and 64 lowercase hexadecimal digits (what `openssl … -sha256` shows,
/// without the colons); `text` always writes base64url.
///
/// Threading: a value type, safe to share.
public struct CertificateFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The 32 digest bytes.
    public let bytes: [UInt8]

    public static let prefix = "sha256:"

    /// The fingerprint of a DER-encoded SubjectPublicKeyInfo.
    public init(spkiDER: some DataProtocol) {
        bytes = Array(SHA256.hash(data: spkiDER))
    }

    /// A fingerprint from its 32 digest bytes; nil for any other length.
    public init?(digest: some Collection<UInt8>) {
        guard digest.count == 32 else { return nil }
        bytes = Array(digest)
    }

    /// Parses `sha256:` + 43 base64url characters (no padding), or `sha256:` + 64 lowercase hex
    /// digits. Anything else (other prefix, padding, whitespace, wrong length, stray bits in the
    /// last base64 character) is nil.
    public init?(text: String) {
        guard text.hasPrefix(Self.prefix) else { return nil }
        let body = Array(text.utf8.dropFirst(Self.prefix.utf8.count))
        let decoded: [UInt8]?
        switch body.count {
        case 43: decoded = Self.decodeBase64URL(body)
        case 64: decoded = Self.decodeHex(body)
        default: decoded = nil
        }
        guard let decoded, decoded.count == 32 else { return nil }
        bytes = decoded
    }

    /// `sha256:` + base64url without padding.
    public var text: String { Self.prefix + Self.encodeBase64URL(bytes) }

    public var description: String { text }

    /// Compares in constant time (every byte is looked at whatever differs), so a remote party
    /// timing a refusal learns nothing about how close its key came.
    public func matches(_ other: CertificateFingerprint) -> Bool {
        guard bytes.count == other.bytes.count else { return false }
        var difference: UInt8 = 0
        for index in bytes.indices { difference |= bytes[index] ^ other.bytes[index] }
        return difference == 0
    }

    // MARK: - Encodings

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static func encodeBase64URL(_ input: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index < input.count {
            let chunk = input[index..<min(index + 3, input.count)]
            var value = UInt32(0)
            for (offset, byte) in chunk.enumerated() { value |= UInt32(byte) << (16 - 8 * offset) }
            for position in 0...chunk.count {
                output.append(alphabet[Int((value >> (18 - 6 * position)) & 0x3F)])
            }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func sextet(_ character: UInt8) -> UInt32? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): UInt32(character - UInt8(ascii: "A"))
        case UInt8(ascii: "a")...UInt8(ascii: "z"): UInt32(character - UInt8(ascii: "a") + 26)
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(character - UInt8(ascii: "0") + 52)
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }

    /// Strict: only the URL alphabet, no padding, and the unused low bits of the last character
    /// must be zero (so each fingerprint has exactly one text form).
    private static func decodeBase64URL(_ input: [UInt8]) -> [UInt8]? {
        guard input.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        var index = 0
        while index < input.count {
            let chunk = input[index..<min(index + 4, input.count)]
            var value = UInt32(0)
            for (offset, character) in chunk.enumerated() {
                guard let bits = sextet(character) else { return nil }
                value |= bits << (18 - 6 * offset)
            }
            let byteCount = chunk.count - 1
            let unusedBits = 24 - 8 * byteCount
            guard value & ((1 << unusedBits) - 1) == 0 else { return nil }
            for position in 0..<byteCount { output.append(UInt8((value >> (16 - 8 * position)) & 0xFF)) }
            index += 4
        }
        return output
    }

    private static func decodeHex(_ input: [UInt8]) -> [UInt8]? {
        func nibble(_ character: UInt8) -> UInt8? {
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var output: [UInt8] = []
        var index = 0
        while index + 1 < input.count {
            guard let high = nibble(input[index]), let low = nibble(input[index + 1]) else { return nil }
            output.append(high << 4 | low)
            index += 2
        }
        return output
    }
}
