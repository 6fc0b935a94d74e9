import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// The chat key in a real player window (keys sent through mpv's own IPC, as a keyboard would):
/// a one-line input that sends on Enter and closes, closes on Esc, and takes every key meanwhile.
@Suite("The chat key in the player window", .serialized)
struct ChatKeyTests {
    @Test("c opens a chat line: Enter sends it and closes; Esc closes without sending; Space types, not pauses")
    func chatLine() throws {
        let viewers = try DaemonRoom(media: try TestMedia.audioVideo(), room: "chat-key", venue: .hostedByFirst)
        defer { viewers.stop() }
        try viewers.add("alice")
        try viewers.add("bob")
        try viewers.waitJoined(0, participants: 2)
        let mpv = try viewers.daemons[0].playerProbe()
        func press(_ keys: String...) throws {
            for key in keys { _ = try mpv.request([.string("keypress"), .string(key)]) }
        }
        func chatState() throws -> String? {
            let properties = try mpv.request([.string("get_property"), .string("shared-script-properties")])
            return properties["cowatch-chat"]?.stringValue
        }
        func waitState(_ expected: String) throws -> String? {
            let deadline = monotonicNow() + 5
            var state = try chatState()
            while state != expected && monotonicNow() < deadline {
                usleep(20_000)
                state = try chatState()
            }
            return state
        }
        try viewers.clients[0].request(.play)
        _ = try viewers.clients[0].waitForStatus(timeout: 5) { !$0.paused }

        #expect(try waitState("closed") == "closed")
        try press("c")
        #expect(try waitState("open:") == "open:")
        try press("h", "i", "SPACE", "x", "BS", "t", "h", "e", "r", "e")
        #expect(try waitState("open:hi there") == "open:hi there")
        // Space typed a space: nobody paused.
        #expect(try viewers.clients[0].status().paused == false)
        try press("ENTER")
        let line = try viewers.listeners[1].waitForEvent(named: "chat", timeout: 5)
        #expect(line?.fields["participant"] == "alice" && line?.fields["text"] == "hi there", "\(String(describing: line))")
        #expect(try waitState("closed") == "closed")

        // Esc: closed, nothing sent.
        // (The script opens on a message: keys sent before it has opened are the player's.)
        try press("c")
        #expect(try waitState("open:") == "open:")
        try press("n", "o")
        let typed = try waitState("open:no")
        #expect(typed == "open:no", "\(String(describing: typed))")
        try press("ESC")
        #expect(try waitState("closed") == "closed")
        let none = try viewers.listeners[1].waitForEvent(named: "chat", timeout: 1)
        #expect(none == nil, "\(String(describing: none))")
        // Closed, keys are the player's again: Space pauses.
        try press("SPACE")
        _ = try viewers.clients[0].waitForStatus(timeout: 5) { $0.paused }
    }
}
