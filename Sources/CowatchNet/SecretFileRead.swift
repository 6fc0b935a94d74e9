import CowatchCore
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Reads what a descriptor holds, up to `limit` bytes and one more (so the caller can tell a
/// file too long), for files that hold secrets (a room secret, an invite): the read buffer is
/// zeroed afterwards; the caller zeroes the bytes it got once done with them.
///
/// Threading: any thread (blocking reads). Errors: `invalid-configuration` naming `what` when a
/// read fails.
public enum SecretFileRead {
    public static func bytes(of descriptor: Int32, limit: Int, what: String) throws(CowatchError) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        defer { for index in buffer.indices { buffer[index] = 0 } }
        while bytes.count <= limit {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw CowatchError(.invalidConfiguration, "cannot read \(what): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            bytes += buffer[0..<count]
        }
        return bytes
    }

    /// A secret file's bytes (at most `limit` and one more), read from `path` only when it is a
    /// regular file of this user that nobody else may read or write (`RoomSecretFile.check`): the
    /// file is opened first and checked through its descriptor, so the file checked is the file
    /// read. The caller zeroes the bytes once done with them.
    ///
    /// Errors: `invalid-configuration` ("cannot read `what` `path`: …"), `unsafe-path`.
    public static func checkedBytes(path: String, limit: Int, what: String) throws(CowatchError) -> [UInt8] {
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
        return try bytes(of: descriptor, limit: limit, what: "\(what) \(path)")
    }
}
