import CowatchCore
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What the file system says of one path, and a file's `MediaIdentity` from its first and last
/// 64 KiB: the blocking half of media indexing.
///
/// Threading: any thread; every function blocks on the file system, so call them from
/// `LowPriorityThread` (or another thread of your own), never from a Swift task directly.
enum MediaFileIdentity {
    /// What `status(of:)` found at a path.
    struct Status: Sendable, Equatable {
        enum Kind: Sendable, Equatable { case regular, directory, other }
        var kind: Kind
        var size: Int
        /// `st_mtim` in nanoseconds since the epoch.
        var modified: Int64
        var device: UInt64
        var inode: UInt64

        /// Device and inode: the same file or folder reached by two paths has the same one.
        var fileID: FileID { FileID(device: device, inode: inode) }

        func stamp(path: String) -> MediaIndex.FileStamp {
            MediaIndex.FileStamp(path: path, size: size, modified: modified, inode: inode)
        }
    }

    struct FileID: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
    }

    /// `stat(2)` of `path`, following symbolic links; nil and `errno` set when it fails (missing,
    /// a dangling or looping link, no permission on the way).
    static func status(of path: String) -> Status? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return status(info)
    }

    /// `fstat(2)` of an open descriptor.
    static func status(of descriptor: Int32) -> Status? {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        return status(info)
    }

    private static func status(_ info: stat) -> Status {
        let type = info.st_mode & mode_t(S_IFMT)
        let kind: Status.Kind = type == mode_t(S_IFREG) ? .regular : type == mode_t(S_IFDIR) ? .directory : .other
        return Status(
            kind: kind, size: Int(info.st_size),
            modified: Int64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(info.st_mtim.tv_nsec),
            device: UInt64(truncatingIfNeeded: info.st_dev), inode: UInt64(truncatingIfNeeded: info.st_ino))
    }

    /// Opens the file at `path` (following links), checks it is a regular file, reads its first and
    /// last `MediaIdentity.chunkBytes` with `pread` and returns its stamp (from the open file) and
    /// identity (name from `MediaIdentity.displayName(forPath:)`, no duration).
    ///
    /// Errors: `not-found` when nothing is at `path`; `media-unavailable` when it cannot be opened
    /// or read (saying why), is not a regular file, or changed while it was read (a copy still
    /// being written: try again later).
    static func identify(path: String) throws(CowatchError) -> (stamp: MediaIndex.FileStamp, identity: MediaIdentity) {
        // O_NONBLOCK: a FIFO put in place of the file must not hang the open.
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw CowatchError(.notFound, "no such file: \(path)") }
            throw CowatchError(.mediaUnavailable, "cannot open \(path): \(String(cString: strerror(code)))")
        }
        defer { close(descriptor) }
        guard let before = status(of: descriptor) else {
            throw CowatchError(.mediaUnavailable, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        guard before.kind == .regular else { throw CowatchError(.mediaUnavailable, "\(path) is not a regular file") }
        let head = try read(descriptor, range: MediaIdentity.headRange(size: before.size), path: path)
        let tailRange = MediaIdentity.tailRange(size: before.size)
        let tail = tailRange == MediaIdentity.headRange(size: before.size)
            ? head : try read(descriptor, range: tailRange, path: path)
        guard let after = status(of: descriptor), after == before else {
            throw CowatchError(.mediaUnavailable, "\(path) changed while it was read")
        }
        let identity = MediaIdentity(
            size: before.size, fingerprint: MediaIdentity.fingerprint(head: head, tail: tail, size: before.size),
            name: MediaIdentity.displayName(forPath: path))
        return (before.stamp(path: path), identity)
    }

    /// Exactly the bytes of `range`; a file that ends sooner changed under us.
    private static func read(_ descriptor: Int32, range: Range<Int>, path: String) throws(CowatchError) -> [UInt8] {
        guard !range.isEmpty else { return [] }
        var buffer = [UInt8](repeating: 0, count: range.count)
        var done = 0
        while done < range.count {
            let count = buffer.withUnsafeMutableBytes { bytes in
                pread(descriptor, bytes.baseAddress! + done, range.count - done, off_t(range.lowerBound + done))
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw CowatchError(.mediaUnavailable, "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { throw CowatchError(.mediaUnavailable, "\(path) changed while it was read") }
            done += count
        }
        return buffer
    }
}
