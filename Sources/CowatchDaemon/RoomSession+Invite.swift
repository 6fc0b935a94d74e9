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
    /// on (this machine's first IPv4 address when that is every address). It carries the room secret: give it
    /// to friends only. Errors: `invalid-invite` when it cannot be made (TLS on, key not known yet).
    func invite(host: String?) throws(CowatchError) -> Invite {
        let hosting = room.hostPort != nil
        let port = room.hostPort ?? room.serverPort
        var address = host ?? (hosting ? room.hostAddress ?? "0.0.0.0" : room.serverHost)
        if address == "0.0.0.0" || address == "::" || (hosting && host == nil && address == "127.0.0.1" && room.hostAddress == nil) {
            // An address friends can use (a LAN address; see the README for hosting from home).
            address = MachineAddress.firstIPv4() ?? ProcessInfo.processInfo.hostName
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

    /// Once joined as the host: the invite goes to a 0600 file in the state directory, and to the
    /// terminal when a person is looking (stdout or stderr a terminal), last and on its own
    /// lines; otherwise the log says where the file is (never the invite: it holds the secret).
    func announceInvite() {
        guard room.hostPort != nil, !invitePrinted, let invite = try? invite(host: nil) else { return }
        invitePrinted = true
        let line = "cowatchd --join '\(invite.text)' --media FILM"
        var kept: String?
        do {
            kept = try StatePaths.writeStateFile(
                "invite-\(room.room).txt", contents: Array((line + "\n").utf8), environment: ProcessInfo.processInfo.environment)
        } catch {
            logger.warning("cannot keep the invite in a file: \(error.message)")
        }
        if isatty(STDOUT_FILENO) == 1 || isatty(STDERR_FILENO) == 1 {
            var text = "\ncowatchd: invite friends to room \(room.room): each runs\n\n    \(line)\n\n"
            if let kept { text += "(kept in \(kept); it holds the room's secret: give it to friends only)\n" }
            FileHandle.standardOutput.write(Data(text.utf8))
        } else if let kept {
            logger.warning("the invite for room \(room.room) is in \(kept) (it holds the room's secret: give it to friends only)")
        }
    }
}
