import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Issue 24: Cowatch's Syncplay protocol code (codec and client machine) against the real
/// `syncplay-server` from Debian (1.6.9), two participants in one room.
@Suite(
    "Syncplay: Cowatch's protocol code against a real syncplay-server", .realProcesses,
    .enabled(if: SyncplayServerProcess.binary != nil, "syncplay-server is not installed: `make test-deps` installs it"))
struct SyncplayServerTests {
    @Test("join (plaintext, said), the user list, play, seek, pause and chat reach the other with who did it")
    func twoPeers() async throws {
        let server = try await SyncplayServerProcess.start()
        let alice = try SyncplayTestPeer(port: server.port, .init(username: "alice", room: "evening"))
        #expect(try await alice.pump(for: 15) { $0.machine.phase == .joined }, "\(String(describing: alice.failure))\n\(server.log)")
        #expect(alice.saidPlaintext, "a server without TLS must be said")
        #expect(alice.motd?.contains(server.motd) == true, "another server answered: \(String(describing: alice.motd))")
        let bob = try SyncplayTestPeer(port: server.port, .init(username: "bob", room: "evening"))
        #expect(try await bob.pump(for: 15) { $0.machine.phase == .joined })
        #expect(try await alice.pump(for: 10) { $0.notices.contains(.joined("bob")) }, "\(alice.notices)")
        #expect(try await alice.pump(for: 10) { peer in Set(peer.users.map(\.username)) == ["alice", "bob"] }, "\(alice.users)")

        // Both hear the room's state each second, and answer it.
        #expect(try await alice.pump(for: 5) { $0.machine.timeline != nil })
        #expect(try await bob.pump(for: 5) { $0.machine.timeline != nil })

        // alice plays: bob hears it, and his timeline runs.
        try alice.change(paused: false, position: 0)
        #expect(try await bob.pump(for: 10) { $0.notices.contains { if case .played("alice", _) = $0 { true } else { false } } }, "\(bob.notices)")
        #expect(bob.machine.timeline?.paused == false)

        // bob seeks to 30 s: alice hears it and is there.
        try await alice.pump(for: 1.5)
        try bob.change(paused: false, position: 30, seek: true)
        #expect(try await alice.pump(for: 10) { $0.notices.contains { if case .sought("bob", let to) = $0 { abs(to - 30) < 1 } else { false } } }, "\(alice.notices) \(String(describing: alice.failure)) \(String(describing: bob.failure))\n\(server.log)")
        let aliceAt = alice.machine.roomPosition(at: monotonicNow()) ?? -1
        #expect(aliceAt > 29.5 && aliceAt < 33, "alice's room position \(aliceAt)")

        // alice pauses: bob hears it, paused where she paused.
        try await bob.pump(for: 1.5)
        let pauseAt = alice.machine.roomPosition(at: monotonicNow()) ?? 0
        try alice.change(paused: true, position: pauseAt)
        #expect(try await bob.pump(for: 10) { $0.notices.contains { if case .paused("alice", let at) = $0 { abs(at - pauseAt) < 0.5 } else { false } } }, "\(bob.notices)")
        #expect(bob.machine.timeline?.paused == true)

        // Chat, both ways.
        try alice.chat("hello from Cowatch")
        #expect(try await bob.pump(for: 10) { $0.chats.contains { $0.from == "alice" && $0.message == "hello from Cowatch" } })
        try bob.chat("and back")
        #expect(try await alice.pump(for: 10) { $0.chats.contains { $0.from == "bob" && $0.message == "and back" } })

        // The server's clock (its wall clock) is placed against ours from the stamps it echoed:
        // within a few milliseconds of what this machine says.
        let now = monotonicNow()
        let offset = try #require(alice.machine.serverClock.estimate(atLocal: now)).offset
        let truth = Date().timeIntervalSince1970 - monotonicNow()
        #expect(abs(offset - truth) < 0.02, "estimated \(offset), wall minus monotonic \(truth)")
        #expect(alice.badLines.isEmpty && bob.badLines.isEmpty, "\(alice.badLines) \(bob.badLines)")
        #expect(alice.failure == nil && bob.failure == nil)
    }

    @Test("a server password: the right one joins (as MD5, Syncplay's scheme); a wrong one is refused with the server's words")
    func password() async throws {
        let server = try await SyncplayServerProcess.start(password: "open sesame")
        let right = try SyncplayTestPeer(port: server.port, .init(username: "alice", room: "r", passwordHash: SyncplayPassword.hash("open sesame")))
        #expect(try await right.pump(for: 15) { $0.machine.phase == .joined }, "\(String(describing: right.failure))")
        let wrong = try SyncplayTestPeer(port: server.port, .init(username: "mallory", room: "r", passwordHash: SyncplayPassword.hash("guess")))
        try await wrong.pump(for: 15) { $0.failure != nil }
        #expect(wrong.failure?.code == .authFailed, "\(String(describing: wrong.failure))")
        #expect(wrong.machine.phase == .ended)
    }

    @Test("a server without TLS is refused when TLS is required")
    func requireTLS() async throws {
        let server = try await SyncplayServerProcess.start()
        let strict = try SyncplayTestPeer(port: server.port, .init(username: "alice", room: "r", requireTLS: true))
        try await strict.pump(for: 15) { $0.failure != nil }
        #expect(strict.failure?.code == .tlsFailed, "\(String(describing: strict.failure))")
    }

    @Test("a managed room: made with a password, joined by name; a member's pause is undone, a controller's counts; the password typed with the name claims control")
    func managedRoom() async throws {
        let server = try await SyncplayServerProcess.start(salt: "COWATCHTESTSALT")
        let alice = try SyncplayTestPeer(port: server.port, .init(username: "alice", room: "film"))
        #expect(try await alice.pump(for: 15) { $0.machine.phase == .joined })
        try alice.manage(password: "AB-123-456")
        #expect(try await alice.pump(for: 10) { $0.notices.contains(.controller("alice", true)) }, "\(alice.notices)")
        let room = try #require(alice.managed?.room)
        #expect(SyncplayManagedRoom.parse(room)?.room == room && room.hasPrefix("+film:"), "\(room)")
        #expect(alice.machine.room == room)

        let bob = try SyncplayTestPeer(port: server.port, .init(username: "bob", room: room))
        #expect(try await bob.pump(for: 15) { $0.machine.phase == .joined && $0.machine.timeline != nil })
        try await alice.pump(for: 1.5) { $0.machine.timeline != nil }
        try alice.change(paused: false, position: 0)
        #expect(try await bob.pump(for: 10) { $0.notices.contains { if case .played("alice", _) = $0 { true } else { false } } }, "\(bob.notices)")

        // bob may not control the room: the server puts him back, and alice plays on.
        try await bob.pump(for: 1.5)
        let at = bob.machine.roomPosition(at: monotonicNow()) ?? 0
        try bob.change(paused: true, position: at)
        #expect(try await bob.pump(for: 10) { $0.machine.timeline?.paused == false }, "bob was not put back: \(String(describing: bob.machine.timeline))")
        try await alice.pump(for: 3)
        #expect(!alice.notices.contains { if case .paused("bob", _) = $0 { true } else { false } }, "\(alice.notices)")
        #expect(alice.machine.timeline?.paused == false)

        // carol types the room with its password: she controls it too.
        let carol = try SyncplayTestPeer(port: server.port, .init(username: "carol", room: room + ":AB-123-456"))
        #expect(try await carol.pump(for: 15) { $0.notices.contains(.controller("carol", true)) }, "\(carol.notices) \(String(describing: carol.failure))")
        #expect(alice.failure == nil && bob.failure == nil && carol.failure == nil,
            "\(String(describing: alice.failure)) \(String(describing: bob.failure)) \(String(describing: carol.failure))")
    }
}
