import CowatchCore
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Reads byte ranges of a file a member shares (issue 25), at any offset and in any order
/// (`pread`: no shared position), into buffers of the channel's allocator.
///
/// Threading: one task (a stream's serving loop, on the transfer thread: the calls block on
/// the disk). Errors: `io-error` naming the path.
final class SharedFileReader {
    let path: String
    private let fd: Int32

    init(path: String) throws(CowatchError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CowatchError(.ioError, "cannot read \(path): \(String(cString: strerror(errno)))") }
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    /// The file's size now (nil when it cannot be told).
    var size: Int? {
        var info = stat()
        return fstat(fd, &info) == 0 ? Int(info.st_size) : nil
    }

    /// Bytes `offset ..< offset + count`, fewer only at the end of the file.
    func read(at offset: Int, count: Int, allocator: ByteBufferAllocator) throws(CowatchError) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: count)
        var failure: Int32?
        while buffer.readableBytes < count {
            let at = offset + buffer.readableBytes
            let wanted = count - buffer.readableBytes
            let got = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { bytes in
                var result: Int
                repeat { result = pread(fd, bytes.baseAddress, wanted, off_t(at)) } while result < 0 && errno == EINTR
                if result < 0 { failure = errno }
                return max(0, result)
            }
            if let failure { throw CowatchError(.ioError, "cannot read \(path): \(String(cString: strerror(failure)))") }
            if got == 0 { break }
        }
        return buffer
    }
}
