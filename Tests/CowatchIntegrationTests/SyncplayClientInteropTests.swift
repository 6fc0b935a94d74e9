import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Issue 24, part 1, with Syncplay itself on the other side: a Cowatch daemon and Debian's own
/// Syncplay client (`syncplay --no-gui` driving a headless mpv) in a room of Debian's
/// `syncplay-server`. Each side's actions are made the way its person makes them (the daemon's
/// control socket; the Syncplay console and its mpv), and each player is read through its own
/// mpv IPC socket.
@Suite(
    "Syncplay: a Cowatch daemon beside Syncplay's own client", .serialized, .realProcesses,
    .enabled(if: SyncplayServerProcess.binary != nil && SyncplayClientProcess.binary != nil,
        "syncplay-server or syncplay (with mpv) is not installed: `make test-deps` installs them"))
struct SyncplayClientInteropTests {
    /// Waits until Syncplay's client has its file open in its player and has listed the room:
    /// a change made before that races the client's own file load, which it reports as its
    /// user's ("carol unpaused" where alice played; seen on a loaded CI machine).
    static func settled(_ client: SyncplayClientProcess, at position: () async throws -> Double) async throws {
        #expect(await eventually(timeout: 30) { ((try? await position()) ?? -1) >= 0 && client.log.contains("In room") }, "\(client.log)")
        await pause(1)
    }

    @Test("pause, play, seek, chat and readiness each way between a Cowatch daemon and a Syncplay client")
    func eachWay() async throws {
        let server = try await SyncplayServerProcess.start()
        let film = try await TestMedia.file(.audioVideo)
        let room = try await DaemonRoom(names: ["alice"], media: film, room: "mixed", venue: .syncplay(port: server.port), probes: true)
        defer { room.stopInBackground() }
        let alice = room.clients[0]
        let carol = try SyncplayClientProcess(name: "carol", port: server.port, room: "mixed", media: film)
        defer { carol.terminateInBackground() }
        let carolPlayer = try await carol.playerProbe()
        _ = try await room.expectNotices("join", actor: "carol", timeout: 30)
        func carolPaused() async throws -> Bool? { try await carolPlayer.request(.getProperty("pause")).boolValue }
        func carolAt() async throws -> Double { try await carolPlayer.request(.getProperty("time-pos")).numberValue ?? -1 }
        try await Self.settled(carol, at: carolAt)

        // alice plays: Syncplay's client starts, and says who.
        try await alice.request(.play)
        #expect(try await eventually(timeout: 15) { try await carolPaused() == false }, "\(carol.log)")
        #expect(await eventually(timeout: 10) { carol.log.contains("alice unpaused") }, "\(carol.log)")
        let playing = await SkewSampler(clients: [room.probes[0], carolPlayer]).skews(count: 10, interval: 0.1, rate: 1)
        print("syncplay-interop: skew daemon↔Syncplay client after alice's play: max \(playing.max() ?? .nan) s")

        // carol pauses at her console: alice hears who, and stops.
        carol.say("p")
        _ = try await room.expectNotices("pause", actor: "carol", timeout: 15)
        #expect(try await eventually(timeout: 5) { try await alice.status().paused })
        let pausedAt = try await carolAt()
        #expect(abs((try await alice.status().position ?? -1) - pausedAt) < 0.5, "alice vs carol's paused position \(pausedAt)")

        // carol seeks in her player: alice goes there, and hears who.
        _ = try await carolPlayer.request([.string("seek"), .number(40), .string("absolute")])
        let seek: [ControlEvent]
        do {
            seek = try await room.expectNotices("seek", actor: "carol", timeout: 15)
        } catch {
            // Once, on a loaded full run: no notice in 15 s. Both sides' words say which hop lost it.
            throw TestFailure("\(error)\ncarol's client:\n\(carol.log.suffix(3000))\nalice's daemon:\n\(room.daemons[0].stderr.suffix(3000))")
        }
        #expect(abs((seek[0].fields["to"]?.numberValue ?? -1) - 40) < 1.5, "\(seek)")
        #expect(try await eventually(timeout: 10) { abs((try await alice.status().position ?? -1) - 40) < 1.5 })

        // alice seeks to 50 s (the film is 75 s long) and plays: Syncplay's client follows, saying who.
        try await alice.request(.seek(seconds: 50, mode: .absolute))
        #expect(try await eventually(timeout: 15) { abs(try await carolAt() - 50) < 1.5 }, "\(carol.log)")
        #expect(await eventually(timeout: 10) { carol.log.contains("alice jumped") }, "\(carol.log)")
        try await alice.request(.play)
        #expect(try await eventually(timeout: 15) { try await carolPaused() == false }, "\(carol.log)")

        // Chat each way.
        _ = try await alice.request(.chat("hello from Cowatch"))
        #expect(await eventually(timeout: 10) { carol.log.contains("hello from Cowatch") }, "\(carol.log)")
        carol.say("ch hello from Syncplay")
        let line = try #require(try await room.listeners[0].waitForEvent(named: "chat", timeout: 15) {
            $0.fields["text"]?.stringValue == "hello from Syncplay"
        })
        #expect("\(line.fields)".contains("carol"), "\(line)")

        // Readiness each way: carol toggles hers (alice hears it); alice's shows in carol's user list.
        carol.say("t")
        _ = try await room.expectNotices("ready", actor: "carol", timeout: 15)
        _ = try await alice.request(.setReady(true))
        // Its console lists "(Ready) <alice> is playing:" when asked (`l`).
        #expect(await eventually(timeout: 10) {
            carol.say("l")
            await pause(0.5)
            return carol.log.split(separator: "\n").contains { $0.contains("(Ready) <alice>") }
        }, "\(carol.log)")
    }

    @Test("Syncplay's own client in a Cowatch room (cowatch-server --syncplay-listen) beside two daemons: pause, play, seek, chat and readiness each way")
    func guestInCowatchRoom() async throws {
        let film = try await TestMedia.file(.audioVideo)
        let room = try await DaemonRoom(
            names: ["alice", "bob"], media: film, room: "mixed", venue: .server(arguments: ["--syncplay-listen", "127.0.0.1:0"]), probes: true)
        defer { room.stopInBackground() }
        let port = try #require(room.server.syncplayPort)
        let (alice, bob) = (room.clients[0], room.clients[1])
        let carol = try SyncplayClientProcess(name: "carol", port: port, room: "mixed", media: film)
        defer { carol.terminateInBackground() }
        let carolPlayer = try await carol.playerProbe()
        _ = try await room.expectNotices("join", actor: "carol", timeout: 30)
        #expect(await eventually(timeout: 10) { carol.log.contains("Cowatch room") }, "the gateway's message of the day:\n\(carol.log)")
        #expect(!carol.log.contains("Traceback"), "\(carol.log)")
        #expect(try await eventually(timeout: 5) {
            try ParticipantsReply(json: try await bob.request(.getParticipants)).participants.map(\.name).contains("carol")
        })
        func carolPaused() async throws -> Bool? { try await carolPlayer.request(.getProperty("pause")).boolValue }
        func carolAt() async throws -> Double { try await carolPlayer.request(.getProperty("time-pos")).numberValue ?? -1 }
        try await Self.settled(carol, at: carolAt)

        // alice plays: Syncplay's client starts too, and says who.
        try await alice.request(.play)
        #expect(try await eventually(timeout: 15) { try await carolPaused() == false }, "\(carol.log)")
        #expect(await eventually(timeout: 10) { carol.log.contains("alice unpaused") }, "\(carol.log)")
        await pause(2)
        let playing = await SkewSampler(clients: [room.probes[0], carolPlayer]).skews(count: 10, interval: 0.1, rate: 1)
        print("syncplay-guest: skew daemon↔Syncplay client in a Cowatch room: max \(playing.max() ?? .nan) s")

        // carol pauses at her console: both daemons hear who, and stop near her frame.
        carol.say("p")
        _ = try await room.expectNotices("pause", actor: "carol", timeout: 15)
        for client in room.clients { #expect(try await eventually(timeout: 5) { try await client.status().paused }) }

        // carol seeks in her player: the daemons go there, and hear who.
        _ = try await carolPlayer.request([.string("seek"), .number(40), .string("absolute")])
        let seek: [ControlEvent]
        do {
            seek = try await room.expectNotices("seek", actor: "carol", timeout: 15)
        } catch {
            // Once, on a loaded full run: no notice in 15 s. Both sides' words say which hop lost it.
            throw TestFailure("\(error)\ncarol's client:\n\(carol.log.suffix(3000))\nalice's daemon:\n\(room.daemons[0].stderr.suffix(3000))")
        }
        #expect(abs((seek[0].fields["to"]?.numberValue ?? -1) - 40) < 1.5, "\(seek)")
        #expect(try await eventually(timeout: 10) { abs((try await bob.status().position ?? -1) - 40) < 1.5 })

        // bob seeks to 20 s and plays: Syncplay's client follows, saying who.
        try await bob.request(.seek(seconds: 20, mode: .absolute))
        #expect(try await eventually(timeout: 15) { abs(try await carolAt() - 20) < 1.5 }, "\(carol.log)")
        #expect(await eventually(timeout: 10) { carol.log.contains("bob jumped") }, "\(carol.log)")
        try await bob.request(.play)
        #expect(try await eventually(timeout: 15) { try await carolPaused() == false }, "\(carol.log)")

        // Chat each way.
        _ = try await alice.request(.chat("hello from Cowatch"))
        #expect(await eventually(timeout: 10) { carol.log.contains("<alice> hello from Cowatch") }, "\(carol.log)")
        carol.say("ch hello from Syncplay")
        let line = try #require(try await room.listeners[1].waitForEvent(named: "chat", timeout: 15) {
            $0.fields["text"]?.stringValue == "hello from Syncplay"
        })
        #expect("\(line.fields)".contains("carol"), "\(line)")

        // Readiness: carol toggles hers, the daemons hear it.
        carol.say("t")
        _ = try await room.expectNotices("ready", actor: "carol", timeout: 15)

        // Roles in Syncplay's words: the room's owner is listed as an operator; carol's claim with
        // a password fails, told how control is given here; made an operator by the owner, her
        // client says she is one. (Each listed file has a size: no KeyError in its OSD code.)
        let owners = try await alice.request(.getParticipants).arrayValue?.filter { $0["role"]?.stringValue == "owner" }
        let owner = try #require(owners?.first?["name"]?.stringValue)
        let ownerIndex = try #require(room.names.firstIndex(of: owner))
        #expect(await eventually(timeout: 10) {
            carol.say("l")
            await pause(0.5)
            return carol.log.split(separator: "\n").contains { $0.contains("(Operator)") && $0.contains("<\(owner)>") }
        }, "\(carol.log)")
        carol.say("a AB-123-456")
        #expect(await eventually(timeout: 10) {
            carol.log.contains("carol failed to identify as a room operator") && carol.log.contains("cowatch op carol")
        }, "\(carol.log)")
        _ = try await room.clients[ownerIndex].request(.setRole(name: "carol", role: .operator))
        #expect(await eventually(timeout: 10) { carol.log.contains("carol authenticated as a room operator") }, "\(carol.log)")
        #expect(!carol.log.contains("Traceback"), "\(carol.log)")
        #expect(room.daemons.allSatisfy { $0.process.isRunning })
    }
}
