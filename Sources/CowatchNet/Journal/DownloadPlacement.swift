import CowatchCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Puts a complete, verified download (a partial file in our private directory,
/// `PartialDownloads`) at its target in the user's directory, without ever writing through a
/// link someone planted there and without replacing a file unless asked.
///
/// On one file system this is `link` (refuses any name that exists, a link included: nothing is
/// overwritten) or, when replacing, `rename` (replaces a link itself, never what it points at).
/// Across file systems the bytes are first copied into a new file beside the target, created
/// with `O_CREAT|O_EXCL|O_NOFOLLOW` under a random name, which is then linked or renamed the
/// same way. The partial file is removed once the target is in place.
///
/// Threading: stateless; blocks on the file system (call it off the room's actor).
/// Errors: `already-exists` (the target is there and `replacing` is false; the partial is kept,
/// so a `--force` retry needs no new download); `io-error` for anything else.
enum DownloadPlacement {
    static func place(_ partial: String, at target: String, replacing: Bool) throws(CowatchError) {
        if try move(partial, to: target, replacing: replacing) {
            unlink(partial)
            return
        }
        // Another file system: a copy of ours beside the target, then the same atomic step.
        let copy = try copyBeside(target, from: partial)
        defer { unlink(copy) }
        guard try move(copy, to: target, replacing: replacing) else {
            throw CowatchError(.ioError, "cannot move \(copy) to \(target): \(String(cString: strerror(EXDEV)))")
        }
        unlink(partial)
    }

    /// `link` (or `rename` when replacing) `source` to `target`. False when they are on
    /// different file systems (or hard links are not supported there); throws otherwise.
    private static func move(_ source: String, to target: String, replacing: Bool) throws(CowatchError) -> Bool {
        if replacing ? rename(source, target) == 0 : link(source, target) == 0 { return true }
        let code = errno
        if !replacing, code == EEXIST {
            throw CowatchError(.alreadyExists, "\(target) already exists; cowatch fetch --force replaces it")
        }
        if code == EXDEV || (!replacing && (code == EPERM || code == ENOTSUP)) { return false }
        throw CowatchError(.ioError, "cannot move the download to \(target): \(String(cString: strerror(code)))")
    }

    /// A copy of `source` in a new file (0600) beside `target`, made with O_EXCL|O_NOFOLLOW so
    /// no planted name is followed; returns its path.
    private static func copyBeside(_ target: String, from source: String) throws(CowatchError) -> String {
        let slash = target.lastIndex(of: "/")
        let directory = slash.map { String(target[..<$0]) } ?? "."
        let copy = directory + "/.cowatch-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).download"
        let output = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard output >= 0 else {
            throw CowatchError(.ioError, "cannot create \(copy): \(String(cString: strerror(errno)))")
        }
        let input = open(source, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        var failure: String?
        if input < 0 { failure = "cannot read \(source): \(String(cString: strerror(errno)))" }
        var buffer = [UInt8](repeating: 0, count: ContentFile.chunkBytes)
        while failure == nil {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                failure = "cannot read \(source): \(String(cString: strerror(errno)))"
                break
            }
            if count == 0 { break }
            var offset = 0
            while offset < count {
                let wrote = buffer.withUnsafeBytes { write(output, $0.baseAddress! + offset, count - offset) }
                if wrote < 0 {
                    if errno == EINTR { continue }
                    failure = "cannot write \(copy): \(String(cString: strerror(errno)))"
                    break
                }
                offset += wrote
            }
        }
        if failure == nil, fsync(output) != 0 { failure = "cannot flush \(copy): \(String(cString: strerror(errno)))" }
        if input >= 0 { close(input) }
        if close(output) != 0, failure == nil { failure = "cannot close \(copy): \(String(cString: strerror(errno)))" }
        if let failure {
            unlink(copy)
            throw CowatchError(.ioError, failure)
        }
        return copy
    }
}
