import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Notices on a real mpv's OSD, read from the player's own command trace (mpv's terminal output,
/// at trace level: `show-text` is only logged there): what the daemon asked mpv to show, and when.
@Suite("Notices on a real player's OSD", .serialized, .realProcesses)
struct OSDNoticeTests {
    /// A hosted room of two; alice's player traces every command it runs to `log`.
    private func room(_ name: String) async throws -> (DaemonRoom, log: String) {
        let viewers = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: name, venue: .hostedByFirst)
        try await viewers.add("alice", arguments: ["--osd", "--mpv", "terminal=yes", "--mpv", "msg-level=all=no,cplayer=trace"])
        try await viewers.add("bob")
        try await viewers.waitJoined(0, participants: 2)
        return (viewers, viewers.daemons[0].stdoutPath)
    }

    /// The texts of every `show-text` alice's player ran, in order.
    private func shown(_ log: String) -> [String] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let start = line.range(of: "Run command: show-text, flags=64, args=[text=\""),
                let end = line.range(of: "\", duration=", options: .backwards)
            else { return nil }
            return String(line[start.upperBound..<end.lowerBound])
        }
    }

    @Test("the person who pauses sees their own notice: shown, then drawn again once their player has paused")
    func pauserSeesOwnNotice() async throws {
        let (viewers, log) = try await room("osd-pause")
        defer { viewers.stopInBackground() }
        // By command.
        try await viewers.clients[0].request(.play)
        _ = try await viewers.clients[0].waitForStatus(timeout: 5) { !$0.paused }
        try await viewers.clients[0].request(.pause)
        _ = try await viewers.clients[0].waitForStatus(timeout: 5) { $0.paused }
        await pause(1)
        // By key, in the player itself.
        try await viewers.clients[0].request(.play)
        _ = try await viewers.clients[0].waitForStatus(timeout: 5) { !$0.paused }
        let mpv = try await viewers.daemons[0].playerProbe()
        _ = try await mpv.request([.string("keypress"), .string("SPACE")])
        _ = try await viewers.clients[0].waitForStatus(timeout: 5) { $0.paused }
        await pause(1)
        // mpv's terminal output reaches the file when the player ends.
        #expect(await viewers.daemons[0].terminate() == 0)
        let notices = shown(log).filter { $0.contains("alice paused at") }
        // Each pause: the notice, then the same lines once more (ending in a space, since mpv
        // ignores a text equal to the one shown) while paused.
        #expect(notices.count >= 4, "\(notices)")
        #expect(notices.filter { $0.hasSuffix(" ") }.count >= 2, "\(notices)")
    }

    @Test("text from others is shown as sent: a $ once, ${…} not expanded")
    func dollarsShownOnce() async throws {
        let (viewers, log) = try await room("osd-dollar")
        defer { viewers.stopInBackground() }
        let line = "Ca$h ${pause} $$ $>"
        try await viewers.clients[1].request(.chat(line))
        _ = try await viewers.listeners[0].waitForEvent(named: "chat", timeout: 5)
        #expect(await viewers.daemons[0].terminate() == 0)
        let texts = shown(log)
        let chat = texts.first { $0.contains("<bob>") }
        // Sent unescaped: mpv expands ${…} only in commands given as strings, not in a list.
        #expect(chat?.hasSuffix("<bob> \(line)") == true, "\(texts)")
    }
}
