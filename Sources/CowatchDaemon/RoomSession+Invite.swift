import CowatchCore
import Foundation

/// The invite link to this daemon's room: `cowatch://HOST:PORT/ROOM?secret=…&fp=sha256:…`.
extension RoomSession {
    /// The server's key as verified on the current link, else the pinned one.
    var serverFingerprint: CertificateFingerprint? {
        coordinator.serverFingerprint.flatMap(CertificateFingerprint.init(text:)) ?? room.fingerprint
    }

    /// The link a friend pastes into `cowatchd --join`. `host` names the server's address as
    /// friends reach it; default: the address we joined, or when hosting the address we listen
    /// on (this machine's name when that is every address). It carries the room secret: give it
    /// to friends only. Errors: `invalid-invite` when it cannot be made (TLS on, key not known yet).
    func invite(host: String?) throws(CowatchError) -> Invite {
        let hosting = room.hostPort != nil
        let port = room.hostPort ?? room.serverPort
        var address = host ?? (hosting ? room.hostAddress ?? "0.0.0.0" : room.serverHost)
        if address == "0.0.0.0" || address == "::" || (hosting && host == nil && address == "127.0.0.1" && room.hostAddress == nil) {
            address = ProcessInfo.processInfo.hostName
        }
        let fingerprint = room.tls ? serverFingerprint : nil
        guard !room.tls || fingerprint != nil else {
            throw CowatchError(.invalidInvite, "the server's key is not known yet: wait until this daemon has joined")
        }
        let invite = Invite(
            host: address, port: port, room: room.room, secret: room.secret?.text, fingerprint: fingerprint, tls: room.tls)
        // Checked by the parser friends will use.
        return try Invite.parse(invite.text)
    }
}
