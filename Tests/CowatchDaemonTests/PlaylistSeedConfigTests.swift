import CowatchCore
import Foundation
import Testing

@testable import CowatchDaemon

#if canImport(Glibc)
    import Glibc
#endif

/// `cowatchd a.mkv b.mkv c.mkv` and `--playlist FILE.m3u` (flag, `COWATCH_PLAYLIST`, the config
/// file's `playlist`): the seeds of a new room's playlist, and what stops start-up.
@Suite("playlist seeds: several media, --playlist, COWATCH_PLAYLIST, the config file")
struct PlaylistSeedConfigTests {
    static let environment = ["HOME": "/home/alice", "XDG_CONFIG_HOME": "/nonexistent"]

    static func flags(_ media: [String] = []) -> DaemonFlags {
        var flags = DaemonFlags()
        flags.media = media.first
        flags.mediaList = media
        flags.name = "alice"
        flags.control = "/tmp/cowatch-playlist-seed-test.sock"
        flags.join = "127.0.0.1:9"
        return flags
    }

    static func load(_ flags: DaemonFlags, _ environment: [String: String] = environment) async throws -> DaemonConfiguration {
        try await DaemonConfiguration.load(flags: flags, environment: environment)
    }

    /// Films (a few bytes each: only their being there is checked here).
    static func films(_ tree: MediaTree, _ names: [String]) throws -> [String] {
        try names.map { try tree.write($0, [1, 2, 3]) }
    }

    @Test("one media seeds nothing; several seed them all, the first is the media and the current one")
    func severalMedia() async throws {
        let tree = try MediaTree()
        let films = try Self.films(tree, ["a.mkv", "b.mkv", "c.mkv"])
        let one = try await Self.load(Self.flags([films[0]]))
        #expect(one.playlistSeeds.isEmpty)
        #expect(one.playlistSeedCurrent == nil)

        let three = try await Self.load(Self.flags(films + ["https://media.example/d.mkv"]))
        #expect(three.media == films[0])
        #expect(three.playlistSeeds.map(\.source) == films.map { PlaylistCommand.Source.file($0) } + [.url("https://media.example/d.mkv")])
        #expect(three.playlistSeedCurrent == 0)
    }

    @Test("a missing or unreadable seed file stops start-up (media-unavailable, named); seeds need a room")
    func unreadable() async throws {
        let tree = try MediaTree()
        let films = try Self.films(tree, ["a.mkv"])
        do {
            _ = try await Self.load(Self.flags([films[0], tree.path("gone.mkv")]))
            Issue.record("a missing seed file was accepted")
        } catch let error as CowatchError {
            #expect(error.code == .mediaUnavailable)
            #expect(error.message == "cannot open \(tree.path("gone.mkv")): no such file")
        }
        try FileManager.default.createDirectory(atPath: tree.path("folder.mkv"), withIntermediateDirectories: true)
        await #expect(throws: CowatchError(.mediaUnavailable, "")) {
            try await Self.load(Self.flags([films[0], tree.path("folder.mkv")]))
        }
        var alone = Self.flags([films[0], films[0]])
        alone.join = nil
        await #expect(throws: CowatchError(.invalidConfiguration, "")) { try await Self.load(alone) }
        // mpv's own sources play alone, but cannot be entries.
        await #expect(throws: CowatchError(.invalidConfiguration, "")) {
            try await Self.load(Self.flags([films[0], "av://lavfi:testsrc"]))
        }
        await #expect(throws: CowatchError(.playlistFull, "")) {
            try await Self.load(Self.flags(Array(repeating: films[0], count: M3UPlaylist.maxEntries + 1)))
        }
    }

    @Test("--playlist: its entries after the media given as arguments; without media its first entry plays")
    func playlistFlag() async throws {
        let tree = try MediaTree()
        let films = try Self.films(tree, ["lists/a.mkv", "films/b.mkv", "c.mkv"])
        let list = try tree.write("lists/evening.m3u", Array("#EXTM3U\n#EXTINF:10,First\na.mkv\n../films/b.mkv\n".utf8))

        var flags = Self.flags()
        flags.playlist = list
        let alone = try await Self.load(flags)
        #expect(alone.media == films[0])
        #expect(alone.playlistSeeds == [PlaylistSeed(source: .file(films[0]), title: "First"), PlaylistSeed(source: .file(films[1]))])
        #expect(alone.playlistSeedCurrent == 0)

        flags = Self.flags([films[2]])
        flags.playlist = list
        let after = try await Self.load(flags)
        #expect(after.media == films[2])
        #expect(after.playlistSeeds.map(\.source.text) == [films[2], films[0], films[1]])
        #expect(after.playlistSeedCurrent == 0)

        // --media is the media only: the list is the file's, and the current one is the media's entry if it has one.
        flags = Self.flags()
        flags.media = films[1]
        flags.playlist = list
        let media = try await Self.load(flags)
        #expect(media.playlistSeeds.map(\.source.text) == [films[0], films[1]])
        #expect(media.playlistSeedCurrent == 1)
        flags.media = films[2]
        #expect(try await Self.load(flags).playlistSeedCurrent == nil)
    }

    @Test("COWATCH_PLAYLIST, then the config file's playlist (relative to its folder); the flag wins")
    func sources() async throws {
        let tree = try MediaTree()
        let films = try Self.films(tree, ["a.mkv", "b.mkv"])
        let first = try tree.write("one.m3u", Array("a.mkv\n".utf8))
        let second = try tree.write("two.m3u", Array("b.mkv\n".utf8))
        var environment = Self.environment
        environment["COWATCH_PLAYLIST"] = first
        #expect(try await Self.load(Self.flags(), environment).playlistSeeds.map(\.source.text) == [films[0]])
        var flags = Self.flags()
        flags.playlist = second
        #expect(try await Self.load(flags, environment).playlistSeeds.map(\.source.text) == [films[1]])

        let config = try tree.write("cowatchd.json", Array(#"{"playlist": "two.m3u"}"#.utf8))
        flags = Self.flags()
        flags.config = config
        #expect(try await Self.load(flags).playlistSeeds.map(\.source.text) == [films[1]])
        #expect(try await Self.load(flags, environment).playlistSeeds.map(\.source.text) == [films[0]])
        try tree.write("cowatchd.json", Array(#"{"playlist": 7}"#.utf8))
        await #expect(throws: CowatchError(.invalidConfiguration, "")) { try await Self.load(flags) }
    }

    @Test("a playlist file that is missing, not a regular file, too large or malformed stops start-up, named")
    func badFiles() async throws {
        let tree = try MediaTree()
        _ = try Self.films(tree, ["a.mkv"])
        var flags = Self.flags()
        flags.playlist = tree.path("missing.m3u")
        do {
            _ = try await Self.load(flags)
            Issue.record("a missing playlist was accepted")
        } catch let error as CowatchError {
            #expect(error.code == .invalidConfiguration)
            #expect(error.message == "playlist \(tree.path("missing.m3u")): the file does not exist")
        }
        #expect(mkfifo(tree.path("fifo.m3u"), 0o600) == 0)
        flags.playlist = tree.path("fifo.m3u")
        await #expect(throws: CowatchError(.invalidConfiguration, "")) { try await Self.load(flags) }
        flags.playlist = try tree.write("big.m3u", [UInt8](repeating: UInt8(ascii: "#"), count: M3UPlaylist.maxBytes + 1))
        await #expect(throws: CowatchError(.invalidConfiguration, "")) { try await Self.load(flags) }
        flags.playlist = try tree.write("nul.m3u", Array("a.mkv\n\0".utf8))
        await #expect(throws: CowatchError(.invalidConfiguration, "")) { try await Self.load(flags) }
        flags.playlist = try tree.write("missing-entry.m3u", Array("a.mkv\ngone.mkv\n".utf8))
        await #expect(throws: CowatchError(.mediaUnavailable, "")) { try await Self.load(flags) }
        flags.playlist = try tree.write("many.m3u", Array(String(repeating: "a.mkv\n", count: 400).utf8))
        flags.mediaList = Array(repeating: tree.path("a.mkv"), count: 101)
        flags.media = tree.path("a.mkv")
        await #expect(throws: CowatchError(.playlistFull, "")) { try await Self.load(flags) }
    }
}
