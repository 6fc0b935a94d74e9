import CowatchCore
import Crypto
import Foundation
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Streaming file I/O for attachments: hashing, appending and reading in chunks, so no side ever
/// holds a whole file in memory.
///
/// Threading: each value belongs to one task. The calls block on the file system (page-cache
/// speed for the sizes involved, ≤ 100 MiB); they run in the transfer's own task, never on an
/// actor that serves the room. Errors: `io-error` naming the path.
enum ContentFile {
    /// Bytes read or written per step.
    static let chunkBytes = 256 * 1024

    /// The SHA-256 (hex) and size of the file at `path`.
    static func hash(path: String) throws(CowatchError) -> (id: String, size: Int) {
        var hasher = SHA256()
        let size = try hashPrefix(path: path, into: &hasher, limit: .max)
        return (hex(hasher.finalize()), size)
    }

    /// Feeds the first `limit` bytes of `path` (or all) to `hasher`; returns how many.
    static func hashPrefix(path: String, into hasher: inout SHA256, limit: Int) throws(CowatchError) -> Int {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CowatchError(.ioError, "cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: chunkBytes)
        var total = 0
        while total < limit {
            let wanted = min(chunkBytes, limit - total)
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, wanted) }
            if count < 0 {
                if errno == EINTR { continue }
                throw CowatchError(.ioError, "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            total += count
        }
        return total
    }

    static func hex(_ digest: SHA256.Digest) -> String {
        digest.map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined()
    }

    static func size(path: String) -> Int? {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : nil
    }
}

/// Appends received bytes to a file while hashing them; resumes a partial file.
///
/// Threading: one task. Errors: `io-error`; `protocol-violation` when more than `size` bytes come.
final class ContentWriter {
    let path: String
    let size: Int
    private(set) var written: Int
    private var hasher: SHA256
    private let fd: Int32

    /// Opens `path` for `size` bytes, keeping (and hashing) what it already holds when that is
    /// no more than `size`; else it starts afresh.
    init(path: String, size: Int, resume: Bool) throws(CowatchError) {
        self.path = path
        self.size = size
        var link = stat()
        if lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK {
            throw CowatchError(.unsafePath, "\(path) is a symbolic link; not writing through it")
        }
        let existing = resume ? (ContentFile.size(path: path) ?? 0) : 0
        var hasher = SHA256()
        var kept = 0
        if existing > 0 && existing <= size {
            kept = try ContentFile.hashPrefix(path: path, into: &hasher, limit: existing)
        }
        // Never through a link: another local user could plant one where the partial file goes.
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            if errno == ELOOP { throw CowatchError(.unsafePath, "\(path) is a symbolic link; not writing through it") }
            throw CowatchError(.ioError, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        guard ftruncate(fd, off_t(kept)) == 0, lseek(fd, off_t(kept), SEEK_SET) >= 0 else {
            close(fd)
            throw CowatchError(.ioError, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        self.fd = fd
        self.hasher = hasher
        self.written = kept
    }

    deinit { close(fd) }

    var isComplete: Bool { written == size }

    /// Appends `buffer`. Throws `protocol-violation` past `size`.
    func append(_ buffer: ByteBuffer) throws(CowatchError) {
        guard buffer.readableBytes <= size - written else {
            throw CowatchError(.protocolViolation, "more bytes than the \(size) announced")
        }
        let failure: Int32? = buffer.withUnsafeReadableBytes { bytes in
            hasher.update(bufferPointer: bytes)
            var offset = 0
            while offset < bytes.count {
                let count = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += count
            }
            return nil
        }
        if let failure { throw CowatchError(.ioError, "cannot write \(path): \(String(cString: strerror(failure)))") }
        written += buffer.readableBytes
    }

    /// The SHA-256 (hex) of everything written, once complete.
    func digest() -> String {
        ContentFile.hex(hasher.finalize())
    }
}

/// Reads a file in chunks from an offset.
///
/// Threading: one task. Errors: `io-error`.
final class ContentReader {
    let path: String
    private let fd: Int32
    private(set) var offset: Int

    init(path: String, offset: Int) throws(CowatchError) {
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CowatchError(.ioError, "cannot read \(path): \(String(cString: strerror(errno)))") }
        self.fd = fd
        self.offset = offset
    }

    deinit { close(fd) }

    /// The next chunk of at most `limit` bytes; empty at the end of the file.
    func next(limit: Int = ContentFile.chunkBytes, allocator: ByteBufferAllocator = .init()) throws(CowatchError) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: limit)
        let fd = fd
        let at = offset
        let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: limit) { bytes in
            var result: Int
            repeat { result = pread(fd, bytes.baseAddress, min(limit, bytes.count), off_t(at)) } while result < 0 && errno == EINTR
            return max(0, result)
        }
        if count == 0, let size = ContentFile.size(path: path), size > offset {
            throw CowatchError(.ioError, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        offset += count
        return buffer
    }
}
