import CowatchCore
import CowatchNet
import Foundation

/// The invite link to this daemon's room: `cowatch://HOST:PORT/ROOM?secret=…&fp=sha256:…`.
extension RoomSession {
    /// The server's key as verified on the current link, else the pinned one.
    var serverFingerprint: CertificateFingerprint? {
        coordinator.serverFingerprint.flatMap(CertificateFingerprint.init(text:)) ?? room.fingerprint
    }

    /// The link a friend pastes into `cowatchd --join`. `host` names the server's address as
    /// friends reach it; default: the address we joined, or when hosting the router's outside
    /// address once the port is mapped (else the address we listen on; this machine's first
    /// IPv4 address when that is every address), with the machine's global IPv6, LAN and VPN
    /// addresses as alternates (`alt=`). It carries the room secret: give it to friends only.
    /// Errors: `invalid-invite` when it cannot be made (TLS on, key not known yet).
    func invite(host: String?) throws(CowatchError) -> Invite {
        let hosting = room.hostPort != nil
        var port = room.hostPort ?? room.serverPort
        var address = host ?? (hosting ? room.hostAddress ?? "0.0.0.0" : room.serverHost)
        var alternates: [Endpoint] = []
        let listensEverywhere = address == "0.0.0.0" || address == "::"
        if listensEverywhere || (hosting && host == nil && address == "127.0.0.1" && room.hostAddress == nil) {
            // An address friends can use: the router's outside one when it forwards our port,
            // then this machine's own (see the README's "Hosting from home").
            // One read of the interfaces for the whole invite.
            let interfaces = LocalNetwork.addresses()
            let lan = LocalNetwork.firstIPv4(of: interfaces)?.description
            if hosting, host == nil, let outside = reachability?.publicAddress {
                address = outside.description
                if case .mapped(let mapping)? = reachability { port = mapping.externalPort }
            } else {
                address = lan ?? ProcessInfo.processInfo.hostName
            }
            if hosting, host == nil, let hostPort = room.hostPort {
                // In this order, as long as there is room: the IPv6 address the router opened
                // (friends with IPv6), the LAN address (friends at home), other global IPv6
                // addresses, then VPN addresses (friends in the same Tailscale or WireGuard).
                let pinholed = reachabilityIPv6?.publicAddress.map { [$0.description] } ?? []
                let candidates = pinholed + (lan.map { [$0] } ?? []) + LocalNetwork.globalIPv6(of: interfaces).map(\.description)
                    + vpnNames(interfaces)
                for candidate in candidates where candidate != address && !alternates.contains(where: { $0.host == candidate }) {
                    alternates.append(Endpoint(host: candidate, port: hostPort))
                }
            }
        }
        let fingerprint = room.tls ? serverFingerprint : nil
        guard !room.tls || fingerprint != nil else {
            throw CowatchError(.invalidInvite, "the server's key is not known yet: wait until this daemon has joined")
        }
        var invite = Invite(
            host: address, port: port, room: room.room, secret: room.secret?.text, fingerprint: fingerprint, tls: room.tls)
        invite.alternates = Array(alternates.prefix(Invite.maxAlternates))
        // Checked by the parser friends will use.
        return try Invite.parse(invite.text)
    }

    /// Addresses friends in the same VPN use: Tailscale's MagicDNS name (asked at start, see
    /// `RoomSettings.tailscaleName`) in place of its 100.x address, and WireGuard addresses.
    func vpnNames(_ interfaces: [LocalNetwork.InterfaceAddress]) -> [String] {
        LocalNetwork.vpnAddresses(of: interfaces).map { entry in
            if entry.interface.hasPrefix("tailscale"), entry.address.isIPv4, let name = room.tailscaleName { return name }
            return entry.address.description
        }.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
    }

    /// `get_invite`'s reply: the link, and when hosting, whether friends can reach it.
    /// Errors: as `invite(host:)`.
    func inviteReply(host: String?) throws(CowatchError) -> InviteReply {
        InviteReply(invite: try invite(host: host).text, reachability: reachabilityStatus())
    }

    /// Hosting: what the port mapper found. The first settled answer is said to the person in
    /// two lines (can friends reach this machine, and what to do if not), then the invite follows.
    ///
    /// Threading: actor-isolated.
    func reachabilityChanged(_ new: Reachability) {
        let first = reachability == nil || reachability == .checking
        reachability = new
        guard new != .checking, let port = room.hostPort else { return }
        let lines = [new.summary(port: port)] + (new.advice.map { ["what to do: " + $0] } ?? [])
        if first, isatty(STDOUT_FILENO) == 1 || isatty(STDERR_FILENO) == 1 {
            FileHandle.standardOutput.write(Data(("\ncowatchd: " + lines.joined(separator: "\ncowatchd: ") + "\n").utf8))
        } else {
            logger.warning("\(lines.joined(separator: "; "))")
        }
        if !first { invitePrinted = false }
        announceInvite()
    }

    /// Hosting: what the router said of an IPv6 pinhole for our port (logged on each change).
    ///
    /// Threading: actor-isolated.
    func reachabilityIPv6Changed(_ new: Reachability) {
        guard new != .checking, new != reachabilityIPv6, let port = room.hostPort else { return }
        reachabilityIPv6 = new
        let line = new.reachable ? new.summary(port: port) : "IPv6: " + new.summary(port: port)
        logger.warning("\(line)")
        // An invite already given keeps working; a new one names the opened address first.
    }

    /// The `reachability` object of `get_status` and `get_invite` (hosting only, else nil):
    /// state, the address friends use, and the person's lines.
    func reachabilityStatus() -> ReachabilityStatus? {
        guard let port = room.hostPort else { return nil }
        let known = reachability ?? (room.portMapping == .off ? .notAsked : .checking)
        return ReachabilityStatus(known, ipv6: reachabilityIPv6, port: port)
    }

    /// Once joined as the host: the invite goes to a 0600 file in the state directory, and to the
    /// terminal when a person is looking (stdout or stderr a terminal), last and on its own
    /// lines; otherwise the log says where the file is (never the invite: it holds the secret).
    func announceInvite() {
        guard room.hostPort != nil, !invitePrinted, isJoined else { return }
        // Wait for the router's answer: the invite should name the address friends can reach.
        if room.portMapping != .off, reachability == nil || reachability == .checking { return }
        guard let invite = try? invite(host: nil) else { return }
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
