import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// What a person sees when something is wrong, with real processes: a server that is not there
/// or is not a Cowatch server is said at once; an `open` nobody can load fails and leaves the
/// room where it was; the CLI's answers describe the state an action left.
@Suite("Clear failures and answers", .realProcesses)
struct ClearFailureTests {
    @Test("no server, or an HTTP server on the port: said within seconds; the session stays waiting")
    func unreachable() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let port = freeLoopbackPort()
        let lonely = try await DaemonProcess(name: "lonely", media: media, extraArguments: ["--join", "127.0.0.1:\(port)", "--room", "r"])
        let web = try AnsweringWebServer()
        let lost = try await DaemonProcess(name: "lost", media: media, extraArguments: ["--join", "127.0.0.1:\(web.port)", "--room", "r"])
        defer {
            lonely.terminateInBackground()
            lost.terminateInBackground()
            web.close()
        }
        let deadline = monotonicNow() + 5
        while monotonicNow() < deadline, !(lonely.stderr.contains("cannot reach") && lost.stderr.contains("without TLS")) {
            await pause(0.05)
        }
        #expect(lonely.stderr.contains("cannot reach the room server at 127.0.0.1:\(port)"))
        #expect(lonely.stderr.contains("connection refused"))
        #expect(lost.stderr.contains("answered without TLS"))
        for daemon in [lonely, lost] {
            let room = try await daemon.client().status().room
            #expect(room?.session == "waiting")  // never in the room: not "server-gone"
            #expect(room?.lastError != nil)
        }
        // Said once, not on every retry.
        await pause(1.5)
        #expect(lonely.stderr.components(separatedBy: "cannot reach").count == 2)
    }

    @Test("open of a URL nobody can load fails with the reason (exit 1) and the room stays on its media; replies show the new state")
    func unopenable() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let web = try SlowMediaServer(file: media)
        let room = try await DaemonRoom(names: ["alice", "bob"], media: media, room: "broken")
        defer {
            room.stopInBackground()
            web.close()
        }
        let (alice, bob) = (room.daemons[0], room.daemons[1])
        await pause(0.5)  // the room's clock

        let played = try await runCowatch(["play", "--socket", alice.controlPath])
        #expect(played.status == 0)
        #expect(played.stdout.contains("playing"), "cowatch play answered \(played.stdout)")
        let seeked = try await runCowatch(["seek", "20", "--socket", alice.controlPath])
        #expect(seeked.stdout.contains("0:00:20"), "cowatch seek 20 answered \(seeked.stdout)")

        let missing = "http://127.0.0.1:\(web.port)/missing/film.mkv"
        let opened = try await runCowatch(["open", missing, "--socket", alice.controlPath])
        #expect(opened.status != 0)
        #expect(opened.stderr.contains("404"), "cowatch open said \(opened.stderr)")
        #expect(!opened.stderr.contains("youtube-dl"))
        #expect(opened.stderr.contains("stays on"))
        for daemon in [alice, bob] {
            let status = try await daemon.client().status()
            #expect(status.room?.activity.id == 0)
            #expect(status.position != nil)
        }
        // The room still plays, together: bob's player moves on (once alice's is back on its media:
        // the group holds for a player still loading, seconds on a loaded machine).
        let deadline = monotonicNow() + 20
        var moved = 0.0
        while monotonicNow() < deadline {
            let before = try await bob.client().status().position ?? 0
            await pause(0.5)
            moved = (try await bob.client().status().position ?? 0) - before
            if moved > 0.2 { break }
        }
        #expect(moved > 0.2, "bob's player moved \(moved) s in 0.5 s")
    }
}

extension ClearFailureTests {
    @Test("a video output that cannot start blames the output, not the film")
    func brokenOutput() async throws {
        let media = try await TestMedia.file(.audioVideo)
        // xv needs an X display, which the test machine does not have.
        let daemon = try await DaemonProcess(
            name: "novo", media: media, extraArguments: ["--mpv", "vo=xv"], waitUntilReady: false)
        let status = await daemon.waitForExit(timeout: 20)
        #expect(status != nil && status != 0)
        #expect(daemon.stderr.contains("video output could not start (--vo)"), "stderr: \(daemon.stderr)")
        #expect(!daemon.stderr.contains("cannot open"))
    }

    @Test("dragging the seek bar in mpv: one group seek for the drag, none for a drag back to where it began")
    func seekBarDrag() async throws {
        let room = try await DaemonRoom(names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "drag")
        defer { room.stopInBackground() }
        let alice = room.daemons[0]
        let (bobClient, events) = (room.clients[1], room.listeners[1])
        await pause(0.5)  // the room's clock

        // mpv's own IPC stands in for the mouse: 25 keyframe seeks 30 ms apart, as a drag makes.
        // Timed on a thread of their own (`offPool`): gaps this short must not wait for the test's
        // task to be resumed between them.
        let player = try ControlClient(path: alice.mpvSocket)
        try await offPool { () throws(CowatchError) in
            for step in 1...25 {
                try player.request(["seek", .number(Double(step)), "absolute+keyframes"])
                sleepSeconds(0.03)
            }
        }
        var seeks = 0
        let until = monotonicNow() + 3
        while monotonicNow() < until {
            if let event = try await events.waitForEvent(named: "notice", timeout: max(0.05, until - monotonicNow())),
                event.fields["action"] == "seek"
            {
                seeks += 1
            }
        }
        #expect(seeks == 1)
        let landed = try await bobClient.waitForStatus(timeout: 5) { abs(($0.position ?? 0) - 25) < 1.5 }
        #expect(abs((landed.position ?? 0) - 25) < 1.5)

        // Away and straight back: nobody hears of it.
        try await player.request(["seek", 60, "absolute"])
        await pause(0.05)
        let back = try await alice.client().status().drift?.expected ?? 25
        try await player.request(["seek", .number(back), "absolute"])
        let stray = try await events.waitForEvent(named: "notice", timeout: 2) { $0.fields["action"] == "seek" }
        #expect(stray == nil, "unexpected \(String(describing: stray?.fields))")
    }
}

/// A web server on a loopback port that answers anything with `400 Bad Request` and closes, as
/// most HTTP servers do to a TLS hello.
final class AnsweringWebServer: Sendable {
    let port: Int
    private let listener: Int32

    init() throws {
        let (fd, port) = try LoopbackSocket.listen(what: "the answering web server")
        listener = fd
        self.port = port
        Thread.detachNewThread {
            while true {
                let connection = acceptClosedOnExec(fd)
                if connection < 0 { return }
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = recv(connection, &buffer, buffer.count, 0)
                let answer = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
                _ = send(connection, answer, answer.count, Int32(MSG_NOSIGNAL))
                Glibc.close(connection)
            }
        }
    }

    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
    }
}
