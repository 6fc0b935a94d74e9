@testable import CowatchDaemon
import CowatchClient
import CowatchCore
import CowatchNet
import CowatchTesting
import Testing

/// Chat and the messenger between daemons on simulated players, through a real room server.
@Suite("Chat and messenger between daemons")
struct MessengerTests {
    /// Events named `name` a daemon published, collected from now on.
    final class Collected: Sendable {
        let events = Locked<[ControlEvent]>([])
        init(_ daemon: DaemonUnderTest, name: String) {
            _ = daemon.hub.subscribe { [events] event in
                if event.name == name { events.withLock { $0.append(event) } }
            }
        }
        var all: [ControlEvent] { events.withLock { $0 } }
    }

    @Test("a chat line reaches everyone, on the OSD as <name> text; a late joiner gets the history")
    func chat() async throws {
        let server = try await InProcessServer()
        defer { server.stop() }
        let daemons = try await server.joinedRoom(["alice", "bob"], room: "chat")
        let heard = Collected(daemons[1], name: "chat")
        _ = try await daemons[0].request(.chat("popcorn? 🍿")).get()
        #expect(await eventually { heard.all.count == 1 })
        #expect(heard.all.first?.fields["participant"] == "alice")
        #expect(heard.all.first?.fields["text"] == "popcorn? 🍿")
        #expect(await eventually { daemons[1].player.osdTexts.contains { $0.contains("<alice> popcorn? 🍿") } })

        let carol = try await DaemonUnderTest(name: "carol", room: "chat", server: server.port)
        let history = Collected(carol, name: "chat")
        try await carol.joined()
        #expect(await eventually { history.all.count == 1 })
        #expect(history.all.first?.fields["history"] == true)
        for daemon in daemons + [carol] { await daemon.stop() }
    }

    @Test("reliable messages to all and to some arrive once, in order, and are acknowledged with who got them")
    func reliable() async throws {
        let server = try await InProcessServer()
        defer { server.stop() }
        let daemons = try await server.joinedRoom(["alice", "bob", "carol"], room: "msg")
        let bob = Collected(daemons[1], name: "message")
        let carol = Collected(daemons[2], name: "message")
        for index in 0..<20 {
            let reply = try await daemons[0].request(.sendMessage(.init(topic: "state", payload: ["n": .number(Double(index))]))).get()
            #expect(try SendMessageReply(json: reply).delivered?.count == 2)
        }
        let onlyCarol = try await daemons[0].request(
            .sendMessage(.init(topic: "secret", payload: "for carol", to: ["carol"]))).get()
        #expect(try SendMessageReply(json: onlyCarol).delivered == ["carol"])
        #expect(await eventually { bob.all.count == 20 && carol.all.count == 21 })
        try await Task.sleep(for: .milliseconds(200))
        #expect(bob.all.map { $0.fields["payload"]?["n"]?.numberValue } == (0..<20).map { Double($0) })
        #expect(bob.all.count == 20)  // once each, and nothing meant for carol
        #expect(carol.all.last?.fields["topic"] == "secret")
        #expect(carol.all.last?.fields["payload"] == "for carol")
        #expect(carol.all.last?.fields["participant"] == "alice")
        for daemon in daemons { await daemon.stop() }
    }

    @Test("unreliable messages never block the sender, and a flood of them is dropped, not queued")
    func unreliable() async throws {
        let server = try await InProcessServer()
        defer { server.stop() }
        let daemons = try await server.joinedRoom(["alice", "bob"], room: "cursor")
        let bob = Collected(daemons[1], name: "message")
        let started = monotonicNow()
        for index in 0..<500 {
            let reply = try await daemons[0].request(
                .sendMessage(.init(topic: "cursor", payload: [.number(Double(index)), 0], reliable: false))).get()
            #expect(reply["delivered"] == nil)
        }
        #expect(monotonicNow() - started < 10)  // no waiting for anyone
        // Paced under the server's budgets: a burst went at once, then the newest of the topic.
        #expect(await eventually { bob.all.last?.fields["payload"] == [499, 0] })
        #expect(bob.all.count < 500)
        let positions = bob.all.compactMap { $0.fields["payload"]?.arrayValue?.first?.numberValue }
        #expect(positions == positions.sorted())  // never an older position after a newer one
        _ = try await daemons[0].request(.chat("still here")).get()
        #expect((try await daemons[0].request(.getStatus).get())["room"]?["session"] == "joined")
        for daemon in daemons { await daemon.stop() }
    }

    @Test("bad requests get clear errors and change nothing")
    func badRequests() async throws {
        #expect(throws: CowatchError(.invalidArgument, "")) { try ControlCommand(arguments: ["chat", ""]) }
        #expect(throws: CowatchError(.invalidArgument, "")) { try ControlCommand(arguments: ["chat", "bell\u{7}"]) }
        #expect(throws: CowatchError(.invalidArgument, "")) { try ControlCommand(arguments: ["send_message", "Bad Topic", 1]) }
        #expect(throws: CowatchError(.invalidArgument, "")) {
            try ControlCommand(arguments: ["send_message", "t", .string(String(repeating: "x", count: 70_000))])
        }
        #expect(throws: CowatchError(.invalidArgument, "")) { try ControlCommand(arguments: ["send_message", "t", 1, ["a b"]]) }
        #expect(throws: CowatchError(.invalidArgument, "")) { try ControlCommand(arguments: ["send_message", "t", 1, "all", "maybe"]) }
        let alone = try await DaemonUnderTest(name: "solo")
        #expect(await alone.request(.chat("hi")).failure?.code == .notInRoom)
        await alone.stop()
    }
}

extension Result {
    var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}
