import CowatchCore
import CowatchNet
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Reads a room secret file: `stat(2)` for the checks of `RoomSecretFile`, then at most
/// `RoomSecretFile.maxFileBytes` bytes. The file is opened first and checked through its
/// descriptor, so the file checked is the file read.
///
/// Threading: a pure function of the filesystem; call it from any thread.
enum RoomSecretReader {
    /// Errors: `invalid-configuration` (missing, unreadable, not a file, bad secret),
    /// `unsafe-path` (another user's file, or one that group or others may read or write).
    static func read(path: String) throws(CowatchError) -> RoomSecretValue {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw CowatchError(.invalidConfiguration, "cannot read room secret file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw CowatchError(.invalidConfiguration, "cannot read room secret file \(path): \(String(cString: strerror(errno)))")
        }
        try RoomSecretFile.check(
            .init(
                isRegularFile: (status.st_mode & S_IFMT) == S_IFREG, mode: UInt32(status.st_mode & 0o7777),
                owner: UInt32(status.st_uid)),
            path: path, user: UInt32(geteuid()))
        var bytes = try SecretFileRead.bytes(
            of: descriptor, limit: RoomSecretFile.maxFileBytes, what: "room secret file \(path)")
        // Scrub our copy once the secret is out (best effort: Swift may have copied it).
        defer { for index in bytes.indices { bytes[index] = 0 } }
        return try RoomSecretFile.secret(fromContents: bytes, path: path)
    }
}
