import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// A peer's "subtitles" that are really an mpv EDL file (or a playlist) never reach a player:
/// nobody's player fetches the URL inside, and the room carries on.
@Suite("Hostile subtitle attachments", .realProcesses)
struct HostileSubtitleTests {
    @Test("an .srt attachment holding an EDL file is refused by every daemon; no player fetches its URL")
    func edlRefused() async throws {
        let directory = DaemonProcess.makeDirectory()
        let bait = try SlowMediaServer(file: try await TestMedia.file(.audioVideo))
        defer { bait.close() }
        let evil = directory + "/evil.srt"
        try "# mpv EDL v0\n\(bait.url)\n".write(toFile: evil, atomically: true, encoding: .utf8)
        let room = try await DaemonRoom(names: ["mallory", "bob"], media: try await TestMedia.file(.audioVideo), room: "subs")
        defer { room.stopInBackground() }
        let attached = try await runCowatch(["attach", evil, "--socket", room.daemons[0].controlPath])
        #expect(attached.status == 0, "\(attached.stderr)")
        // A late joiner fetches it too (and refuses it too).
        let carol = try await room.add("carol")
        await pause(4)
        #expect(bait.requestCount == 0, "a player fetched the URL inside the EDL")
        for index in [0, 1, carol] {
            let tracks = (try await room.clients[index].request(.getProperty("track-list")).arrayValue ?? []).filter { $0["type"] == "sub" }
            #expect(tracks.isEmpty, "\(room.names[index]): \(tracks)")
            #expect(try await room.roomStatus(index)["session"] == "joined")
        }
    }

    @Test("SRT, ASS/SSA and WebVTT are recognised by content; EDL, playlists and anything else are not", arguments: [
        ("1\n00:00:01,000 --> 00:00:04,000\nHello\n", "srt"), ("\u{FEFF}1\r\n00:00:01,000 --> 00:00:04,000\r\nHi\r\n", "srt"),
        ("[Script Info]\nTitle: x\n", "ass"), ("WEBVTT\n\n00:01.000 --> 00:04.000\nHi\n", "vtt"),
        ("# mpv EDL v0\nhttp://evil.example/x.mkv\n", nil), ("#EXTM3U\nhttp://evil.example/x.m3u8\n", nil),
        ("1\n00:00:01,000 --> 00:00:04,000\nedl://http://evil.example/x\n", nil), ("[playlist]\nFile1=http://x\n", nil),
        ("<?xml version=\"1.0\"?><MPD/>", nil), ("hello", nil), ("", nil),
    ] as [(String, String?)])
    func formats(text: String, expected: String?) {
        #expect(SubtitleContent.format(of: Array(text.utf8))?.rawValue == expected)
    }

    @Test("UTF-16 subtitles with a BOM are read")
    func utf16() {
        let text = "1\n00:00:01,000 --> 00:00:04,000\nHi\n"
        let little: [UInt8] = [0xFF, 0xFE] + text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        #expect(SubtitleContent.format(of: little) == .srt)
    }
}
