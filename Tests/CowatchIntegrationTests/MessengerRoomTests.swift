import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// The chat and the messenger with real daemons, a real server and the CLI.
@Suite("Chat and messenger in a room of real daemons", .realProcesses)
struct MessengerRoomTests {
    @Test("cowatch chat reaches everyone; a late joiner gets the history; --no-chat refuses clearly and nothing else breaks")
    func chat() async throws {
        let room = try await DaemonRoom(names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "talk")
        defer { room.stopInBackground() }
        let said = try await runCowatch(["chat", "popcorn", "anyone?", "--socket", room.daemons[0].controlPath])
        #expect(said.status == 0, "\(said.stderr)")
        let heard = try await room.listeners[1].waitForEvent(named: "chat", timeout: 5)
        #expect(heard?.fields["participant"] == "alice")
        #expect(heard?.fields["text"] == "popcorn anyone?")

        // A late joiner has the history (events are not replayed to a client that connects after
        // the join, so read it with get_chat, as `cowatch chat` does).
        let carol = try await room.add("carol")
        let recent = try await runCowatch(["chat", "--socket", room.daemons[carol].controlPath])
        #expect(recent.stdout == "<alice> popcorn anyone?\n", "\(recent.stdout) \(recent.stderr)")
        let history = try await room.clients[carol].request(.getChat).arrayValue?.first
        #expect(history?.objectValue?["history"] == true)
        let printed = try await runCowatch(["events", "--duration", "0.5", "--socket", room.daemons[1].controlPath])
        #expect(printed.status == 0)

        let quiet = try await DaemonRoom(
            names: ["dave", "erin"], media: room.media, room: "quiet", venue: .server(arguments: ["--no-chat"]))
        defer { quiet.stopInBackground() }
        let refused = try await runCowatch(["chat", "hello?", "--socket", quiet.daemons[0].controlPath])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("--no-chat"), "\(refused.stderr)")
        // Messages still go.
        let sent = try await runCowatch(["send", "note", #"{"ok":true}"#, "--socket", quiet.daemons[0].controlPath])
        #expect(sent.stdout.contains("delivered to erin"), "\(sent.stdout) \(sent.stderr)")
        #expect(try await quiet.roomStatus(1)["session"] == "joined")
    }

    @Test("in the player window, c opens mpv's console for a chat line and Alt+o shows the room line")
    func windowKeys() async throws {
        let room = try await DaemonRoom(names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "keys")
        defer { room.stopInBackground() }
        let mpv = try await room.daemons[0].playerProbe()
        // Keys as a person presses them: c, the words, Enter (mpv's console runs the typed command).
        _ = try await mpv.request([.string("keypress"), .string("c")])
        await pause(0.3)
        for key in ["h", "i", "SPACE", "a", "l", "l", "ENTER"] { _ = try await mpv.request([.string("keypress"), .string(key)]) }
        let heard = try await room.listeners[1].waitForEvent(named: "chat", timeout: 5)
        #expect(heard?.fields["participant"] == "alice")
        #expect(heard?.fields["text"] == "hi all")
        // The room line: the same text `cowatch osd` prints.
        _ = try await mpv.request([.string("keypress"), .string("Alt+o")])
        let printed = try await runCowatch(["osd", "--socket", room.daemons[0].controlPath])
        #expect(printed.stdout.contains("keys · 2 here: alice"), "\(printed.stdout) \(printed.stderr)")
    }

    @Test("reliable messages arrive once and in order across a server restart")
    func acrossReconnect() async throws {
        let room = try await DaemonRoom(names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "relay")
        defer { room.stopInBackground() }
        let socket = try RawControlSocket(path: room.daemons[0].controlPath)
        let count = 150
        var lines: [UInt8] = []
        for index in 0..<count {
            lines += Array(#"{"command":["send_message","state",{"n":\#(index)}],"request_id":\#(index)}"#.utf8) + [10]
        }
        var offset = 0
        while offset < lines.count {
            _ = await socket.wait(writable: true, timeout: 1)
            offset += try socket.trySend(lines[offset...])
        }
        await pause(1)
        try await room.restartServer(downFor: 1)

        // Every reply: accepted (success, or still queued at timeout) or refused while out of the room.
        var replies: [Int: String] = [:]
        var reached: [Int: [String]] = [:]
        var buffer: [UInt8] = []
        let deadline = monotonicNow() + 60
        while replies.count < count, monotonicNow() < deadline {
            _ = await socket.wait(writable: false, timeout: 1)
            buffer += try socket.tryReceive()
            while let newline = buffer.firstIndex(of: 10) {
                let line = Array(buffer[..<newline])
                buffer.removeFirst(newline + 1)
                guard let object = try? JSONValue.parse(line), let id = object["request_id"]?.numberValue,
                    let error = object["error"]?.stringValue
                else { continue }
                replies[Int(id)] = error
                reached[Int(id)] = object["data"]?["delivered"]?.arrayValue?.compactMap(\.stringValue)
            }
        }
        #expect(replies.count == count)
        let accepted = replies.filter { $0.value == "success" || $0.value == "timeout" }.keys.sorted()
        #expect(accepted.count > count / 2, "replies: \(replies.values.reduce(into: [:]) { $0[$1, default: 0] += 1 })")

        var received: [Int] = []
        let until = monotonicNow() + 30
        while received.count < accepted.count, monotonicNow() < until {
            guard let event = try await room.listeners[1].nextEvent(timeout: max(0.1, until - monotonicNow())) else { continue }
            if event.name == "message", let n = event.fields["payload"]?["n"]?.numberValue { received.append(Int(n)) }
        }
        let missing = Set(accepted).subtracting(received).sorted()
        #expect(
            received == accepted,
            "received \(received.count), accepted \(accepted.count); the missing ones reached \(missing.map { reached[$0] ?? [] })")
    }
}
