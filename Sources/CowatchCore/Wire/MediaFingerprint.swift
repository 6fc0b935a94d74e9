/// A content fingerprint of a media file's first bytes, to tell "the same film" from "a different
/// file" across participants.
///
/// FNV-1a, 64 bits: fast and good at telling different files apart, which is all it is for. It is
/// not a cryptographic hash; nobody should trust it against a participant who wants to fake it.
/// Threading: pure functions.
public enum MediaFingerprint {
    /// How many bytes from the start of a file are hashed (4 MiB).
    public static let prefixBytes = 4 << 20

    /// A 16-digit lowercase hex digest of `bytes`.
    public static func digest<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The local file path behind a media URL (`/path`, `file:///path`), or nil for network URLs.
    public static func localPath(of url: String) -> String? {
        if url.hasPrefix("/") { return url }
        if url.hasPrefix("file://") {
            let path = String(url.dropFirst("file://".count))
            return path.hasPrefix("/") ? path.removingPercentEncodingIfPossible : nil
        }
        if url.contains("://") { return nil }
        return url  // a relative path, as mpv takes it
    }
}

extension String {
    /// `%20` → space, for file URLs; leaves the text as is when it is not valid percent-encoding.
    fileprivate var removingPercentEncodingIfPossible: String {
        var bytes: [UInt8] = []
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            {
                bytes.append(value)
            } else if byte == UInt8(ascii: "%") {
                return self
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
