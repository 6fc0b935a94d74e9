import CowatchClient
import CowatchCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Makes the control socket's path ready to bind, or explains why it cannot be.
///
/// Creates the directory (mode 0700) when missing. A socket file whose daemon is alive means
/// another `cowatchd` owns the path: refuse (`already-running`). A socket file nobody answers on
/// is stale and removed. Anything else at the path (a regular file, say) is never deleted: refuse.
enum ControlSocketClaim {
    static func claim(path: String) throws(CowatchError) {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty && !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw CowatchError(.invalidConfiguration, "cannot create \(directory): \(error.localizedDescription)")
            }
        }
        var info = stat()
        guard lstat(path, &info) == 0 else { return }  // nothing there
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw CowatchError(.invalidConfiguration, "\(path) exists and is not a socket; not touching it")
        }
        if ControlClient.isListening(path: path) {
            throw CowatchError(.alreadyRunning, "another cowatchd is running on \(path)")
        }
        unlink(path)
    }
}
