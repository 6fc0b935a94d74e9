import Crypto

/// A local media file as the room knows it: by what it holds, never by where it lies.
///
/// A playlist entry for a local file carries this instead of a path (a path never crosses the
/// wire): each daemon looks for a file of its own with the same identity (`MediaIndex`) and says
/// whether it has one. Two identities are the same film when `matches(_:)` says so: the same size
/// and fingerprint, and, when both know it, a duration within `durationTolerance`. The name is
/// only a hint, for people ("night.mkv") and for ranking candidates.
///
/// The fingerprint is SHA-256 over the first `chunkBytes` (64 KiB), the last `chunkBytes` and the
/// size as 8 bytes big-endian (`fingerprint(head:tail:size:)`): 128 KiB read per file, so a folder
/// of films is indexed in seconds, while two encodes, cuts or copies cut short differ in their
/// container header, their index at the end or their size. It is not a proof against a peer who
/// wants to fake a match: a peer who knows a file's head, tail and size can claim to have it.
/// (`MediaFingerprint`, FNV-1a over 4 MiB, is a different and older digest still used on the
/// wire for the current media; the two are not comparable.)
///
/// Values built with `init(size:fingerprint:duration:name:)` are trusted as given (local files);
/// anything from a peer goes through `init(validating:…)` or `validate()` first.
///
/// Threading: a value type, safe to share; every function is pure (no I/O, no clock).
public struct MediaIdentity: Sendable, Hashable, CustomStringConvertible {
    /// Bytes hashed at each end of the file (64 KiB).
    public static let chunkBytes = 65_536
    /// The largest size a peer may announce (2^50 bytes, 1 PiB).
    public static let maxSize = 1 << 50
    /// Durations must be below this many seconds (about 115 days).
    public static let maxDuration = 10_000_000.0
    /// The most bytes (UTF-8) of a name hint.
    public static let maxNameBytes = 255
    /// Two known durations further apart than this (seconds) are different media.
    public static let durationTolerance = 1.0
    /// Characters in a fingerprint: 32 bytes as lowercase hex.
    public static let fingerprintLength = 64

    /// The file's size in bytes, 0 … `maxSize`.
    public var size: Int
    /// `fingerprint(head:tail:size:)` of the file: 64 lowercase hex digits.
    public var fingerprint: String
    /// The media's duration in seconds, when known (a probe found it); nil otherwise.
    public var duration: Double?
    /// The file's name as a display hint: a basename of 1 … `maxNameBytes` bytes without `/` or
    /// characters unfit for display (`ControlCharacters.isUnfitForDisplay`). Not part of the
    /// identity: the same film under another name matches.
    public var name: String

    /// An identity as given, unchecked: for files of this machine (the indexer, `add FILE`).
    /// Use `displayName(forPath:)` for `name`.
    public init(size: Int, fingerprint: String, duration: Double? = nil, name: String) {
        self.size = size
        self.fingerprint = fingerprint
        self.duration = duration
        self.name = name
    }

    /// An identity from a peer, checked by `validate()`.
    /// Errors: `protocol-violation` (`CowatchError.invalidMediaIdentity`) saying which field is wrong.
    public init(validating size: Int, fingerprint: String, duration: Double?, name: String) throws(CowatchError) {
        self.init(size: size, fingerprint: fingerprint, duration: duration, name: name)
        try validate()
    }

    /// Checks every field of an identity that came from elsewhere (hostile input): size 0 …
    /// `maxSize`, fingerprint exactly 64 lowercase hex digits, duration finite, ≥ 0 and below
    /// `maxDuration`, name as `isValidName`.
    /// Errors: `protocol-violation` (`CowatchError.invalidMediaIdentity`); the message names the
    /// field, never repeats the peer's text.
    public func validate() throws(CowatchError) {
        guard size >= 0, size <= Self.maxSize else {
            throw .invalidMediaIdentity("size must be 0 to \(Self.maxSize) bytes")
        }
        guard Self.isValidFingerprint(fingerprint) else {
            throw .invalidMediaIdentity("fingerprint must be \(Self.fingerprintLength) lowercase hex digits")
        }
        if let duration {
            guard duration.isFinite, duration >= 0, duration < Self.maxDuration else {
                throw .invalidMediaIdentity("duration must be a number of seconds from 0 to below \(Int(Self.maxDuration))")
            }
        }
        guard Self.isValidName(name) else {
            throw .invalidMediaIdentity(
                "name must be 1 to \(Self.maxNameBytes) bytes, not . or .., without / or control characters")
        }
    }

    /// True when both are the same media: equal size and fingerprint, and, when both durations
    /// are known, durations within `durationTolerance` of each other. Names are not compared.
    public func matches(_ other: MediaIdentity) -> Bool {
        guard size == other.size, fingerprint == other.fingerprint else { return false }
        if let duration, let otherDuration = other.duration {
            return abs(duration - otherDuration) <= Self.durationTolerance
        }
        return true
    }

    /// What an index looks an identity up by: size and fingerprint.
    public struct Key: Sendable, Hashable {
        public var size: Int
        public var fingerprint: String
        public init(size: Int, fingerprint: String) {
            self.size = size
            self.fingerprint = fingerprint
        }
    }

    /// This identity's size and fingerprint.
    public var key: Key { Key(size: size, fingerprint: fingerprint) }

    /// `name (size bytes, fingerprint's first 12 digits)`, for logs.
    public var description: String {
        "\(name) (\(size) bytes, \(fingerprint.prefix(12)))"
    }
}

// MARK: - The fingerprint

extension MediaIdentity {
    /// The byte range hashed at the start of a file of `size` bytes: `0 ..< min(size, chunkBytes)`.
    public static func headRange(size: Int) -> Range<Int> {
        0..<min(max(size, 0), chunkBytes)
    }

    /// The byte range hashed at the end of a file of `size` bytes:
    /// `max(0, size - chunkBytes) ..< size` (the whole file, again, when it is at most 64 KiB).
    public static func tailRange(size: Int) -> Range<Int> {
        let size = max(size, 0)
        return max(0, size - chunkBytes)..<size
    }

    /// SHA-256 over `head`, `tail` and `size` as 8 bytes big-endian, as 64 lowercase hex digits.
    ///
    /// `head` and `tail` are the bytes of a file of `size` bytes in `headRange(size:)` and
    /// `tailRange(size:)` (so a file of at most 64 KiB is hashed twice over, then its size); the
    /// ranges' lengths follow from `size`, so the concatenation is unambiguous. Bytes of other
    /// lengths are hashed as given, giving a fingerprint no real file of that size has.
    public static func fingerprint<Head: Collection<UInt8>, Tail: Collection<UInt8>>(
        head: Head, tail: Tail, size: Int
    ) -> String {
        var hasher = SHA256()
        hasher.update(data: Array(head))
        hasher.update(data: Array(tail))
        let bigEndian = UInt64(truncatingIfNeeded: size).bigEndian
        withUnsafeBytes(of: bigEndian) { hasher.update(bufferPointer: $0) }
        return Hex.encode(hasher.finalize())
    }

    /// True when `text` is exactly `fingerprintLength` characters of `0-9a-f`.
    public static func isValidFingerprint(_ text: String) -> Bool {
        let utf8 = text.utf8
        return utf8.count == fingerprintLength
            && utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }
}

// MARK: - The name hint

extension MediaIdentity {
    /// True when `name` may be a name hint: 1 … `maxNameBytes` bytes of UTF-8, not `.` or `..`,
    /// without `/` and without characters unfit for display (controls, bidirectional overrides,
    /// invisibles: `ControlCharacters.isUnfitForDisplay`).
    public static func isValidName(_ name: String) -> Bool {
        guard (1...maxNameBytes).contains(name.utf8.count), name != ".", name != ".." else { return false }
        return !name.unicodeScalars.contains { $0 == "/" || ControlCharacters.isUnfitForDisplay($0) }
    }

    /// The name hint for a file at `path`: its last component, each character unfit for display
    /// replaced by `_`, cut to `maxNameBytes` on a character boundary, keeping an extension of up
    /// to 16 bytes. Always passes `isValidName` (`media` when nothing usable is left).
    public static func displayName(forPath path: String) -> String {
        let base = path.split(separator: "/").last.map(String.init) ?? ""
        var scalars = String.UnicodeScalarView()
        for scalar in base.unicodeScalars {
            scalars.append(ControlCharacters.isUnfitForDisplay(scalar) ? "_" : scalar)
        }
        var name = String(scalars)
        if name.utf8.count > maxNameBytes {
            let ext = name.lastIndex(of: ".").map { String(name[$0...]) } ?? ""
            let keep = ext.utf8.count <= 16 ? ext : ""
            var stem = ""
            for character in name.dropLast(keep.count) {
                if stem.utf8.count + character.utf8.count + keep.utf8.count > maxNameBytes { break }
                stem.append(character)
            }
            name = stem + keep
        }
        return isValidName(name) ? name : "media"
    }
}

extension CowatchError {
    /// `protocol-violation`: a media identity from a peer has a field out of range or malformed
    /// (`MediaIdentity.validate()`); `reason` says which.
    public static func invalidMediaIdentity(_ reason: String) -> CowatchError {
        CowatchError(.protocolViolation, "media identity: \(reason)")
    }
}
