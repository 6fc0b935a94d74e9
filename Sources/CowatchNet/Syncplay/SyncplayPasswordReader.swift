import CowatchCore
import Foundation

/// Reads a Syncplay password file: one line, checked like a room secret file (a regular file of
/// this user that nobody else may read), without its line break.
///
/// Threading: any thread (blocking reads). Errors: `invalid-configuration` (missing, unreadable,
/// empty, not one clean line), `unsafe-path` (another user's file, or one others may read).
public enum SyncplayPasswordReader {
    public static func read(path: String, what: String) throws(CowatchError) -> String {
        var bytes = try SecretFileRead.checkedBytes(path: path, limit: 1024, what: what)
        defer { for index in bytes.indices { bytes[index] = 0 } }
        while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
        guard bytes.count <= 1024, !bytes.isEmpty, let text = String(validating: bytes, as: UTF8.self), ControlCharacters.isClean(text)
        else {
            throw CowatchError(.invalidConfiguration, "\(what) \(path) must hold one line of 1–1024 bytes without control characters")
        }
        return text
    }
}
