import CowatchCore
import Foundation

/// The session token kept across restarts (`SessionTokenFile`): a daemon that quits or is killed
/// comes back as the same person, with its name and role, instead of finding its name "taken by
/// someone with a role" (its own earlier run). `cowatch forget ROOM` drops it.
extension RoomSession {
    /// Which kept token is ours: this server (its certificate key, or its address without TLS),
    /// this room, this name.
    private func tokenKey(fingerprint: String) -> SessionTokenFile.Key {
        SessionTokenFile.Key(
            server: fingerprint.isEmpty ? "\(room.serverHost):\(room.serverPort)" : fingerprint, room: room.room,
            name: configuration.name)
    }

    private var tokenFile: SessionTokenFile? {
        (try? SessionTokenFile.defaultPath(environment: ProcessInfo.processInfo.environment)).map(SessionTokenFile.init)
    }

    /// Before a hello: the token an earlier run of ours was given here, if any. The host holds its
    /// own (signed by its server) and needs none.
    func adoptKeptToken(fingerprint: String) {
        guard room.hostToken == nil, room.syncplay == nil, coordinator.token == nil, let file = tokenFile else { return }
        do {
            if let kept = try file.token(for: tokenKey(fingerprint: fingerprint)) { coordinator.adoptToken(kept) }
        } catch {
            logger.warning("cannot read the kept session tokens: \(error.message)")
        }
    }

    /// After a welcome: keeps the token the server gave us (written only when it changed).
    func keepToken(fingerprint: String) {
        // A Syncplay room has no tokens: the bridge's welcome carries a placeholder.
        guard room.hostToken == nil, room.syncplay == nil, let token = coordinator.token, let file = tokenFile else { return }
        do {
            try file.save(token, for: tokenKey(fingerprint: fingerprint))
        } catch {
            logger.warning("cannot keep the session token (a restart will not get this name back): \(error.message)")
        }
    }
}
