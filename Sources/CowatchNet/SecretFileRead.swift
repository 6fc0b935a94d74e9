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
}
