import CowatchCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The room server's content-addressed attachment store: one file per SHA-256 (`<id>`), and
/// `<id>.part` while an upload is under way or interrupted.
///
/// It lives in `attachments/` under the server's state directory (mode 0700), or in a private
/// temporary directory when the server has none. Attachments belong to live rooms only, so the
/// store is emptied at start-up; `RoomJournal` says what to delete afterwards.
///
/// Threading: a value type; its methods do blocking file I/O and are safe from any task (ids
/// are checked hex, so no path ever comes from a peer). Errors: `io-error` with the path.
public struct AttachmentStore: Sendable {
    public let directory: String

    /// Creates (or empties) the store under `stateDirectory`, or under a new temporary directory.
    public init(stateDirectory: String?) throws(CowatchError) {
        let base = stateDirectory ?? NSTemporaryDirectory() + "cowatch-server-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        directory = base + "/attachments"
        try? FileManager.default.removeItem(atPath: directory)
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CowatchError(.ioError, "cannot create the attachment store \(directory): \(error)")
        }
    }

    static func isID(_ id: String) -> Bool {
        id.utf8.count == 64 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The complete content's path.
    public func path(of id: String) -> String {
        precondition(Self.isID(id))
        return directory + "/" + id
    }

    /// The partial upload's path.
    public func partialPath(of id: String) -> String { path(of: id) + ".part" }

    /// Bytes kept of an interrupted upload of `id` (0 when none).
    public func partialSize(of id: String) -> Int {
        var info = stat()
        return stat(partialPath(of: id), &info) == 0 ? Int(info.st_size) : 0
    }

    /// Turns a verified partial upload into the content.
    public func commit(_ id: String) throws(CowatchError) {
        guard rename(partialPath(of: id), path(of: id)) == 0 else {
            throw CowatchError(.ioError, "cannot store \(path(of: id)): \(String(cString: strerror(errno)))")
        }
    }

    /// Deletes the content and any partial upload of `id`.
    public func delete(_ id: String) {
        unlink(path(of: id))
        unlink(partialPath(of: id))
    }

    /// Removes the whole store (a server shutting down with a temporary one).
    public func removeAll() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
