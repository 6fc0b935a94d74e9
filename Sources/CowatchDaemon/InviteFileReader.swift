import CowatchCore
import CowatchNet
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Reads an invite from a file or standard input (`--join-file PATH`, `-` for standard input),
/// so that the room's secret never sits on a command line where every local user's `ps` shows it.
///
/// The text may be the bare link or the line the host keeps (`cowatchd --join '…' --media FILM`);
/// the first `cowatch://` link in it is taken. A file holding a secret must be the user's own
/// and closed to others, as ssh wants of private keys.
///
/// Threading: any thread (blocking reads). Errors: `invalid-configuration` (missing, unreadable,
/// not a regular file, no link in it, too long), `unsafe-path` (another user's file, or one others
/// may read), and the invite's own `invalid-invite`.
public enum InviteFileReader {
    static let maxBytes = 8192

    public static func read(path: String) throws(CowatchError) -> String {
        let fromStandardInput = path == "-"
        let descriptor = fromStandardInput ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        let shown = fromStandardInput ? "standard input" : "invite file \(path)"
        guard descriptor >= 0 else {
            throw CowatchError(.invalidConfiguration, "cannot read \(shown): \(String(cString: strerror(errno)))")
        }
        defer { if !fromStandardInput { close(descriptor) } }
        var status = stat()
        if !fromStandardInput {
            guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
                throw CowatchError(.invalidConfiguration, "\(shown) is not a regular file")
            }
        }
        var bytes = try SecretFileRead.bytes(of: descriptor, limit: maxBytes, what: shown)
        defer { for index in bytes.indices { bytes[index] = 0 } }
        guard bytes.count <= maxBytes else { throw CowatchError(.invalidConfiguration, "\(shown) is longer than \(maxBytes) bytes") }
        guard let link = Invite.findLink(in: String(decoding: bytes, as: UTF8.self)) else {
            throw CowatchError(.invalidConfiguration, "\(shown) holds no invite link (cowatch://…)")
        }
        let invite = try Invite.parse(link)
        if invite.secret != nil, !fromStandardInput {
            guard status.st_uid == geteuid() || status.st_uid == 0 else {
                throw CowatchError(.unsafePath, "\(shown) holds a room secret and belongs to another user (uid \(status.st_uid))")
            }
            guard status.st_mode & 0o077 == 0 else {
                let octal = String(status.st_mode & 0o777, radix: 8)
                throw CowatchError(.unsafePath, "\(shown) holds a room secret and is open to other users (mode \(octal)): chmod 600 \(path)")
            }
        }
        return link
    }
}
