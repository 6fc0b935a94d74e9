import CowatchClient
import CowatchCore
import CowatchObserver
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

    @Test("play, pause, seek and speed from different participants keep three players together")
    func actions() throws {
        let room = try DaemonRoom(names: ["alice", "bob", "carol"], media: try TestMedia.audioVideo(), room: "it-room", probes: true)
        let (alice, bob, carol) = (room.clients[0], room.clients[1], room.clients[2])

        // alice plays: everyone starts together.
        try alice.request(.play)
        let play = try room.expectNotices("play", actor: "alice", timeout: 5)
        #expect(play.allSatisfy { $0.fields["text"]?.stringValue?.hasPrefix("alice played") == true })
        let afterPlay = room.settledSkew()
        #expect(afterPlay < Self.skewBound, "skew after play \(afterPlay)")
        for client in room.clients { #expect(try client.status().paused == false) }

        // bob pauses: everyone stops on bob's frame.
        try bob.request(.pause)
        let pause = try room.expectNotices("pause", actor: "bob", timeout: 5)
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
        let seek = try room.expectNotices("seek", actor: "carol", timeout: 5)
        #expect(seek.allSatisfy { $0.fields["to"]?.numberValue == 40 && $0.fields["from"] != nil })
        sleepSeconds(1)
        for client in room.clients {
            #expect(abs((try client.status().position ?? -1) - 40) <= Self.oneFrame)
        }

        // alice plays again, then bob seeks while playing: the group resumes together.
        try alice.request(.play)
        _ = try room.expectNotices("play", actor: "alice", timeout: 5)
        sleepSeconds(1)
        try bob.request(.seek(seconds: 20, mode: .absolute))
        _ = try room.expectNotices("seek", actor: "bob", timeout: 5)
        let afterSeek = room.settledSkew()
        #expect(afterSeek < Self.skewBound, "skew after seek \(afterSeek)")
        for client in room.clients {
            let status = try client.status()
            #expect(!status.paused)
            #expect((status.position ?? 0) > 20 && (status.position ?? 0) < 25)
        }

        // carol changes the speed for everyone.
        try carol.request(.speed(1.5))
        let speed = try room.expectNotices("speed", actor: "carol", timeout: 5)
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
        let room = try DaemonRoom(names: ["vera", "walt"], media: try TestMedia.videoOnly(), room: "video", probes: true)
        try room.clients[0].request(.seek(seconds: 5, mode: .absolute))
        try room.clients[1].request(.play)
        _ = try room.expectNotices("play", actor: "walt", timeout: 5)
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
        let room = try DaemonRoom(names: ["alice", "bob", "carol"], media: try TestMedia.audioVideo(), room: "late", probes: true)
        try room.clients[0].request(.seek(seconds: 10, mode: .absolute))
        try room.clients[0].request(.play)
        _ = try room.expectNotices("play", actor: "alice", timeout: 5)
        sleepSeconds(1.5)
        let seeksBefore = try room.clients.map { try $0.request(.getStatus)["drift"]?["seeks"]?.numberValue ?? -1 }
        let before = try #require(SkewSampler(clients: room.probes).positions(rate: 1))

        try room.add("dave", waitJoined: false)
        try room.waitJoined(3, participants: 4, timeout: 15)
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
        let room = try DaemonRoom(names: ["alice", "bob"], media: try TestMedia.audioVideo(), room: "keys")
        let (bobClient, bobEvents) = (room.clients[1], room.listeners[1])

        try bobClient.request(.play)
        #expect(try bobEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "play" } != nil)
        // Three seconds of steady playback with speed corrections: no notice may appear.
        let stray = try bobEvents.waitForEvent(named: "notice", timeout: 3)
        #expect(stray == nil, "unexpected notice \(String(describing: stray?.fields))")

        // mpv's own IPC stands in for a person pressing keys in alice's window.
        let player = try room.daemons[0].playerProbe()
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
    }

    @Test("two participants with one name: the second is refused with a clear error, and stays up out of the room")
    func nameClash() throws {
        let media = try TestMedia.audioVideo()
        let room = try DaemonRoom(names: ["bob"], media: media, room: "clash", probes: true)
        let impostor = try DaemonProcess(
            name: "bob", media: media, extraArguments: ["--join", room.server.address, "--room", "clash"])
        defer { impostor.terminate() }
        let status = try impostor.client().waitForStatus(timeout: 20) { $0.room?.reason == "name-taken" }
        #expect(status.room?.session == "invalidated" && impostor.process.isRunning)
        #expect(impostor.stderr.contains("bob") && impostor.stderr.contains("--name OTHER"), "\(impostor.stderr)")
        #expect(try room.clients[0].status().name == "bob")
        #expect(try room.clients[0].request(.getParticipants).arrayValue?.count == 1)
    }

    @Test("garbage on the room port disconnects only the sender")
    func garbagePeer() throws {
        let room = try DaemonRoom(names: ["alice", "bob"], media: try TestMedia.audioVideo(), room: "garbage", probes: true)
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
        _ = try room.expectNotices("play", actor: "alice", timeout: 5)
        #expect(try room.clients[1].request(.getParticipants).arrayValue?.count == 2)
    }

    @Test("cowatchd --host embeds the server; a second daemon joins it and may play (everyone may, by default); leaving is announced")
    func embeddedServer() throws {
        let room = try DaemonRoom(media: try TestMedia.audioVideo(), room: "movie-night", venue: .hostedByFirst)
        try room.add("alice", waitJoined: false)
        try room.add("bob", waitJoined: false)
        let (aliceClient, aliceEvents, bobClient) = (room.clients[0], room.listeners[0], room.clients[1])
        try? room.waitForParticipants(2, timeout: 15)
        #expect(try aliceClient.request(.getParticipants).arrayValue?.count == 2)
        try bobClient.request(.play)
        let playNotice = try aliceEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "play" }
        #expect(playNotice?.fields["participant"] == "bob")
        #expect(room.daemons[1].terminate() == 0)
        let leave = try aliceEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "leave" }
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
        let room = try DaemonRoom(names: ["amy", "bo"], media: try TestMedia.audioVideo(), room: "lj")
        let (amyClient, boClient) = (room.clients[0], room.clients[1])
        let (amyEvents, boEvents) = (room.listeners[0], room.listeners[1])
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
