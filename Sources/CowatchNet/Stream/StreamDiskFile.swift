import CowatchCore

#if canImport(Glibc)
    import Glibc
#endif

/// The file behind a stream receiver's disk tier (issue 25): whole blocks of `blockBytes` at
/// `slot * blockBytes`, where `StreamBlockCache` says.
///
/// The file is created in `directory` under a random name (`O_CREAT|O_EXCL`, mode 0600, so never
/// an existing file nor through a link) and unlinked at once: only the descriptor keeps it. Its
/// space goes back when the descriptor closes, at `close()`, on deinit, or when the process ends
/// however it ends (a crash, SIGKILL), and nothing is ever left in the directory.
///
/// The tier gets the bytes asked for, at most half of what the file system has free for us now
/// (`statvfs`), so a nearly full disk gets a smaller tier (or none); holes are never written, so
/// the file takes only what was kept.
///
/// Threading: not `Sendable`; one owner (the receiver actor) makes every call. The calls block
/// on the file system: one block into or out of the page cache. Errors: `io-error` naming the
/// directory (and after `close()`).
final class StreamDiskFile {
    /// Bytes of a slot.
    let blockBytes: Int
    /// Slots the file holds at most.
    let slots: Int
    private let directory: String
    /// -1 once closed.
    private var descriptor: Int32

    /// A new, already unlinked file in `directory` for at most `maxBytes` (whole slots), fewer
    /// when the file system has less than twice as much free. Errors: `io-error` when the
    /// directory cannot be used or has no room for one slot.
    init(directory: String, blockBytes: Int, maxBytes: Int) throws(CowatchError) {
        self.directory = directory
        self.blockBytes = max(1, blockBytes)
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { throw Self.failure("cannot use", directory, errno) }
        let free = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        let spare = free.overflow ? Int.max : Int(clamping: free.partialValue / 2)
        slots = min(max(0, maxBytes), spare) / self.blockBytes
        guard slots > 0 else {
            throw CowatchError(.ioError, "no room for a stream cache in \(directory): \(spare) bytes to spare, \(maxBytes) allowed")
        }
        descriptor = try Self.createUnlinked(in: directory)
    }

    deinit {
        if descriptor >= 0 { Glibc.close(descriptor) }
    }

    /// Writes `bytes` (at most one slot's) into `slot`.
    func write(_ bytes: [UInt8], slot: Int) throws(CowatchError) {
        precondition(slot >= 0 && slot < slots && bytes.count <= blockBytes, "slot \(slot) of \(slots), \(bytes.count) bytes")
        guard descriptor >= 0 else { throw Self.closed }
        let descriptor = descriptor
        let base = off_t(slot * blockBytes)
        let failure: Int32? = bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let count = pwrite(descriptor, buffer.baseAddress! + done, buffer.count - done, base + off_t(done))
                if count < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                done += count
            }
            return nil
        }
        if let failure { throw Self.failure("cannot write the stream cache in", directory, failure) }
    }

    /// The first `count` bytes of `slot` (at most one slot's). A slot never written reads as
    /// zeros or short; the owner reads only slots it wrote.
    func read(slot: Int, count: Int) throws(CowatchError) -> [UInt8] {
        precondition(slot >= 0 && slot < slots && count >= 0 && count <= blockBytes, "slot \(slot) of \(slots), \(count) bytes")
        guard descriptor >= 0 else { throw Self.closed }
        let descriptor = descriptor
        let base = off_t(slot * blockBytes)
        var failure: Int32?
        var done = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            while done < count {
                let got = pread(descriptor, buffer.baseAddress! + done, count - done, base + off_t(done))
                if got < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    break
                }
                if got == 0 { break }
                done += got
            }
            initialized = done
        }
        if let failure { throw Self.failure("cannot read the stream cache in", directory, failure) }
        guard done == count else {
            throw CowatchError(.ioError, "the stream cache in \(directory) ends early: \(done) of \(count) bytes in slot \(slot)")
        }
        return bytes
    }

    /// Closes the file: its space goes back. Later calls fail with `io-error`.
    func close() {
        guard descriptor >= 0 else { return }
        Glibc.close(descriptor)
        descriptor = -1
    }

    /// An open descriptor for a new file in `directory` that is already unlinked.
    private static func createUnlinked(in directory: String) throws(CowatchError) -> Int32 {
        // A random name: a name taken (by anything) is tried again, never opened.
        for _ in 0..<8 {
            let path = directory + "/.cowatch-stream-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            let descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            if descriptor < 0 {
                if errno == EEXIST || errno == EINTR { continue }
                throw failure("cannot create a stream cache in", directory, errno)
            }
            guard unlink(path) == 0 else {
                let code = errno
                Glibc.close(descriptor)
                throw failure("cannot unlink the stream cache in", directory, code)
            }
            return descriptor
        }
        throw CowatchError(.ioError, "cannot create a stream cache in \(directory): every name tried was taken")
    }

    private static func failure(_ what: String, _ directory: String, _ code: Int32) -> CowatchError {
        CowatchError(.ioError, "\(what) \(directory): \(String(cString: strerror(code)))")
    }

    private static let closed = CowatchError(.ioError, "the stream cache was closed")
}
