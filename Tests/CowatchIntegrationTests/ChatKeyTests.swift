import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// The chat key in a real player window (keys sent through mpv's own IPC, as a keyboard would):
/// a one-line input that sends on Enter and closes, closes on Esc, and takes every key meanwhile.
@Suite("The chat key in the player window", .serialized, .realProcesses)
struct ChatKeyTests {
    @Test("c opens a chat line: Enter sends it and closes; Esc closes without sending; Space types, not pauses")
    func chatLine() async throws {
        let viewers = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: "chat-key", venue: .hostedByFirst)
        defer { viewers.stopInBackground() }
        try await viewers.add("alice")
        try await viewers.add("bob")
        try await viewers.waitJoined(0, participants: 2)
        let mpv = try await viewers.daemons[0].playerProbe()
        func press(_ keys: String...) async throws {
            for key in keys { _ = try await mpv.request([.string("keypress"), .string(key)]) }
        }
        func chatState() async throws -> String? {
            let properties = try await mpv.request([.string("get_property"), .string("shared-script-properties")])
            return properties["cowatch-chat"]?.stringValue
        }
        func waitState(_ expected: String) async throws -> String? {
            let deadline = monotonicNow() + 5
            var state = try await chatState()
            while state != expected && monotonicNow() < deadline {
                await pause(0.02)
                state = try await chatState()
            }
            return state
        }
        func expectState(_ expected: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let state = try await waitState(expected)
            #expect(state == expected, sourceLocation: sourceLocation)
        }
        try await viewers.clients[0].request(.play)
        _ = try await viewers.clients[0].waitForStatus(timeout: 5) { !$0.paused }

        try await expectState("closed")
        try await press("c")
        try await expectState("open:")
        // One key at a time, each once the line shows the one before, as a person types: a burst
        // faster than a busy player takes keys overflows its key queue (--input-key-fifo-size, 7
        // by default), and mpv drops the keys that do not fit.
        let typing = [
            ("h", "h"), ("i", "hi"), ("SPACE", "hi "), ("x", "hi x"), ("BS", "hi "), ("t", "hi t"), ("h", "hi th"), ("e", "hi the"),
            ("r", "hi ther"), ("e", "hi there"),
        ]
        for (key, line) in typing {
            try await press(key)
            try await expectState("open:" + line)
        }
        // Space typed a space: nobody paused.
        #expect(try await viewers.clients[0].status().paused == false)
        try await press("ENTER")
        let line = try await viewers.listeners[1].waitForEvent(named: "chat", timeout: 5)
        #expect(line?.fields["participant"] == "alice" && line?.fields["text"] == "hi there", "\(String(describing: line))")
        try await expectState("closed")

        // Esc: closed, nothing sent.
        // (The script opens on a message: keys sent before it has opened are the player's.)
        try await press("c")
        try await expectState("open:")
        try await press("n", "o")
        let typed = try await waitState("open:no")
        #expect(typed == "open:no", "\(String(describing: typed))")
        try await press("ESC")
        try await expectState("closed")
        let none = try await viewers.listeners[1].waitForEvent(named: "chat", timeout: 1)
        #expect(none == nil, "\(String(describing: none))")
        // Closed, keys are the player's again: Space pauses.
        try await press("SPACE")
        _ = try await viewers.clients[0].waitForStatus(timeout: 5) { $0.paused }
    }
}
