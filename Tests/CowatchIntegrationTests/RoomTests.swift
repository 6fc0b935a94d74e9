import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// One real `cowatch-server` and real `cowatchd` processes (headless libmpv, a real ffmpeg-made
/// file with audio and video) in one room. Bounds are generous for a noisy 2-core machine; the
/// benchmark (`cowatch-bench`) reports the real figures.
@Suite("A room of real daemons", .serialized)
struct RoomTests {
    /// Pairwise skew allowed once the room has had two seconds to settle after an action.
    static let skewBound = 0.050
    static let oneFrame = 0.045

    struct Room {
        let server: ServerProcess
        var daemons: [DaemonProcess] = []
        var clients: [ControlClient] = []
        var listeners: [ControlClient] = []
        /// The observer's view: each player's own mpv IPC socket.
        var probes: [ControlClient] = []
        let media: String
        let roomName: String

        init(names: [String], media: String, roomName: String = "it-room") throws {
            server = try ServerProcess()
            self.media = media
            self.roomName = roomName
            for name in names { try add(name) }
            for client in clients { try waitJoined(client, participants: names.count) }
        }

        mutating func add(_ name: String) throws {
            let daemon = try DaemonProcess(
                name: name, media: media,
                extraArguments: ["--join", server.address, "--room", roomName, "--no-osd"])
            daemons.append(daemon)
            clients.append(try daemon.client())
            listeners.append(try daemon.client())
            probes.append(try daemon.playerProbe())
            _ = try listeners.last!.status()  // subscribed from here on
        }

        func waitJoined(_ client: ControlClient, participants: Int, timeout: Double = 15) throws {
            let deadline = monotonicNow() + timeout
            while monotonicNow() < deadline {
                let status = try client.request(.getStatus)
                if status["room"]?["session"] == "joined",
                    (try client.request(.getParticipants)).arrayValue?.count == participants
                {
                    return
                }
                sleepSeconds(0.05)
            }
            throw TestFailure("not joined with \(participants) participants in \(timeout) s")
        }

        /// Every listener receives a notice for `action` by `actor`; returns them.
        func expectNotices(action: String, actor: String, timeout: Double = 5) throws -> [ControlEvent] {
            var notices: [ControlEvent] = []
            for listener in listeners {
                let notice = try listener.waitForEvent(named: "notice", timeout: timeout) {
                    $0.fields["action"]?.stringValue == action && $0.fields["participant"]?.stringValue == actor
                }
                guard let notice else { throw TestFailure("a participant missed \(actor)'s \(action) notice") }
                notices.append(notice)
            }
            return notices
        }

        func skew(rate: Double = 1, property: String = "audio-pts") -> Double? {
            SkewSampler(clients: probes, property: property).skew(rate: rate)
        }

        /// Max skew over a few rounds after letting the room settle.
        func settledSkew(after seconds: Double = 2, rate: Double = 1) -> Double {
            sleepSeconds(seconds)
            let samples = SkewSampler(clients: probes).sample(count: 10, interval: 0.05, rate: rate)
            return samples.max() ?? .infinity
        }
    }

    @Test("play, pause, seek and speed from different participants keep three players together")
    func actions() throws {
        let room = try Room(names: ["alice", "bob", "carol"], media: try TestMedia.audioVideo())
        let (alice, bob, carol) = (room.clients[0], room.clients[1], room.clients[2])

        // alice plays: everyone starts together.
        try alice.request(.play)
        let play = try room.expectNotices(action: "play", actor: "alice")
        #expect(play.allSatisfy { $0.fields["text"]?.stringValue?.hasPrefix("alice played") == true })
        let afterPlay = room.settledSkew()
        #expect(afterPlay < Self.skewBound, "skew after play \(afterPlay)")
        for client in room.clients { #expect(try client.status().paused == false) }

        // bob pauses: everyone stops on bob's frame.
        try bob.request(.pause)
        let pause = try room.expectNotices(action: "pause", actor: "bob")
        let pausedAt = try #require(pause[0].fields["position"]?.numberValue)
        sleepSeconds(1)
        for client in room.clients {
            let status = try client.status()
            #expect(status.paused)
            #expect(abs((status.position ?? -1) - pausedAt) <= Self.oneFrame, "\(status.name) at \(status.position ?? -1), bob at \(pausedAt)")
        }
        let positions = try room.clients.map { try $0.status().position ?? -1 }
        #expect((positions.max()! - positions.min()!) < 0.002, "paused positions \(positions)")

        // carol seeks while paused; notice carries from and to.
        try carol.request(.seek(seconds: 40, mode: .absolute))
        let seek = try room.expectNotices(action: "seek", actor: "carol")
        #expect(seek.allSatisfy { $0.fields["to"]?.numberValue == 40 && $0.fields["from"] != nil })
        sleepSeconds(1)
        for client in room.clients {
            #expect(abs((try client.status().position ?? -1) - 40) <= Self.oneFrame)
        }

        // alice plays again, then bob seeks while playing: the group resumes together.
        try alice.request(.play)
        _ = try room.expectNotices(action: "play", actor: "alice")
        sleepSeconds(1)
        try bob.request(.seek(seconds: 20, mode: .absolute))
        _ = try room.expectNotices(action: "seek", actor: "bob")
        let afterSeek = room.settledSkew()
        #expect(afterSeek < Self.skewBound, "skew after seek \(afterSeek)")
        for client in room.clients {
            let status = try client.status()
            #expect(!status.paused)
            #expect((status.position ?? 0) > 20 && (status.position ?? 0) < 25)
        }

        // carol changes the speed for everyone.
        try carol.request(.speed(1.5))
        let speed = try room.expectNotices(action: "speed", actor: "carol")
        #expect(speed.allSatisfy { $0.fields["rate"]?.numberValue == 1.5 })
        let afterSpeed = room.settledSkew(rate: 1.5)
        #expect(afterSpeed < Self.skewBound, "skew after speed \(afterSpeed)")
        for client in room.clients {
            let speedNow = try client.status().speed
            #expect(abs(speedNow - 1.5) < 1.5 * 0.051, "speed \(speedNow)")
        }
    }

    @Test("video-only media stays together by the instants frames change")
    func videoOnly() throws {
        let room = try Room(names: ["vera", "walt"], media: try TestMedia.videoOnly(), roomName: "video")
        try room.clients[0].request(.seek(seconds: 5, mode: .absolute))
        try room.clients[1].request(.play)
        _ = try room.expectNotices(action: "play", actor: "walt")
        sleepSeconds(2)
        for client in room.clients {
            #expect(try client.request(.getStatus)["drift"]?["source"] == "frames")
        }
        // Debug builds answer slowly: accept a coarser bracket (±5 ms) than the benchmark does.
        let skews = FrameSkewSampler(clients: room.probes, maxBracket: 0.01).sample(seconds: 3, rate: 1)
        #expect(skews.count > 10, "too few frames resolved: \(skews.count)")
        let worst = skews.sorted().dropLast(skews.count / 20).last ?? .infinity  // p95: the bound is for steady state
        #expect(worst < Self.skewBound, "video-only skew p95 \(worst)")
    }

    @Test("a late joiner aligns without moving the others, and everyone hears of it")
    func lateJoiner() throws {
        var room = try Room(names: ["alice", "bob", "carol"], media: try TestMedia.audioVideo(), roomName: "late")
        try room.clients[0].request(.seek(seconds: 10, mode: .absolute))
        try room.clients[0].request(.play)
        _ = try room.expectNotices(action: "play", actor: "alice")
        sleepSeconds(1.5)
        let seeksBefore = try room.clients.map { try $0.request(.getStatus)["drift"]?["seeks"]?.numberValue ?? -1 }
        let before = try #require(SkewSampler(clients: room.probes).positions(rate: 1))

        try room.add("dave")
        try room.waitJoined(room.clients[3], participants: 4)
        let joins = try room.listeners.prefix(3).map { listener in
            try listener.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "join" && $0.fields["participant"] == "dave" }
        }
        #expect(joins.allSatisfy { $0 != nil })

        let skew = room.settledSkew(after: 2.5)
        #expect(skew < Self.skewBound, "skew with the late joiner \(skew)")
        // The first three kept playing straight through: no seeks, positions moved on by elapsed time.
        let seeksAfter = try room.clients.prefix(3).map { try $0.request(.getStatus)["drift"]?["seeks"]?.numberValue ?? -1 }
        #expect(Array(seeksBefore) == seeksAfter)
        let after = try #require(SkewSampler(clients: Array(room.probes.prefix(3))).positions(rate: 1))
        #expect(after[0] > before[0] + 2)
        #expect(try room.clients[3].status().paused == false)
    }

    @Test("changes made in the player itself become group actions; our own corrections never do")
    func playerInputBecomesGroupAction() throws {
        let server = try ServerProcess()
        let media = try TestMedia.audioVideo()
        let directory = DaemonProcess.makeDirectory()
        let mpvSocket = directory + "/alice-mpv.sock"
        let alice = try DaemonProcess(
            name: "alice", media: media,
            extraArguments: ["--join", server.address, "--room", "keys", "--no-osd", "--mpv", "input-ipc-server=\(mpvSocket)"],
            directory: directory)
        let bob = try DaemonProcess(name: "bob", media: media, extraArguments: ["--join", server.address, "--room", "keys", "--no-osd"])
        let bobClient = try bob.client()
        let bobEvents = try bob.client()
        let deadline = monotonicNow() + 15
        while monotonicNow() < deadline, try bobClient.request(.getParticipants).arrayValue?.count != 2 { sleepSeconds(0.05) }
        _ = try bobEvents.status()

        try bobClient.request(.play)
        #expect(try bobEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "play" } != nil)
        // Three seconds of steady playback with speed corrections: no notice may appear.
        let stray = try bobEvents.waitForEvent(named: "notice", timeout: 3)
        #expect(stray == nil, "unexpected notice \(String(describing: stray?.fields))")

        // mpv's own IPC stands in for a person pressing keys in alice's window.
        let player = try ControlClient(path: mpvSocket)
        try player.request(["set_property", "pause", true])
        let pause = try bobEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "pause" }
        #expect(pause?.fields["participant"] == "alice")
        #expect(try bobClient.waitForStatus(timeout: 3) { $0.paused }.paused)

        try player.request(["seek", 30, "absolute"])
        let seek = try bobEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "seek" }
        #expect(seek?.fields["participant"] == "alice")
        let landed = try bobClient.waitForStatus(timeout: 5) { abs(($0.position ?? 0) - 30) < 0.1 }
        #expect(abs((landed.position ?? 0) - 30) < 0.1)

        try player.request(["set_property", "speed", 1.5])
        let speed = try bobEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "speed" }
        #expect(speed?.fields["rate"] == 1.5)
        _ = alice
    }

    @Test("two participants with one name: the second is refused with a clear error")
    func nameClash() throws {
        let room = try Room(names: ["bob"], media: try TestMedia.audioVideo(), roomName: "clash")
        let impostor = try DaemonProcess(
            name: "bob", media: room.media, extraArguments: ["--join", room.server.address, "--room", "clash"],
            waitUntilReady: false)
        let status = impostor.waitForExit(timeout: 20)
        #expect(status == 1)
        #expect(impostor.stderr.contains("bob") && impostor.stderr.contains("already"), "\(impostor.stderr)")
        #expect(try room.clients[0].status().name == "bob")
        #expect(try room.clients[0].request(.getParticipants).arrayValue?.count == 1)
    }

    @Test("garbage on the room port disconnects only the sender")
    func garbagePeer() throws {
        let room = try Room(names: ["alice", "bob"], media: try TestMedia.audioVideo(), roomName: "garbage")
        let raw = try RawRoomClient(port: room.server.port)
        raw.send(bytes: Array("\u{0}\u{1}not json at all\n{\"type\":\"action\"}\n".utf8))
        var received = ""
        while let line = raw.readLine(timeout: 5) { received += line }
        // Not TLS: the server's TLS layer refuses it and closes.
        #expect(raw.isClosed(timeout: 5))
        #expect(!received.contains("welcome"))
        // Garbage inside TLS reaches the room protocol, which refuses it and closes.
        let tls = try RawRoomClient(tlsPort: room.server.port)
        tls.send("\u{1}not json at all")
        #expect(tls.read(type: "error", timeout: 10)?["code"]?.stringValue == "protocol-violation")
        // The room carries on.
        try room.clients[0].request(.play)
        _ = try room.expectNotices(action: "play", actor: "alice")
        #expect(try room.clients[1].request(.getParticipants).arrayValue?.count == 2)
    }

    @Test("cowatchd --host --unmanaged embeds the server; a second daemon joins it and may play; leaving is announced")
    func embeddedServer() throws {
        let port = freeLoopbackPort()
        let media = try TestMedia.audioVideo()
        let alice = try DaemonProcess(
            name: "alice", media: media, extraArguments: ["--host", "127.0.0.1:\(port)", "--room", "movie-night", "--no-osd", "--unmanaged"])
        let bob = try DaemonProcess(name: "bob", media: media, extraArguments: ["--join", "127.0.0.1:\(port)", "--room", "movie-night", "--no-osd"])
        let aliceClient = try alice.client()
        let bobClient = try bob.client()
        let deadline = monotonicNow() + 15
        while monotonicNow() < deadline, (try aliceClient.request(.getParticipants)).arrayValue?.count != 2 { sleepSeconds(0.05) }
        #expect(try aliceClient.request(.getParticipants).arrayValue?.count == 2)
        try bobClient.request(.play)
        let playNotice = try aliceClient.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "play" }
        #expect(playNotice?.fields["participant"] == "bob")
        #expect(bob.terminate() == 0)
        let leave = try aliceClient.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "leave" }
        #expect(leave?.fields["participant"] == "bob")
        // alice carries on playing without bob.
        let status = try aliceClient.waitForStatus(timeout: 5) { !$0.paused }
        #expect(!status.paused)
    }
}

@Suite("Leaving and rejoining", .serialized)
struct LeaveJoinTests {
    @Test("leave stops following (the others are told), local control works, join aligns again")
    func leaveAndJoin() throws {
        let server = try ServerProcess()
        let media = try TestMedia.audioVideo()
        let arguments = ["--join", server.address, "--room", "lj", "--no-osd"]
        let amy = try DaemonProcess(name: "amy", media: media, extraArguments: arguments)
        let bo = try DaemonProcess(name: "bo", media: media, extraArguments: arguments)
        let (amyClient, boClient) = (try amy.client(), try bo.client())
        let (amyEvents, boEvents) = (try amy.client(), try bo.client())
        _ = try amyEvents.status()
        _ = try boEvents.status()
        let deadline = monotonicNow() + 15
        while monotonicNow() < deadline, try boClient.request(.getParticipants).arrayValue?.count != 2 { sleepSeconds(0.05) }
        try boClient.request(.play)
        _ = try amyClient.waitForStatus(timeout: 5) { !$0.paused && ($0.position ?? 0) > 0.3 }

        let left = try amyClient.request(.leave)
        #expect(left["room"]?["session"] == "invalidated" && left["room"]?["reason"] == "left")
        #expect(try amyEvents.waitForEvent(named: "session", timeout: 5) { $0.fields["state"] == "invalidated" } != nil)
        let leave = try boEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "leave" }
        #expect(leave?.fields["participant"] == "amy")

        // bo pauses the room; amy no longer follows and keeps playing; her own pause is hers alone.
        try boClient.request(.pause)
        sleepSeconds(0.5)
        #expect(try amyClient.status().paused == false)
        try amyClient.request(.pause)
        #expect(try amyClient.status().paused)
        try amyClient.request(.seek(seconds: 50, mode: .absolute))
        let boAt = try boClient.status().position ?? 0
        #expect(boAt < 40)

        let joined = try amyClient.request(.join)
        #expect(joined["room"]?["session"] == "joined")
        let join = try boEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "join" }
        #expect(join?.fields["participant"] == "amy")
        // Aligned to the group: paused on bo's frame, not at 50.
        let aligned = try amyClient.waitForStatus(timeout: 5) { abs(($0.position ?? 0) - boAt) < 0.05 }
        #expect(aligned.paused)
        #expect(try boClient.status().position == boAt)
    }
}
