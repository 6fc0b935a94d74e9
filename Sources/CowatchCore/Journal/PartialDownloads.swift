import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a daemon keeps the bytes of downloads not yet complete: `STATE/cowatch/partial`, a
/// private directory (mode exactly 0700, ours, not a link: `SafeDirectory`), never beside the
/// target, where another local user could plant a link as the partial file (issue 22 item 12).
///
/// A partial file is named after the attachment and the target (`fileName`), so fetching the
/// same attachment to the same place again — after a broken link or a restart — resumes it, and
/// two fetches to different places never share bytes. Partials are removed when their download
/// completes or fails its hash; the rest (given up, refused at the end) are bounded by `prune`:
/// at most `maxFiles`, none older than `maxAge`.
///
/// Threading: stateless; any thread. The functions block on the file system.
/// Errors: `unsafe-path` for a directory that is not private; `invalid-configuration` or
/// `io-error` when it cannot be made.
public enum PartialDownloads {
    /// Partial files kept at most (each up to an attachment's 100 MiB).
    public static let maxFiles = 8
    /// A partial file untouched this long (seconds) is given up.
    public static let maxAge: Double = 7 * 24 * 3600
    /// A partial file touched this recently (seconds) may be in use: `prune` keeps it whatever
    /// the count (a running transfer writes at least every 30 s or breaks off).
    public static let activeSeconds: Double = 120

    /// The private directory under the state directory of `environment`, made (0700) and
    /// checked; `unsafe-path` when it is a link, not ours, or open to others.
    public static func directory(environment: [String: String]) throws(CowatchError) -> String {
        let state = try StatePaths.defaultDirectory(environment: environment)
        try StatePaths.ensureDirectory(state)
        let directory = state + "/partial"
        try SafeDirectory.ensure(directory)
        return directory
    }

    /// The partial file's name for attachment `id` fetched to `target`: our own name (hex of a
    /// SHA-256 over both, then `.part`), nothing a peer chose. Pure.
    public static func fileName(id: String, target: String) -> String {
        let digest = SHA256.hash(data: Array(id.utf8) + [0] + Array(target.utf8))
        return digest.prefix(16).map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined() + ".part"
    }

    /// Removes the partial files in `directory` untouched for `maxAge`, then the oldest beyond
    /// `maxFiles` (but none touched within `activeSeconds`), and never `keeping` (a path).
    /// Only regular `.part` files are removed; failures are ignored (the next prune retries).
    public static func prune(_ directory: String, keeping: String? = nil, now: Double = Date().timeIntervalSince1970) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        var files: [(path: String, modified: Double)] = []
        for name in names where name.hasSuffix(".part") {
            let path = directory + "/" + name
            var info = stat()
            guard path != keeping, lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            #if canImport(Glibc)
            files.append((path, Double(info.st_mtim.tv_sec)))
            #else
            files.append((path, Double(info.st_mtimespec.tv_sec)))
            #endif
        }
        files.sort { $0.modified > $1.modified }
        let room = max(0, maxFiles - (keeping == nil ? 0 : 1))
        for (index, file) in files.enumerated() {
            let age = now - file.modified
            if age > maxAge || (index >= room && age > activeSeconds) { unlink(file.path) }
        }
    }
}
