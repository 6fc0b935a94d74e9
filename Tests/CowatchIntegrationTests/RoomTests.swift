import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// One real `cowatch-server` and real `cowatchd` processes (headless libmpv, a real ffmpeg-made
/// file with audio and video) in one room. Bounds are generous for a noisy 2-core machine; the
/// benchmark (`cowatch-bench`) reports the real figures.
@Suite("A room of real daemons", .serialized, .realProcesses)
struct RoomTests {
    /// Pairwise skew allowed once the room has had two seconds to settle after an action.
    static let skewBound = 0.050
    static let oneFrame = 0.045

    @Test("play, pause, seek and speed from different participants keep three players together")
    func actions() async throws {
        let room = try await DaemonRoom(names: ["alice", "bob", "carol"], media: try await TestMedia.file(.audioVideo), room: "it-room", probes: true)
        let (alice, bob, carol) = (room.clients[0], room.clients[1], room.clients[2])

        // alice plays: everyone starts together.
        try await alice.request(.play)
        let play = try await room.expectNotices("play", actor: "alice", timeout: 5)
        #expect(play.allSatisfy { $0.fields["text"]?.stringValue?.hasPrefix("alice played") == true })
        let afterPlay = await room.settledSkew()
        #expect(afterPlay < Self.skewBound, "skew after play \(afterPlay)")
        for client in room.clients { #expect(try await client.status().paused == false) }

        // bob pauses: everyone stops on bob's frame.
        try await bob.request(.pause)
        let pauses = try await room.expectNotices("pause", actor: "bob", timeout: 5)
        let pausedAt = try #require(pauses[0].fields["position"]?.numberValue)
        await pause(1)
        for client in room.clients {
            let status = try await client.status()
            #expect(status.paused)
            #expect(abs((status.position ?? -1) - pausedAt) <= Self.oneFrame, "\(status.name) at \(status.position ?? -1), bob at \(pausedAt)")
        }
        let positions = try await room.clients.asyncMap { try await $0.status().position ?? -1 }
        #expect((positions.max()! - positions.min()!) < 0.002, "paused positions \(positions)")

        // carol seeks while paused; notice carries from and to.
        try await carol.request(.seek(seconds: 40, mode: .absolute))
        let seek = try await room.expectNotices("seek", actor: "carol", timeout: 5)
        #expect(seek.allSatisfy { $0.fields["to"]?.numberValue == 40 && $0.fields["from"] != nil })
        await pause(1)
        for client in room.clients {
            #expect(abs((try await client.status().position ?? -1) - 40) <= Self.oneFrame)
        }

        // alice plays again, then bob seeks while playing: the group resumes together.
        try await alice.request(.play)
        _ = try await room.expectNotices("play", actor: "alice", timeout: 5)
        await pause(1)
        try await bob.request(.seek(seconds: 20, mode: .absolute))
        _ = try await room.expectNotices("seek", actor: "bob", timeout: 5)
        let afterSeek = await room.settledSkew()
        #expect(afterSeek < Self.skewBound, "skew after seek \(afterSeek)")
        for client in room.clients {
            let status = try await client.status()
            #expect(!status.paused)
            #expect((status.position ?? 0) > 20 && (status.position ?? 0) < 25)
        }

        // carol changes the speed for everyone.
        try await carol.request(.speed(1.5))
        let speed = try await room.expectNotices("speed", actor: "carol", timeout: 5)
        #expect(speed.allSatisfy { $0.fields["rate"]?.numberValue == 1.5 })
        let afterSpeed = await room.settledSkew(rate: 1.5)
        #expect(afterSpeed < Self.skewBound, "skew after speed \(afterSpeed)")
        for client in room.clients {
            let speedNow = try await client.status().speed
            #expect(abs(speedNow - 1.5) < 1.5 * 0.051, "speed \(speedNow)")
        }
    }

    @Test("video-only media stays together by the instants frames change")
    func videoOnly() async throws {
        let room = try await DaemonRoom(names: ["vera", "walt"], media: try await TestMedia.file(.videoOnly), room: "video", probes: true)
        try await room.clients[0].request(.seek(seconds: 5, mode: .absolute))
        try await room.clients[1].request(.play)
        _ = try await room.expectNotices("play", actor: "walt", timeout: 5)
        await pause(2)
        for client in room.clients {
            #expect(try await client.request(.getStatus)["drift"]?["source"] == "frames")
        }
        // Debug builds answer slowly: accept a coarser bracket (±5 ms) than the benchmark does.
        let skews = await FrameSkewSampler(clients: room.probes, maxBracket: 0.01).sample(seconds: 3, rate: 1)
        #expect(skews.count > 10, "too few frames resolved: \(skews.count)")
        let worst = skews.sorted().dropLast(skews.count / 20).last ?? .infinity  // p95: the bound is for steady state
        #expect(worst < Self.skewBound, "video-only skew p95 \(worst)")
    }

    @Test("a late joiner aligns without moving the others, and everyone hears of it")
    func lateJoiner() async throws {
        let room = try await DaemonRoom(names: ["alice", "bob", "carol"], media: try await TestMedia.file(.audioVideo), room: "late", probes: true)
        try await room.clients[0].request(.seek(seconds: 10, mode: .absolute))
        try await room.clients[0].request(.play)
        _ = try await room.expectNotices("play", actor: "alice", timeout: 5)
        await pause(1.5)
        let seeksBefore = try await room.clients.asyncMap { try await $0.request(.getStatus)["drift"]?["seeks"]?.numberValue ?? -1 }
        let before = try #require(await SkewSampler(clients: room.probes).positions(rate: 1))

        try await room.add("dave", waitJoined: false)
        try await room.waitJoined(3, participants: 4, timeout: 15)
        let joins = try await room.listeners.prefix(3).asyncMap { listener in
            try await listener.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "join" && $0.fields["participant"] == "dave" }
        }
        #expect(joins.allSatisfy { $0 != nil })

        let skew = await room.settledSkew(after: 2.5)
        #expect(skew < Self.skewBound, "skew with the late joiner \(skew)")
        // The first three kept playing straight through: no seeks, positions moved on by elapsed time.
        let seeksAfter = try await room.clients.prefix(3).asyncMap { try await $0.request(.getStatus)["drift"]?["seeks"]?.numberValue ?? -1 }
        #expect(Array(seeksBefore) == seeksAfter)
        let after = try #require(await SkewSampler(clients: Array(room.probes.prefix(3))).positions(rate: 1))
        #expect(after[0] > before[0] + 2)
        #expect(try await room.clients[3].status().paused == false)
    }

    @Test("changes made in the player itself become group actions; our own corrections never do")
    func playerInputBecomesGroupAction() async throws {
        let room = try await DaemonRoom(names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "keys")
        let (bobClient, bobEvents) = (room.clients[1], room.listeners[1])

        try await bobClient.request(.play)
        #expect(try await bobEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "play" } != nil)
        // Three seconds of steady playback with speed corrections: no notice may appear.
        let stray = try await bobEvents.waitForEvent(named: "notice", timeout: 3)
        #expect(stray == nil, "unexpected notice \(String(describing: stray?.fields))")

        // mpv's own IPC stands in for a person pressing keys in alice's window.
        let player = try await room.daemons[0].playerProbe()
        try await player.request(["set_property", "pause", true])
        let pause = try await bobEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "pause" }
        #expect(pause?.fields["participant"] == "alice")
        #expect(try await bobClient.waitForStatus(timeout: 3) { $0.paused }.paused)

        try await player.request(["seek", 30, "absolute"])
        let seek = try await bobEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "seek" }
        #expect(seek?.fields["participant"] == "alice")
        let landed = try await bobClient.waitForStatus(timeout: 5) { abs(($0.position ?? 0) - 30) < 0.1 }
        #expect(abs((landed.position ?? 0) - 30) < 0.1)

        try await player.request(["set_property", "speed", 1.5])
        let speed = try await bobEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "speed" }
        #expect(speed?.fields["rate"] == 1.5)
    }

    @Test("two participants with one name: the second is refused with a clear error, and stays up out of the room")
    func nameClash() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let room = try await DaemonRoom(names: ["bob"], media: media, room: "clash", probes: true)
        let impostor = try await DaemonProcess(
            name: "bob", media: media, extraArguments: ["--join", room.server.address, "--room", "clash"])
        defer { impostor.terminateInBackground() }
        let status = try await impostor.client().waitForStatus(timeout: 20) { $0.room?.reason == "name-taken" }
        #expect(status.room?.session == "invalidated" && impostor.process.isRunning)
        #expect(impostor.stderr.contains("bob") && impostor.stderr.contains("--name OTHER"), "\(impostor.stderr)")
        #expect(try await room.clients[0].status().name == "bob")
        #expect(try await room.clients[0].request(.getParticipants).arrayValue?.count == 1)
    }

    @Test("garbage on the room port disconnects only the sender")
    func garbagePeer() async throws {
        let room = try await DaemonRoom(names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "garbage", probes: true)
        let raw = try RawRoomClient(port: room.server.port)
        await raw.send(bytes: Array("\u{0}\u{1}not json at all\n{\"type\":\"action\"}\n".utf8))
        var received = ""
        while let line = await raw.readLine(timeout: 5) { received += line }
        // Not TLS: the server's TLS layer refuses it and closes.
        #expect(await raw.isClosed(timeout: 5))
        #expect(!received.contains("welcome"))
        // Garbage inside TLS reaches the room protocol, which refuses it and closes.
        let tls = try RawRoomClient(tlsPort: room.server.port)
        await tls.send("\u{1}not json at all")
        #expect(await tls.read(type: "error", timeout: 10)?["code"]?.stringValue == "protocol-violation")
        // The room carries on.
        try await room.clients[0].request(.play)
        _ = try await room.expectNotices("play", actor: "alice", timeout: 5)
        #expect(try await room.clients[1].request(.getParticipants).arrayValue?.count == 2)
    }

    @Test("cowatchd --host embeds the server; a second daemon joins it and may play (everyone may, by default); leaving is announced")
    func embeddedServer() async throws {
        let room = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: "movie-night", venue: .hostedByFirst)
        try await room.add("alice", waitJoined: false)
        try await room.add("bob", waitJoined: false)
        let (aliceClient, aliceEvents, bobClient) = (room.clients[0], room.listeners[0], room.clients[1])
        try? await room.waitForParticipants(2, timeout: 15)
        #expect(try await aliceClient.request(.getParticipants).arrayValue?.count == 2)
        try await bobClient.request(.play)
        let playNotice = try await aliceEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "play" }
        #expect(playNotice?.fields["participant"] == "bob")
        #expect(await room.daemons[1].terminate() == 0)
        let leave = try await aliceEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "leave" }
        #expect(leave?.fields["participant"] == "bob")
        // alice carries on playing without bob.
        let status = try await aliceClient.waitForStatus(timeout: 5) { !$0.paused }
        #expect(!status.paused)
    }
}

@Suite("Leaving and rejoining", .serialized, .realProcesses)
struct LeaveJoinTests {
    @Test("leave stops following (the others are told), local control works, join aligns again")
    func leaveAndJoin() async throws {
        let room = try await DaemonRoom(names: ["amy", "bo"], media: try await TestMedia.file(.audioVideo), room: "lj")
        let (amyClient, boClient) = (room.clients[0], room.clients[1])
        let (amyEvents, boEvents) = (room.listeners[0], room.listeners[1])
        try await boClient.request(.play)
        _ = try await amyClient.waitForStatus(timeout: 5) { !$0.paused && ($0.position ?? 0) > 0.3 }

        let left = try await amyClient.request(.leave)
        #expect(left["room"]?["session"] == "invalidated" && left["room"]?["reason"] == "left")
        #expect(try await amyEvents.waitForEvent(named: "session", timeout: 5) { $0.fields["state"] == "invalidated" } != nil)
        let leave = try await boEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "leave" }
        #expect(leave?.fields["participant"] == "amy")

        // bo pauses the room; amy no longer follows and keeps playing; her own pause is hers alone.
        try await boClient.request(.pause)
        await pause(0.5)
        #expect(try await amyClient.status().paused == false)
        try await amyClient.request(.pause)
        #expect(try await amyClient.status().paused)
        try await amyClient.request(.seek(seconds: 50, mode: .absolute))
        let boAt = try await boClient.status().position ?? 0
        #expect(boAt < 40)

        let joined = try await amyClient.request(.join)
        #expect(joined["room"]?["session"] == "joined")
        let join = try await boEvents.waitForEvent(named: "notice", timeout: 5) { $0.fields["action"] == "join" }
        #expect(join?.fields["participant"] == "amy")
        // Aligned to the group: paused on bo's frame, not at 50.
        let aligned = try await amyClient.waitForStatus(timeout: 5) { abs(($0.position ?? 0) - boAt) < 0.05 }
        #expect(aligned.paused)
        #expect(try await boClient.status().position == boAt)
    }
}
