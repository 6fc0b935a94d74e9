@testable import CowatchDaemon
import CowatchClient
import CowatchCore
import CowatchNet
import CowatchTesting
import Testing

/// What a person at the mpv window sees and can do: their own notices, chat from the window,
/// the room line.
@Suite("The player window")
struct PlayerWindowTests {
    @Test("whoever pauses sees their own notice, from the CLI and from the window")
    func ownPauseNotice() async throws {
        let server = try await InProcessServer()
        defer { server.stop() }
        let daemons = try await server.joinedRoom(["alice", "bob"], room: "own")
        _ = try await daemons[0].request(.play).get()
        #expect(await eventually { !daemons[1].player.isPaused })
        _ = try await daemons[0].request(.pause).get()
        #expect(await eventually { daemons[0].player.osdTexts.contains { $0.contains("alice paused") } }, "\(daemons[0].player.osdTexts)")
        #expect(await eventually { daemons[1].player.osdTexts.contains { $0.contains("alice paused") } })

        _ = try await daemons[1].request(.play).get()
        #expect(await eventually { !daemons[1].player.isPaused && !daemons[0].player.isPaused })
        daemons[1].player.personSetsPause(true)
        #expect(await eventually { daemons[1].player.osdTexts.contains { $0.contains("bob paused") } }, "\(daemons[1].player.osdTexts)")
        #expect(await eventually { daemons[0].player.isPaused })
        for daemon in daemons { await daemon.stop() }
    }

    @Test("script-message cowatch-chat from the window chats; cowatch-room shows who is here")
    func chatAndRoomLineFromTheWindow() async throws {
        let server = try await InProcessServer()
        defer { server.stop() }
        let daemons = try await server.joinedRoom(["alice", "bob"], room: "window")
        daemons[0].player.personSendsScriptMessage(["cowatch-chat", "popcorn", "anyone?"])
        #expect(await eventually { daemons[1].player.osdTexts.contains { $0.contains("<alice> popcorn anyone?") } })
        // An empty line sends nothing; other scripts' messages are not ours.
        daemons[0].player.personSendsScriptMessage(["cowatch-chat", "  "])
        daemons[0].player.personSendsScriptMessage(["other-script", "x"])

        daemons[1].player.personSendsScriptMessage(["cowatch-room"])
        #expect(await eventually { daemons[1].player.osdTexts.contains { $0.contains("alice") && $0.contains("bob") && $0.contains("window") } },
            "\(daemons[1].player.osdTexts)")
        let line = try await daemons[1].request(.showRoom).get()
        #expect(line["text"]?.stringValue?.contains("2 here") == true, "\(line)")
        // The blank line and the other script's message sent nothing.
        #expect(try await daemons[1].request(.getChat).get().arrayValue?.count == 1)
        for daemon in daemons { await daemon.stop() }
    }
}
