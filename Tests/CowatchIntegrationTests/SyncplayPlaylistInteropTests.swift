import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Issue 24, part 2, the playlist both ways: a Cowatch room's shared playlist in Debian's own
/// Syncplay client (its console: `ql` lists, `qs N` selects, `qd N` deletes, `qa NAME` adds),
/// which finds each entry by name in its media directory, as Syncplay users set it up.
extension SyncplayClientInteropTests {
    @Test("the room's playlist in Syncplay's own client: it loads the room's entries by name, follows the room's moves, and its choice and removal reach the room; a file the room lacks is refused")
    func playlistBothWays() async throws {
        let films = try await TestMedia.playlistFilms()
        let root = try makeTemporaryDirectory("cowatch-syncplay-playlist")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let names = [0: "ep1.mkv", 1: "ep2.mkv", 2: "ep3.mkv"]
        let aliceShelf = try Shelf(films, in: root, at: "alice", names: names)
        let carolShelf = try Shelf(films, in: root, at: "carol", names: names)
        let room = try await DaemonRoom(
            media: try await TestMedia.file(.audioVideo), room: "pl-mixed", venue: .server(arguments: ["--syncplay-listen", "127.0.0.1:0"]))
        defer { room.stopInBackground() }
        let port = try #require(room.server.syncplayPort)
        try await room.add("alice", arguments: aliceShelf.arguments)
        let alice = room.clients[0]
        let watch = PlaylistWatch(room)
        func aliceCurrent() async throws -> String? { try await watch.playlist(0).entries.first { $0.current }?.name }

        // alice lists her three films and starts the first, paused.
        _ = try await alice.request(.playlist(.setCountdown(0)))
        _ = try await alice.request(.playlist(.add(aliceShelf.sources([0, 1, 2]), next: false)))
        _ = try await alice.request(.playlist(.jump(1)))
        try await watch.until("alice on ep1.mkv", within: 20) { let now = try await aliceCurrent(); return now == "ep1.mkv" ? nil : "\(now ?? "-")" }
        try await alice.request(.pause)

        // carol comes with Syncplay, her copies in her media directory: she is shown the list and
        // plays the room's entry.
        let carol = try SyncplayClientProcess(
            name: "carol", port: port, room: "pl-mixed", media: carolShelf.paths[0]!, mediaDirectories: [carolShelf.folder])
        defer { carol.terminateInBackground() }
        let carolPlayer = try await carol.playerProbe()
        func carolFile() async -> String? { try? await carolPlayer.request(.getProperty("filename")).stringValue }
        func carolList() async -> String {
            carol.say("ql")
            await pause(0.5)
            return carol.log
        }
        _ = try await room.expectNotices("join", actor: "carol", timeout: 30)
        #expect(await eventually(timeout: 20) { await carolFile() == "ep1.mkv" }, "\(carol.log)")
        #expect(await eventually(timeout: 10) {
            let log = await carolList()
            return log.contains(" *\t1: ep1.mkv") && log.contains("\t2: ep2.mkv") && log.contains("\t3: ep3.mkv")
        }, "\(carol.log)")

        // alice moves the room on: carol's client loads ep2.mkv from her directory, and says who.
        _ = try await alice.request(.playlist(.next))
        #expect(await eventually(timeout: 20) { await carolFile() == "ep2.mkv" }, "\(carol.log)")
        #expect(carol.log.contains("alice changed the playlist selection"), "\(carol.log)")

        // carol chooses the third entry at her console: the room plays it (alice's player too).
        carol.say("qs 3")
        try await watch.until("the room on ep3.mkv, chosen by carol", within: 20) {
            let now = try await aliceCurrent()
            return now == "ep3.mkv" ? nil : "\(now ?? "-")"
        }
        #expect(await eventually(timeout: 20) { await carolFile() == "ep3.mkv" }, "\(carol.log)")

        // carol removes the first entry: the room's list loses it.
        carol.say("qd 1")
        try await watch.until("the room's list without ep1.mkv", within: 15) {
            let listed = try await watch.playlist(0).entries.compactMap(\.name)
            // Seen once in a loaded full run (not alone): carol's console and client log say what she sent.
            return listed == ["ep2.mkv", "ep3.mkv"] ? nil : "\(listed); carol's log ends: \(carol.log.suffix(3000))"
        }

        // carol adds a file the room does not list: refused in her chat, her list put back.
        carol.say("qa elsewhere.mkv")
        #expect(await eventually(timeout: 15) { carol.log.contains("elsewhere.mkv is not in this Cowatch room's playlist") }, "\(carol.log)")
        let listed = try await watch.playlist(0).entries.compactMap(\.name)
        #expect(listed == ["ep2.mkv", "ep3.mkv"], "the room's list: \(listed)")
        #expect(!carol.log.contains("Traceback"), "\(carol.log)")
        #expect(room.daemons.allSatisfy { $0.process.isRunning })
    }
}

/// Issue 24, part 1, the playlist both ways: a Cowatch daemon in a `syncplay-server` room follows
/// the room's shared playlist beside Syncplay's own client, and edits it.
extension SyncplayClientInteropTests {
    @Test("a daemon in a Syncplay room: its list reaches Syncplay's client, the client's choice switches the daemon's film and the daemon's next the client's")
    func daemonFollowsSyncplayPlaylist() async throws {
        let server = try await SyncplayServerProcess.start()
        let films = try await TestMedia.playlistFilms()
        let root = try makeTemporaryDirectory("cowatch-syncplay-list")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let names = [0: "ep1.mkv", 1: "ep2.mkv", 2: "ep3.mkv"]
        let aliceShelf = try Shelf(films, in: root, at: "alice", names: names)
        let carolShelf = try Shelf(films, in: root, at: "carol", names: names)
        let room = try await DaemonRoom(room: "list", venue: .syncplay(port: server.port), probes: true)
        defer { room.stopInBackground() }
        try await room.add("alice", media: aliceShelf.paths[0]!, arguments: aliceShelf.arguments)
        let alice = room.clients[0]
        let watch = PlaylistWatch(room)
        func aliceCurrent() async throws -> String? { try await watch.playlist(0).entries.first { $0.current }?.name }
        func aliceFile() async -> String? { try? await room.probes[0].request(.getProperty("filename")).stringValue }

        // carol joins with her copy of the first film (her client may list it for the empty room).
        let carol = try SyncplayClientProcess(
            name: "carol", port: server.port, room: "list", media: carolShelf.paths[0]!, mediaDirectories: [carolShelf.folder])
        defer { carol.terminateInBackground() }
        let carolPlayer = try await carol.playerProbe()
        func carolFile() async -> String? { try? await carolPlayer.request(.getProperty("filename")).stringValue }
        _ = try await room.expectNotices("join", actor: "carol", timeout: 30)
        #expect(await eventually(timeout: 30) { await carolFile() == "ep1.mkv" && carol.log.contains("In room") }, "\(carol.log)")
        await pause(1)

        // alice lists her three films for the room: carol's client lists them, and alice's daemon
        // has each by its own copy.
        _ = try await alice.request(.playlist(.replace(aliceShelf.sources([0, 1, 2]))))
        #expect(await eventually(timeout: 15) {
            carol.say("ql")
            await pause(0.5)
            return carol.log.contains("\t1: ep1.mkv") && carol.log.contains("\t2: ep2.mkv") && carol.log.contains("\t3: ep3.mkv")
        }, "\(carol.log)")
        try await watch.until("alice to list the three films, each hers", within: 10) {
            let entries = try await watch.playlist(0).entries
            let listed = entries.compactMap(\.name)
            return listed == ["ep1.mkv", "ep2.mkv", "ep3.mkv"] && entries.allSatisfy(\.here) ? nil : "\(listed)"
        }

        // carol chooses the second at her console: alice's daemon plays its own copy of it.
        carol.say("qs 2")
        try await watch.until("alice on ep2.mkv, chosen by carol", within: 20) {
            let current = try await aliceCurrent()
            return current == "ep2.mkv" ? nil : "current \(current ?? "-")"
        }
        #expect(await eventually(timeout: 20) { await aliceFile() == "ep2.mkv" }, "alice's player")

        // alice moves on: carol's client loads the third from her directory, saying who.
        _ = try await alice.request(.playlist(.next))
        #expect(await eventually(timeout: 20) { await carolFile() == "ep3.mkv" }, "\(carol.log)")
        #expect(carol.log.contains("alice changed the playlist selection"), "\(carol.log)")
        #expect(await eventually(timeout: 20) { await aliceFile() == "ep3.mkv" }, "alice's player")
        #expect(!carol.log.contains("Traceback"), "\(carol.log)")
        #expect(room.daemons.allSatisfy { $0.process.isRunning })
    }
}
