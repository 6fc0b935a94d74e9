import Testing

@testable import CowatchCore

/// Seeds for a new room's playlist: media as a command line gives them, and M3U files read into
/// seeds, hostile ones refused with a stable code and a message that names the line.
@Suite("M3U playlists and playlist seeds")
struct M3UPlaylistTests {
    static let folder = "/home/ann/lists"

    func parse(_ text: String) throws(CowatchError) -> [PlaylistSeed] {
        try M3UPlaylist.parse(Array(text.utf8), directory: Self.folder)
    }

    func code(_ bytes: [UInt8]) -> CowatchError? {
        do {
            _ = try M3UPlaylist.parse(bytes, directory: Self.folder)
            return nil
        } catch {
            return error
        }
    }

    @Test("one path or URL a line; comments skipped; relative paths from the file's folder")
    func plain() throws {
        let seeds = try parse(
            """
            #EXTM3U
            # a comment
            ep1.mkv
            ../films/ep2.mkv
            /srv/films/./ep3.mkv

            https://media.example/ep4.mkv
            file:///srv/films/ep%205.mkv
            """)
        #expect(seeds.map(\.source) == [
            .file("/home/ann/lists/ep1.mkv"), .file("/home/ann/films/ep2.mkv"), .file("/srv/films/ep3.mkv"),
            .url("https://media.example/ep4.mkv"), .file("/srv/films/ep 5.mkv"),
        ])
        #expect(seeds.allSatisfy { $0.title == nil })
    }

    @Test("a byte-order mark, CRLF and CR line ends, blanks around lines")
    func lineEnds() throws {
        let bytes: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("#EXTM3U\r\n  a.mkv\t\r\nb.mkv\rc.mkv\r\n".utf8)
        let seeds = try M3UPlaylist.parse(bytes, directory: "/x")
        #expect(seeds.map(\.source.text) == ["/x/a.mkv", "/x/b.mkv", "/x/c.mkv"])
    }

    @Test("#EXTINF gives the next entry its title; an unfit title is left out, not an error")
    func titles() throws {
        let long = String(repeating: "t", count: PlaylistEntry.maxTitleCharacters + 1)
        let seeds = try parse(
            """
            #EXTINF:1330,Episode 1
            #EXTVLCOPT:network-caching=1000
            ep1.mkv
            ep2.mkv
            #EXTINF:-1 tvg-id="x",\(long)
            ep3.mkv
            #EXTINF:-1,bob\u{202E}evil
            ep4.mkv
            #EXTINF:-1,
            ep5.mkv
            #EXTINF:-1
            ep6.mkv
            """)
        #expect(seeds.map(\.title) == ["Episode 1", nil, nil, nil, nil, nil])
    }

    @Test("what `cowatch playlist save` writes reads back")
    func roundTrip() throws {
        let reply = PlaylistReply(entries: [
            .init(number: 1, id: 4, title: "Episode 1", kind: .file, name: "ep1.mkv", size: 10, duration: 1330, addedBy: "bob",
                  local: "/films/ep1.mkv"),
            .init(number: 2, id: 5, title: "ep2.mkv", kind: .url, url: "https://media.example/ep2.mkv", addedBy: "bob"),
            .init(number: 3, id: 6, title: "ep3.mkv", kind: .file, name: "ep3.mkv", size: 10, addedBy: "cy"),
        ])
        let seeds = try parse(reply.m3u)
        #expect(seeds == [
            PlaylistSeed(source: .file("/films/ep1.mkv"), title: "Episode 1"),
            PlaylistSeed(source: .url("https://media.example/ep2.mkv"), title: "ep2.mkv"),
        ])
    }

    @Test("hostile files: NUL bytes, non-UTF-8, control characters, huge lines, too large, too many, none")
    func hostile() {
        #expect(code(Array("a.mkv\n\0b.mkv\n".utf8))?.code == .invalidConfiguration)
        #expect(code(Array("a.mkv\n".utf8) + [0xC3, 0x28, 0x0A])?.code == .invalidConfiguration)
        #expect(code(Array("caf".utf8) + [0xE9] + Array(".mkv\n".utf8))?.message.contains("UTF-8") == true)
        let control = code(Array("ok.mkv\nbad\u{1B}[2J.mkv\n".utf8))
        #expect(control?.code == .invalidConfiguration)
        #expect(control?.message == "line 2 holds control characters")
        #expect(code(Array("a\u{85}b.mkv".utf8))?.code == .invalidConfiguration)  // C1
        let huge = code(Array(("a.mkv\n" + String(repeating: "x", count: PlaylistCommand.Source.maxBytes + 1)).utf8))
        #expect(huge?.message.hasPrefix("line 2 is longer than") == true)
        #expect(code([UInt8](repeating: UInt8(ascii: "#"), count: M3UPlaylist.maxBytes + 1))?.code == .invalidConfiguration)
        // A huge comment within the bound is only a comment.
        #expect(code(Array(("#" + String(repeating: "x", count: 100_000) + "\na.mkv\n").utf8)) == nil)
        let many = (1...501).map { "e\($0).mkv" }.joined(separator: "\n")
        #expect(code(Array(many.utf8))?.code == .playlistFull)
        #expect(code(Array((1...500).map { "e\($0).mkv" }.joined(separator: "\n").utf8)) == nil)
        #expect(code(Array("#EXTM3U\n# nothing\n\n".utf8))?.code == .invalidConfiguration)
        #expect(code([])?.code == .invalidConfiguration)
    }

    @Test("entries that cannot be in a room's list: mpv's own sources, file: with a host; messages name the line")
    func notEntries() {
        let av = code(Array("a.mkv\nav://lavfi:testsrc\n".utf8))
        #expect(av?.code == .invalidConfiguration)
        #expect(av?.message.hasPrefix("line 2: ") == true)
        #expect(code(Array("dvd://1\n".utf8))?.code == .invalidConfiguration)
        #expect(code(Array("file://server/share/a.mkv\n".utf8))?.code == .invalidConfiguration)
        #expect(code(Array("ftp:relative\n".utf8)) == nil)  // a relative file name with a colon
    }

    @Test("media as a command line gives them: relative to the working directory, URLs as given")
    func commandLine() throws {
        #expect(try PlaylistSeed(media: "a.mkv", relativeTo: "/home/ann").source == .file("/home/ann/a.mkv"))
        #expect(try PlaylistSeed(media: "../b.mkv", relativeTo: "/home/ann").source == .file("/home/b.mkv"))
        #expect(try PlaylistSeed(media: "/srv//c.mkv", relativeTo: "/home/ann").source == .file("/srv/c.mkv"))
        #expect(try PlaylistSeed(media: "https://x.example/d.mkv", relativeTo: "/").source == .url("https://x.example/d.mkv"))
        for bad in ["", "av://lavfi:testsrc", "a\nb.mkv", "edl://x.mkv", "https:///nohost"] {
            #expect(throws: CowatchError(.invalidConfiguration, "")) { try PlaylistSeed(media: bad, relativeTo: "/") }
        }
    }
}
