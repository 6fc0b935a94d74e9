import CowatchCore
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Reads a Syncplay password file: one line, checked like a room secret file (a regular file of
/// this user that nobody else may read), without its line break.
///
/// Threading: any thread (blocking reads). Errors: `invalid-configuration` (missing, unreadable,
/// empty, not one clean line), `unsafe-path` (another user's file, or one others may read).
public enum SyncplayPasswordReader {
    public static func read(path: String, what: String) throws(CowatchError) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw CowatchError(.invalidConfiguration, "cannot read \(what) \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw CowatchError(.invalidConfiguration, "cannot read \(what) \(path): \(String(cString: strerror(errno)))")
        }
        try RoomSecretFile.check(
            .init(
                isRegularFile: (status.st_mode & S_IFMT) == S_IFREG, mode: UInt32(status.st_mode & 0o7777),
                owner: UInt32(status.st_uid)),
            path: path, user: UInt32(geteuid()))
        var bytes = try SecretFileRead.bytes(of: descriptor, limit: 1024, what: "\(what) \(path)")
        defer { for index in bytes.indices { bytes[index] = 0 } }
        while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
        guard bytes.count <= 1024, !bytes.isEmpty, let text = String(validating: bytes, as: UTF8.self), ControlCharacters.isClean(text)
        else {
            throw CowatchError(.invalidConfiguration, "\(what) \(path) must hold one line of 1–1024 bytes without control characters")
        }
        return text
    }
}
