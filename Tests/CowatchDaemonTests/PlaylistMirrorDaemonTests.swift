@testable import CowatchDaemon
import CowatchCore
import CowatchTesting
import Foundation
import Testing

/// Issue 23: the player's own playlist mirrors the room's at every daemon, the window's
/// next/previous keys move the group, and the countdown to the next entry is on the OSD.
@Suite("Playlist: the player's own list, keys and countdown")
struct PlaylistMirrorDaemonTests {
    @Test("each player lists the room's entries, its own copies by path, what it lacks as not here; > moves the group")
    func mirrorAndKeys() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cowatch-mirror-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // Two different "films" (content decides identity); the simulated player plays them by path.
        let paths = try ["one.mkv", "two.mkv"].enumerated().map { index, name in
            let path = folder.appendingPathComponent(name).path
            try Data(repeating: UInt8(index + 1), count: 4096 + index).write(to: URL(fileURLWithPath: path))
            return path
        }
        let sources = Dictionary(uniqueKeysWithValues: paths.map { ($0, SimulatedPlayer.Source(duration: 60)) })

        let server = try await InProcessServer()
        defer { server.stop() }
        let alice = try await DaemonUnderTest(name: "alice", player: SimulatedPlayer(sources: sources), room: "mirror", server: server.port)
        try await alice.joined()
        let bob = try await DaemonUnderTest(name: "bob", room: "mirror", server: server.port)
        try await bob.joined()

        _ = try await alice.request(.playlist(.add(paths.map { .file($0) }, next: false))).get()
        // Alice has both (she added them): listed by path, titled by name; the room's first media
        // plays, so her list follows it.
        #expect(await eventually { alice.player.listedPlaylist?.items.map(\.filename) == paths }, "\(String(describing: alice.player.listedPlaylist))")
        #expect(alice.player.listedPlaylist?.items.map(\.title) == ["one.mkv", "two.mkv"])
        #expect(alice.player.listedPlaylist?.playing == nil)
        // Bob has neither: both listed, as not here, under names no file has.
        #expect(await eventually { bob.player.listedPlaylist?.items.map(\.title) == ["one.mkv (not here)", "two.mkv (not here)"] },
            "\(String(describing: bob.player.listedPlaylist))")
        #expect(bob.player.listedPlaylist?.items.allSatisfy { $0.filename.hasPrefix("cowatch-lacking://") } == true)

        // The group plays #1: alice loads her copy, and her list is made again around it.
        _ = try await alice.request(.playlist(.jump(1))).get()
        #expect(await eventually { alice.player.listedPlaylist?.playing == 0 }, "\(String(describing: alice.player.listedPlaylist))")

        // `>` in bob's window: the group's next entry, for everyone.
        bob.player.personSendsScriptMessage(["cowatch-playlist", "next"])
        #expect(await eventually { alice.player.listedPlaylist?.playing == 1 }, "\(String(describing: alice.player.listedPlaylist))")
        // Everyone has it loaded; the room's countdown (3 s) is counted down on the OSD, one line
        // that replaces itself each second.
        #expect(await eventually { alice.player.osdTexts.contains { $0.contains("two.mkv in 1 s") } }, "\(alice.player.osdTexts)")
        #expect(alice.player.osdTexts.contains { $0.contains("two.mkv in 2 s") }, "\(alice.player.osdTexts)")
        #expect(!alice.player.osdTexts.contains { $0.contains("in 2 s") && $0.contains("in 1 s") }, "\(alice.player.osdTexts)")
        let listed = try PlaylistReply(json: try await alice.request(.getPlaylist).get())
        #expect(listed.current == 2, "\(listed)")
        await alice.stop()
        await bob.stop()
    }
}
