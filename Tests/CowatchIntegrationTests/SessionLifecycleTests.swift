import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Issue 5 with real processes: ending for everyone, switching media for everyone, different
/// files, readiness, and waiting (bounded) for a participant whose media arrives slowly.
@Suite("Session lifecycle with real daemons", .serialized, .realProcesses)
struct SessionLifecycleTests {
    @Test("end: everyone's session ends naming who ended it; keep stays open (and can join again), quit exits")
    func endForEveryone() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let group = try await DaemonRoom(room: "end-room")
        try await group.add("ann", media: media)
        try await group.add("ben", media: media, arguments: ["--on-end", "quit"])
        try await group.add("cat", media: media)
        try await group.clients[0].request(.play)
        _ = try await group.clients[2].waitForStatus(timeout: 5) { !$0.paused }

        // Without --yes and without a terminal the CLI refuses: it would end it for everyone.
        let refused = try await runCowatch(["end", "--socket", group.daemons[0].controlPath])
        #expect(refused.status == 1 && refused.stderr.contains("--yes"))
        #expect(try await group.clients[0].status().room?.session == "joined")

        let ended = try await runCowatch(["end", "--yes", "--socket", group.daemons[0].controlPath])
        #expect(ended.status == 0, "\(ended.stderr)")
        let notices = try await group.expectNotices("end", actor: "ann", from: [0, 2])
        #expect(notices.allSatisfy { $0.fields["text"] == "ann ended the activity for everyone" })
        for index in [0, 2] {
            let session = try await group.listeners[index].waitForEvent(named: "session", timeout: 5) {
                $0.fields["state"] == "invalidated"
            }
            #expect(session?.fields["reason"] == "ended-by" && session?.fields["by"] == "ann")
        }
        #expect(await group.daemons[1].waitForExit(timeout: 10) == 0, "ben should quit on end:\n\(group.daemons[1].stderr)")
        // cat keeps its player: still answering, still at its place, following nobody.
        let cat = try await group.clients[2].status()
        #expect(cat.room?.session == "invalidated" && cat.room?.endedBy == "ann")
        #expect(cat.duration != nil)
        try await group.clients[2].request(.pause)  // acts on cat's player alone now
        #expect(try await group.clients[2].status().paused)
        // A new session: cat joins a fresh room.
        let joined = try await group.clients[2].request(.join)
        #expect(joined["room"]?["session"] == "joined")
    }

    @Test("open: everyone switches to the new media, the group waits for all to load, then plays together")
    func openForEveryone() async throws {
        let first = try await TestMedia.file(.audioVideo)
        // A room opens network URLs only: the second film comes over local HTTP, at full speed.
        let http = try SlowMediaServer(file: try await TestMedia.file(.videoOnly))
        defer { http.close() }
        let second = http.url
        let group = try await DaemonRoom(room: "open-room")
        // eve is a member: the others follow her switch at once because they trust its host.
        try await group.add("dee", media: first, arguments: ["--trust-host", "127.0.0.1"])
        try await group.add("eve", media: first)
        try await group.clients[0].request(.play)
        _ = try await group.clients[1].waitForStatus(timeout: 5) { !$0.paused && ($0.position ?? 0) > 1 }

        let reply = try await group.clients[1].request(.open(.init(url: second, title: "Second film")))
        #expect(reply["room"]?["activity"]?["opened_by"] == "eve")
        let notices = try await group.expectNotices("open", actor: "eve")
        #expect(notices.allSatisfy { $0.fields["text"] == "eve switched to Second film" })
        // Both load the new file and start from its beginning, together.
        for client in group.clients {
            let status = try await client.waitForStatus(timeout: 20) { $0.media == second && !$0.paused && ($0.position ?? 0) > 0.5 }
            #expect(status.room?.activity.id == 1)
            #expect(status.room?.activity.title == "Second film")
            #expect((status.position ?? 99) < 10, "started from the beginning of the new media")
        }
        await pause(2)
        let positions = try await group.positions()
        #expect(positions.max()! - positions.min()! < 0.1, "positions after open \(positions)")
        // A late joiner with the old file is switched to the room's media.
        try await group.add("fay", media: first, arguments: ["--trust-host", "127.0.0.1"])
        let fay = try await group.clients[2].waitForStatus(timeout: 20) { $0.media == second && !$0.paused }
        #expect(fay.room?.activity.openedBy == "eve")
    }

    @Test("two switches at once: everyone ends on the one the room applied last, without a false different-file warning")
    func openTwiceQuickly() async throws {
        let firstHTTP = try SlowMediaServer(file: try await TestMedia.file(.audioVideo))
        let secondHTTP = try SlowMediaServer(file: try await TestMedia.file(.videoOnly))
        defer {
            firstHTTP.close()
            secondHTTP.close()
        }
        let first = firstHTTP.url
        let second = secondHTTP.url
        let group = try await DaemonRoom(room: "twice-room")
        // lou is a member: kai follows his switch at once because kai trusts its host.
        try await group.add("kai", media: try await TestMedia.file(.audioVideo), arguments: ["--trust-host", "127.0.0.1"])
        try await group.add("lou", media: try await TestMedia.file(.audioVideo))
        // Both at once: each daemon gets the second switch while the first file is still loading.
        let started = monotonicNow()
        for (index, url) in [second, first].enumerated() {
            let command = ControlCommand.open(.init(url: url, title: "switch \(index)"))
            let line: JSONValue = ["command": .array(command.arguments), "request_id": .number(Double(50 + index))]
            try await group.clients[index].sendLine(line.encoded())
        }
        for index in 0..<2 { _ = try await group.clients[index].awaitReply(requestID: .number(Double(50 + index))) }
        let final = try await group.clients[0].status().room?.activity.url
        let expected = try #require(final)
        for client in group.clients {
            let status = try await client.waitForStatus(timeout: 20) {
                $0.media == expected && $0.room?.activity.id == 2 && !$0.paused && ($0.position ?? 0) > 0.3
            }
            #expect(status.duration.map { abs($0 - 75) < 1 } == true)
        }
        // mpv may skip a file replaced before it started: no load may wait for events that never come.
        #expect(monotonicNow() - started < 10, "the switch took \(monotonicNow() - started) s")
        let warning = try await group.listeners[0].waitForEvent(named: "notice", timeout: 2) { $0.fields["action"] == "mismatch" }
        #expect(warning == nil, "false warning: \(warning.map { JSONValue.object($0.fields).jsonString } ?? "")")
    }

    @Test("open with a URL nobody can open: each daemon tries the fallback, and the group plays it")
    func openFallback() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let http = try SlowMediaServer(file: try await TestMedia.file(.videoOnly))
        defer { http.close() }
        let fallback = http.url
        let group = try await DaemonRoom(room: "fallback-room")
        try await group.add("gil", media: media)
        try await group.add("hal", media: media)
        // Port 9 (discard) on loopback: nobody listens, the connection is refused at once.
        try await group.clients[0].request(.open(.init(url: "http://127.0.0.1:9/cowatch-missing.mkv", fallbackURL: fallback)))
        for client in group.clients {
            _ = try await client.waitForStatus(timeout: 20) { $0.media == fallback && !$0.paused && ($0.position ?? 0) > 0.3 }
        }
        let error = try await group.listeners[1].waitForEvent(named: "error", timeout: 1) { $0.fields["code"] == "media-unavailable" }
        #expect(error?.fields["message"]?.stringValue?.contains("fallback") == true)
    }

    @Test("open of a stream that never answers: after the open timeout each daemon tries the fallback")
    func openTimesOut() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let fallbackHTTP = try SlowMediaServer(file: try await TestMedia.file(.videoOnly))
        let http = try SlowMediaServer(file: media)
        defer {
            http.close()
            fallbackHTTP.close()
        }
        let fallback = fallbackHTTP.url
        http.stall(for: 120)
        let group = try await DaemonRoom(room: "timeout-room")
        try await group.add("ivy", media: media, arguments: ["--open-timeout", "3"])
        try await group.add("jay", media: media, arguments: ["--open-timeout", "3"])
        let started = monotonicNow()
        try await group.clients[0].request(.open(.init(url: http.url, fallbackURL: fallback)))
        let timedOut = try await group.listeners[1].waitForEvent(named: "error", timeout: 10) { $0.fields["code"] == "timeout" }
        #expect(timedOut != nil)
        for client in group.clients {
            _ = try await client.waitForStatus(timeout: 20) { $0.media == fallback && !$0.paused }
        }
        #expect(monotonicNow() - started >= 2.5)
        // Not a source for a room: mpv's internal ones are refused by the daemon that would send
        // them (every daemon would refuse them too: see OpenPolicyTests), and nothing changes.
        do {
            try await group.clients[1].request(.open(.init(url: "av://lavfi:anullsrc")))
            Issue.record("an open of av:// was sent to the room")
        } catch {
            #expect(error.code == .openRefused && error.message.contains("internal sources"), "\(error)")
        }
        let status = try await group.clients[0].status()
        #expect(status.room?.canPlay == true && status.room?.activity.id == 1)
    }

    @Test("different files: everyone gets a warning naming who has a different one; playback still works")
    func mismatchedFiles() async throws {
        let group = try await DaemonRoom(room: "mismatch-room")
        try await group.add("ida", media: try await TestMedia.file(.audioVideo))
        try await group.add("jon", media: try await TestMedia.file(.videoOnly))
        let warnings = try await group.expectNotices("mismatch", actor: "jon")
        for warning in warnings {
            #expect(warning.fields["others"] == ["ida"])
            let text = warning.fields["text"]?.stringValue ?? ""
            #expect(text.hasPrefix("jon has a different file than ida: size "), "\(text)")
        }
        try await group.clients[0].request(.play)
        _ = try await group.clients[1].waitForStatus(timeout: 5) { !$0.paused && ($0.position ?? 0) > 0.5 }
        // The same file produces no warning.
        try await group.add("kim", media: try await TestMedia.file(.audioVideo))
        let none = try await group.listeners[2].waitForEvent(named: "notice", timeout: 2) { $0.fields["action"] == "mismatch" }
        #expect(none == nil)
    }

    @Test("play when everyone is ready: a play waits and says who is not ready; ready starts everyone")
    func readiness() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let group = try await DaemonRoom(room: "ready-room", venue: .server(arguments: ["--play-when-ready", "--wait-timeout", "30"]))
        try await group.add("lee", media: media)
        try await group.add("max", media: media)
        #expect(try await group.clients[0].status().room?.policy.playWhenReady == true)

        try await group.clients[0].request(.play)
        let waiting = try await group.expectNotices("waiting")
        #expect(waiting.allSatisfy { $0.fields["text"] == "waiting for max (not ready)" })
        await pause(1)
        for client in group.clients { #expect(try await client.status().paused, "nobody plays before max is ready") }

        let reply = try await group.clients[1].request(.setReady(true))
        #expect(reply["room"]?["ready"] == true)
        _ = try await group.expectNotices("ready", actor: "max")
        for client in group.clients { _ = try await client.waitForStatus(timeout: 5) { !$0.paused && ($0.position ?? 0) > 0.2 } }
        // The participant list (sent every second) shows both ready.
        let deadline = monotonicNow() + 5
        var participants: [JSONValue] = []
        repeat {
            participants = try await group.clients[0].request(.getParticipants).arrayValue ?? []
            if participants.count == 2 && participants.allSatisfy({ $0["ready"] == true }) { break }
            await pause(0.1)
        } while monotonicNow() < deadline
        #expect(participants.count == 2 && participants.allSatisfy { $0["ready"] == true }, "\(participants)")
    }

    @Test("readiness is bounded: after the wait timeout the group plays without the one not ready")
    func readinessBounded() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let group = try await DaemonRoom(room: "ready-bound", venue: .server(arguments: ["--play-when-ready", "--wait-timeout", "2"]))
        try await group.add("ned", media: media, arguments: ["--ready"])
        try await group.add("oli", media: media)
        let started = monotonicNow()
        try await group.clients[0].request(.play)
        let continued = try await group.expectNotices("continued", timeout: 10)
        #expect(continued.allSatisfy { $0.fields["text"] == "continuing without oli (not ready)" })
        #expect(monotonicNow() - started >= 1.8)
        for client in group.clients { _ = try await client.waitForStatus(timeout: 5) { !$0.paused } }
    }

    @Test("a viewer whose media arrives slowly over HTTP: the group waits for it (bounded), goes on, and it catches up")
    func slowViewer() async throws {
        let file = try await TestMedia.file(.audioVideo)
        // About 3× the media's bitrate, so bob's player keeps a small buffer ahead; then it stops.
        let http = try SlowMediaServer(file: file, bytesPerSecond: 150_000)
        defer { http.close() }
        let group = try await DaemonRoom(room: "slow-room", venue: .server(arguments: ["--wait-timeout", "3"]))
        try await group.add("ann", media: file)
        try await group.add("bob", media: http.url, arguments: [
            "--mpv", "cache=yes", "--mpv", "demuxer-max-bytes=150KiB", "--mpv", "demuxer-readahead-secs=2",
            "--mpv", "cache-pause-wait=1",
        ])
        try await group.clients[0].request(.play)
        for client in group.clients { _ = try await client.waitForStatus(timeout: 10) { !$0.paused && ($0.position ?? 0) > 2 } }

        http.stall(for: 12)
        let stalledAt = monotonicNow()
        // bob's cache runs dry: everyone is told, and ann's player holds.
        let waiting = try await group.expectNotices("waiting", actor: "bob", timeout: 15, from: [0])
        #expect(waiting[0].fields["text"] == "waiting for bob (buffering)")
        _ = try await group.clients[0].waitForStatus(timeout: 2) { $0.paused }
        let heldAt = monotonicNow()
        // Bounded: after the wait timeout the group goes on without bob, who is still stalled.
        let continued = try await group.expectNotices("continued", actor: "bob", timeout: 8, from: [0])
        #expect(continued[0].fields["text"] == "continuing without bob (buffering)")
        #expect(monotonicNow() - heldAt > 2, "the group waited for bob before going on")
        _ = try await group.clients[0].waitForStatus(timeout: 2) { !$0.paused }
        #expect(monotonicNow() - stalledAt < 12, "the group went on while bob's link was still dark")
        // Once bytes flow again bob catches up on his own, without holding anyone.
        let deadline = monotonicNow() + 30
        var gap = Double.infinity
        while monotonicNow() < deadline {
            let positions = try await group.positions()
            let bob = try await group.clients[1].status()
            gap = abs(positions[0] - positions[1])
            if !bob.paused && bob.room != nil && bob.room?.stall == nil && gap < 0.1 { break }
            await pause(0.2)
        }
        #expect(gap < 0.1, "bob did not catch up: \(gap) s apart")
        #expect(try await group.clients[0].status().paused == false)
    }
}
