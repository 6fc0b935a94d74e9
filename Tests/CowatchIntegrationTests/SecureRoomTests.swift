import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// The room link as friends use it over the internet: TLS with the server's key pinned by the
/// invite link, a room secret, and a server restart in the middle. Real server, real daemons.
@Suite("A secure room: TLS, invite links, room secrets", .serialized, .realProcesses)
struct SecureRoomTests {
    static let secret = "popcorn & rain at 8"

    /// Waits until a daemon that should be refused says so — it stays up, out of the room, with
    /// its player open — and returns why (the session's reason) and its stderr; then stops it.
    static func refused(_ daemon: DaemonProcess, timeout: Double = 20) async throws -> (String?, String) {
        defer { daemon.terminateInBackground() }
        try await daemon.awaitReady(timeout: timeout)
        let status = try await daemon.client().waitForStatus(timeout: timeout) { $0.room?.session == "invalidated" }
        #expect(daemon.process.isRunning, "\(daemon.name) stays up")
        return (status.room?.reason, daemon.stderr)
    }

    @Test("friends join through the invite line, play in sync, and carry on across a server restart; outsiders stay out")
    func inviteSecretRestart() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let room = try await DaemonRoom(media: media, room: "film", listeners: false, probes: true)
        let port = room.port
        let fingerprint = try #require(room.server.fingerprint)
        let invite = room.server.invite(room: "film", secret: Self.secret)
        for name in ["alice", "bob"] { try await room.add(name, arguments: ["--join", invite], roomFlags: false, waitJoined: false) }
        let (clients, probes) = (room.clients, room.probes)
        try await room.waitForParticipants(2)

        // An outsider who knows the address and the room name, but not the secret.
        let outsider = try await DaemonProcess(
            name: "mallory", media: media, extraArguments: ["--join", "127.0.0.1:\(port)", "--room", "film", "--no-osd"],
            waitUntilReady: false)
        let (code, stderr) = try await Self.refused(outsider)
        #expect(code == "auth-failed")
        #expect(stderr.contains("secret"), "\(stderr)")
        // One with a wrong secret.
        let guesser = try await DaemonProcess(
            name: "guess", media: media, extraArguments: ["--join", room.server.invite(room: "film", secret: "not the secret"), "--no-osd"],
            waitUntilReady: false)
        #expect(try await Self.refused(guesser).0 == "auth-failed")
        // One whose invite pins another key (a server in the middle would have another key).
        // Its first key character changed: the last one of 43 carries only 4 bits, so changing it can
        // make a key that is not canonical base64url (refused as invalid, never reaching the server).
        let first = fingerprint.index(fingerprint.startIndex, offsetBy: "sha256:".count)
        let wrongKey = String(fingerprint[..<first]) + (fingerprint[first] == "A" ? "B" : "A") + fingerprint[fingerprint.index(after: first)...]
        let pinned = "cowatch://127.0.0.1:\(port)/film?secret=x12345678&fp=\(wrongKey)"
        let misled = try await DaemonProcess(name: "misled", media: media, extraArguments: ["--join", pinned, "--no-osd"], waitUntilReady: false)
        // Until it says why (a loaded machine takes a while to start a daemon: beside the whole suite
        // in parallel once more than 20 s), 60 s at most.
        var misledStatus = try? await misled.client().request(.getStatus)
        func toldWhy() -> Bool {
            misled.stderr.contains("certificate") || misledStatus?["room"]?["reason"]?.stringValue == "certificate-mismatch"
        }
        let patience = monotonicNow() + 60
        while !toldWhy(), monotonicNow() < patience {
            await pause(0.25)
            misledStatus = try? await misled.client().request(.getStatus)
        }
        let misledState = misledStatus?["room"]?["session"]?.stringValue
        #expect(misledState != "joined")
        #expect(toldWhy(), "misled daemon: status \(String(describing: misledStatus?["room"])); stderr \(misled.stderr)")
        try await room.waitForParticipants(2)

        try await clients[0].request(.seek(seconds: 20, mode: .absolute))
        try await clients[1].request(.play)
        await pause(2)
        let skews = await SkewSampler(clients: probes).skews(count: 20, interval: 0.05, rate: 1)
        #expect((skews.max() ?? .infinity) < 0.050, "skew \(skews.max() ?? -1)")
        let before = try await clients[0].status().position ?? 0

        // Restart: same port, same state (certificate, token key, the room's verifier).
        try await room.restartServer(downFor: 0.5)
        #expect(room.server.fingerprint == fingerprint)
        // The outsider comes back first, with a resume of its own: it cannot get in at all.
        let racer = try await DaemonProcess(
            name: "racer", media: media, extraArguments: ["--join", "127.0.0.1:\(port)", "--room", "film", "--no-osd"],
            waitUntilReady: false)
        #expect(try await Self.refused(racer).0 == "auth-failed")
        try await room.waitForParticipants(2, timeout: 15)
        await pause(2)
        for client in clients {
            let status = try await client.status()
            #expect(!status.paused)
            #expect((status.position ?? 0) > before + 2, "\(status.name) at \(status.position ?? -1), was at \(before)")
        }
        let after = await SkewSampler(clients: probes).skews(count: 20, interval: 0.05, rate: 1)
        #expect((after.max() ?? .infinity) < 0.050)
    }

    @Test("the host hands out an invite line; a friend joins with it alone (TLS pinned, secret)")
    func hostInvite() async throws {
        let directory = DaemonProcess.makeDirectory()
        let secretFile = try writeSecretFile(Self.secret, in: directory)
        let room = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: "den", venue: .hostedByFirst, listeners: false)
        try await room.add("hana", arguments: ["--room-secret-file", secretFile], waitJoined: false)
        let (hostClient, port) = (room.clients[0], room.port)
        try await room.waitForParticipants(1)
        let reply = try await hostClient.request(.getInvite(host: nil))
        let line = try #require(reply["invite"]?.stringValue)
        let invite = try Invite.parse(line)
        #expect(invite.host == "127.0.0.1" && invite.port == port && invite.room == "den")
        #expect(invite.secret == Self.secret && invite.fingerprint != nil && invite.tls)
        try await room.add("finn", arguments: ["--join", line], roomFlags: false, waitJoined: false)
        try await room.waitForParticipants(2)
        // The friend's own invite names the same room, key and secret.
        let again = try Invite.parse(try #require(try await room.daemons[1].client().request(.getInvite(host: nil))["invite"]?.stringValue))
        #expect(again == invite)
    }

    @Test("cowatchd --host serves a certificate it is given (as with Let's Encrypt); invites pin its key")
    func givenCertificate() async throws {
        let directory = DaemonProcess.makeDirectory()
        let certificate = directory + "/fullchain.pem", key = directory + "/privkey.pem", spki = directory + "/spki.der"
        for arguments in [
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", certificate,
             "-days", "30", "-subj", "/CN=watch.example"],
            ["x509", "-in", certificate, "-pubkey", "-noout", "-out", directory + "/pub.pem"],
            ["pkey", "-pubin", "-in", directory + "/pub.pem", "-outform", "DER", "-out", spki],
        ] {
            let openssl = try await run(executable: "/usr/bin/openssl", arguments)
            #expect(openssl.status == 0, "\(openssl.stderr)")
        }
        chmod(key, 0o600)
        let expected = CertificateFingerprint(spkiDER: try Data(contentsOf: URL(fileURLWithPath: spki)))
        let room = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: "le", venue: .hostedByFirst, listeners: false)
        try await room.add("lee", arguments: ["--tls-cert", certificate, "--tls-key", key], waitJoined: false)
        try await room.waitForParticipants(1)
        let invite = try Invite.parse(try #require(try await room.clients[0].request(.getInvite(host: nil))["invite"]?.stringValue))
        #expect(invite.fingerprint == expected)
        try await room.add("max", arguments: ["--join", invite.text], roomFlags: false, waitJoined: false)
        try await room.waitForParticipants(2)
    }

    @Test("a daemon that expects TLS refuses a plaintext server clearly, and --no-tls is loud")
    func noSilentPlaintext() async throws {
        let server = try await ServerProcess.start(extraArguments: ["--no-tls"])
        let log = (try? String(contentsOfFile: server.logPath, encoding: .utf8)) ?? ""
        #expect(log.contains("WARNING"))
        let media = try await TestMedia.file(.audioVideo)
        let daemon = try await DaemonProcess(name: "tina", media: media, extraArguments: ["--join", server.address, "--room", "r", "--no-osd"])
        await pause(3)
        let status = try await daemon.client().request(.getStatus)
        #expect(status["room"]?["session"]?.stringValue != "joined")
        #expect(daemon.stderr.contains("TLS") || daemon.stderr.contains("tls"), "\(daemon.stderr)")
    }
}
