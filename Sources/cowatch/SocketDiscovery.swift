import CowatchClient
import CowatchCore
import Foundation

/// A bare `cowatch pause` when the login name's socket does not exist: like `mpv`'s habit of
/// acting on the one player there is, use the only daemon running in the default directory, and
/// list them when there are several (`several-daemons`) rather than guess.
enum SocketDiscovery {
    static func resolve(default login: String, environment: [String: String]) throws(CowatchError) -> String {
        if FileManager.default.fileExists(atPath: login) { return login }
        let directory = ControlSocketPath.defaultDirectory(environment: environment)
        // A directory someone else could have made is not searched (unsafe-path), nor a missing one.
        do {
            try ControlSocketDirectory.verify(socketPath: login, environment: environment)
        } catch {
            return login
        }
        let running = daemons(in: directory)
        switch running.count {
        case 0:
            return login
        case 1:
            return running[0].path
        default:
            let names = running.map(\.name).joined(separator: ", ")
            throw CowatchError(
                .severalDaemons,
                "\(running.count) daemons run in \(directory) (several-daemons): \(names); choose one with --name NAME")
        }
    }

    /// The sockets in `directory` on which a cowatchd answers (an mpv IPC socket kept there does not
    /// answer `get_status` with a name), by the name `--name` takes to reach them.
    static func daemons(in directory: String) -> [(name: String, path: String)] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return entries.filter { $0.hasSuffix(".sock") }.sorted().compactMap { entry in
            let path = directory + "/" + entry
            guard let client = try? ControlClient(path: path),
                let data = try? client.request(.getStatus, timeout: 2), (try? PlayerStatus(json: data)) != nil
            else { return nil }
            return (String(entry.dropLast(5)), path)
        }
    }
}
