import CowatchCore
import CowatchNet
import Foundation

/// Reads a room secret file: `stat(2)` for the checks of `RoomSecretFile`, then at most
/// `RoomSecretFile.maxFileBytes` bytes. The file is opened first and checked through its
/// descriptor, so the file checked is the file read.
///
/// Threading: a pure function of the filesystem; call it from any thread.
enum RoomSecretReader {
    /// Errors: `invalid-configuration` (missing, unreadable, not a file, bad secret),
    /// `unsafe-path` (another user's file, or one that group or others may read or write).
    static func read(path: String) throws(CowatchError) -> RoomSecretValue {
        var bytes = try SecretFileRead.checkedBytes(path: path, limit: RoomSecretFile.maxFileBytes, what: "room secret file")
        // Scrub our copy once the secret is out (best effort: Swift may have copied it).
        defer { for index in bytes.indices { bytes[index] = 0 } }
        return try RoomSecretFile.secret(fromContents: bytes, path: path)
    }
}
