import CowatchCore
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Lists the media files under a set of folders, within bounds: the blocking walk of a media scan.
///
/// Breadth first (shallow files are found first when time runs out), names in byte order within a
/// folder. It descends at most `maxDepth` folders below each root, follows symbolic links to files
/// and folders but enters each folder (device and inode) once, so a link back up (a loop), a bind
/// mount onto itself or two roots that overlap end there; a link to itself or to nothing is
/// skipped. Hidden names (`.` first) are skipped, files and folders alike, and so is anything
/// that is neither a regular file nor a folder (FIFOs, sockets, devices), any file whose
/// extension is not in `mediaExtensions`, names that are not UTF-8, and a second path to a file
/// already listed (a hard or symbolic link).
///
/// Threading: any thread; it blocks on the file system (run it on `LowPriorityThread`).
struct MediaDirectoryWalk {
    /// Extensions (lowercase, without the dot) of files worth indexing: video and audio
    /// containers mpv plays.
    static let mediaExtensions: Set<String> = [
        "mkv", "mk3d", "mka", "mp4", "m4v", "avi", "mov", "qt", "webm", "ogv", "ogg", "oga", "ogm", "mp3", "flac", "opus", "wav",
        "ts", "m2ts", "mts", "mpg", "mpeg", "m2v", "vob", "wmv", "wma", "asf", "flv", "3gp", "3g2", "aac", "m4a", "ac3", "dts",
        "divx", "rm", "rmvb", "f4v", "wv", "ape", "aiff", "aif", "alac", "mxf", "nut", "y4m",
    ]

    /// Why a walk ended before it had seen everything: its deadline passed (`.timeLimit`), it
    /// listed `maxFiles` files or had as many folders queued (`.fileLimit`), or `shouldStop` said
    /// so (`.cancelled`).
    typealias Stop = MediaDirectoryIndexer.ScanStop

    /// A root that could not be walked, and why.
    struct Unusable: Sendable, Equatable {
        var path: String
        var reason: String
    }

    struct Outcome: Sendable {
        /// The media files found, in walk order.
        var listing: [MediaIndex.FileStamp] = []
        /// Why it ended early; nil when it saw everything within its depth.
        var stoppedBy: Stop?
        /// Roots that are missing, not folders or cannot be read.
        var unusable: [Unusable] = []
    }

    /// Folders entered below each root, at most.
    var maxDepth: Int
    /// Files listed (and folders queued), at most.
    var maxFiles: Int
    /// Instant (on `clock`) past which the walk stops.
    var deadline: Double
    var clock: any MonotonicClock
    /// Checked as the walk goes: true stops it (`.cancelled`).
    var shouldStop: @Sendable () -> Bool = { false }

    /// True when `name`'s extension is a media one (case aside).
    static func isMediaName(_ name: String) -> Bool {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return false }
        return mediaExtensions.contains(name[name.index(after: dot)...].lowercased())
    }

    /// Walks `roots` (absolute paths; links followed) and lists their media files.
    func walk(roots: [String]) -> Outcome {
        var outcome = Outcome()
        var entered = Set<MediaFileIdentity.FileID>()
        var listed = Set<MediaFileIdentity.FileID>()
        var queue: [(path: String, depth: Int)] = []
        var next = 0
        for root in roots {
            guard let status = MediaFileIdentity.status(of: root) else {
                outcome.unusable.append(Unusable(path: root, reason: String(cString: strerror(errno))))
                continue
            }
            guard status.kind == .directory else {
                outcome.unusable.append(Unusable(path: root, reason: "not a directory"))
                continue
            }
            if entered.insert(status.fileID).inserted { queue.append((root, 0)) }
        }
        func stop() -> Stop? {
            if shouldStop() { return .cancelled }
            if clock.now() >= deadline { return .timeLimit }
            return nil
        }
        while next < queue.count {
            if let reason = stop() {
                outcome.stoppedBy = reason
                return outcome
            }
            let (folder, depth) = queue[next]
            next += 1
            guard let names = Self.names(in: folder) else {
                if depth == 0 { outcome.unusable.append(Unusable(path: folder, reason: String(cString: strerror(errno)))) }
                continue
            }
            for (name, type) in names {
                if let reason = stop() {
                    outcome.stoppedBy = reason
                    return outcome
                }
                guard !name.hasPrefix(".") else { continue }
                let isMedia = Self.isMediaName(name)
                // A regular file that is not media, or a FIFO, socket or device: no stat needed.
                if type == DT_REG && !isMedia { continue }
                if type != DT_REG && type != DT_DIR && type != DT_LNK && type != DT_UNKNOWN { continue }
                let path = folder.hasSuffix("/") ? folder + name : folder + "/" + name
                guard let status = MediaFileIdentity.status(of: path) else { continue }
                switch status.kind {
                case .directory:
                    guard depth < maxDepth, entered.insert(status.fileID).inserted else { continue }
                    guard queue.count - next < maxFiles else {
                        outcome.stoppedBy = .fileLimit
                        return outcome
                    }
                    queue.append((path, depth + 1))
                case .regular:
                    guard isMedia, listed.insert(status.fileID).inserted else { continue }
                    guard outcome.listing.count < maxFiles else {
                        outcome.stoppedBy = .fileLimit
                        return outcome
                    }
                    outcome.listing.append(status.stamp(path: path))
                case .other:
                    continue
                }
            }
        }
        return outcome
    }

    /// The names in `folder` with their `d_type`, in byte order; nil (and `errno`) when it cannot
    /// be opened. `.`, `..` and names that are not valid UTF-8 are left out.
    static func names(in folder: String) -> [(name: String, type: Int)]? {
        guard let directory = opendir(folder) else { return nil }
        defer { closedir(directory) }
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        var names: [(name: String, type: Int)] = []
        while let entry = readdir(directory) {
            let pointer = (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self)
            guard let name = String(validatingCString: pointer), name != ".", name != ".." else { continue }
            names.append((name, Int(entry.pointee.d_type)))
        }
        return names.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }
}
