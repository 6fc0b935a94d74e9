/// The rules for a file holding a room secret (`--room-secret-file`, `COWATCH_ROOM_SECRET_FILE`).
///
/// The daemon reads the file's metadata and bytes (see `CowatchDaemon`'s reader); the decisions
/// live here, pure, so they are tested without a filesystem. As ssh does for private keys: the
/// file must be a regular file owned by the user (or root) that neither group nor others may
/// read or write. One trailing line end is dropped; the rest is the secret, checked by
/// `RoomSecret.validate`. No message ever contains the secret.
///
/// Threading: pure functions.
public enum RoomSecretFile {
    /// Read at most this much: a secret is at most `RoomSecret.maxLength` bytes.
    public static let maxFileBytes = 4096

    /// What the reader learnt from `stat(2)`.
    public struct Metadata: Sendable, Hashable {
        public var isRegularFile: Bool
        /// The permission bits (`st_mode & 0o7777`).
        public var mode: UInt32
        public var owner: UInt32

        public init(isRegularFile: Bool, mode: UInt32, owner: UInt32) {
            self.isRegularFile = isRegularFile
            self.mode = mode
            self.owner = owner
        }
    }

    /// Checks the file's type, owner and mode. `user` is the daemon's effective uid.
    /// Errors: `unsafe-path` (with the fix: `chmod 600 PATH`), `invalid-configuration`.
    public static func check(_ metadata: Metadata, path: String, user: UInt32) throws(CowatchError) {
        guard metadata.isRegularFile else {
            throw CowatchError(.invalidConfiguration, "room secret file \(path) is not a regular file")
        }
        guard metadata.owner == user || metadata.owner == 0 else {
            throw CowatchError(.unsafePath, "room secret file \(path) belongs to another user (uid \(metadata.owner))")
        }
        guard metadata.mode & 0o077 == 0 else {
            let octal = String(metadata.mode & 0o777, radix: 8)
            throw CowatchError(
                .unsafePath, "room secret file \(path) is open to other users (mode \(octal)): chmod 600 \(path)")
        }
    }

    /// The secret in the file's bytes: UTF-8, one trailing "\n" (or "\r\n") dropped.
    /// Errors: `invalid-configuration` (not UTF-8, too long, too short, control characters).
    public static func secret(fromContents bytes: [UInt8], path: String) throws(CowatchError) -> RoomSecretValue {
        var line = bytes[...]
        if line.last == UInt8(ascii: "\n") {
            line = line.dropLast()
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        }
        guard bytes.count <= maxFileBytes, let text = String(validating: line, as: UTF8.self) else {
            throw CowatchError(.invalidConfiguration, "room secret file \(path) must hold one line of UTF-8 text")
        }
        do {
            return try RoomSecretValue(text)
        } catch {
            throw CowatchError(error.code, "room secret file \(path): \(error.message)")
        }
    }
}
