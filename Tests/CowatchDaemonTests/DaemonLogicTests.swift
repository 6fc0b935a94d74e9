@testable import CowatchDaemon
import CowatchClient
import CowatchCore
import CowatchMpv
import CowatchNet
import CowatchTesting
import Testing

/// The daemon's logic against a simulated player: the start-up load, failure reasons, replies
/// built from the group's applied state, and a person's seeking at the player.
@Suite("Daemon logic on a simulated player")
struct DaemonLogicTests {
    static var notFound: SimulatedPlayer.Source {
        SimulatedPlayer.Source(failure: (-13, [
            .init(level: "error", prefix: "ffmpeg", text: "http: HTTP error 404 Not Found"),
            .init(level: "error", prefix: "stream", text: "Failed to open http://127.0.0.1:9/x.mkv."),
            .init(level: "error", prefix: "ytdl_hook", text: "youtube-dl failed: unexpected error occurred"),
        ]))
    }

    @Test("a 404 is reported as mpv's HTTP error, not youtube-dl's failure after it")
    func notFoundReason() async throws {
        let player = SimulatedPlayer(sources: ["http://127.0.0.1:9/x.mkv": Self.notFound])
        do {
            let daemon = try await DaemonUnderTest(name: "a", media: "http://127.0.0.1:9/x.mkv", player: player)
            await daemon.stop()
            Issue.record("the load should have failed")
        } catch let error as CowatchError {
            #expect(error.code == .mediaUnavailable)
            #expect(error.message.contains("HTTP error 404"))
            #expect(!error.message.contains("youtube-dl"))
        }
    }

    @Test("a video output that cannot start blames the output, not the film")
    func outputFailure() async throws {
        let broken = SimulatedPlayer.Source(failure: (-15, [
            .init(level: "error", prefix: "vo", text: "Error opening/initializing the selected video_out (--vo) device."),
        ]))
        let player = SimulatedPlayer(sources: ["film.mkv": broken])
        do {
            let daemon = try await DaemonUnderTest(name: "a", media: "film.mkv", player: player)
            await daemon.stop()
            Issue.record("the load should have failed")
        } catch let error as CowatchError {
            #expect(error.code == .playerError)
            #expect(error.message.contains("video output"))
            #expect(!error.message.contains("cannot open film.mkv"))
        }
    }

    @Test("the fallback serves when the media fails; a source that never answers times out")
    func fallbackAndTimeout() async throws {
        let player = SimulatedPlayer(sources: ["http://127.0.0.1:9/x.mkv": Self.notFound])
        let daemon = try await DaemonUnderTest(
            name: "a", media: "http://127.0.0.1:9/x.mkv", fallback: "backup.mkv", player: player)
        #expect(daemon.controller.media.current == "backup.mkv")
        await daemon.stop()

        let silent = SimulatedPlayer(sources: ["http://10.255.255.1/x.mkv": .init(silent: true)])
        let started = monotonicNow()
        do {
            let daemon = try await DaemonUnderTest(name: "b", media: "http://10.255.255.1/x.mkv", player: silent, openTimeout: 0.3)
            await daemon.stop()
            Issue.record("the load should have timed out")
        } catch let error as CowatchError {
            #expect(error.code == .timeout)
            #expect(monotonicNow() - started < 10)  // 0.3 s timeout; generous for a loaded machine
        }
    }

    @Test("replies to group actions show the state the action left, not the one before it")
    func replyAfterAction() async throws {
        // On a manual clock: the room's deadlines (keepalives, action timeouts) and the players
        // run on time this test moves, so a loaded machine only makes the test slower.
        let clock = ManualClock()
        let flowing = clock.flow()
        let server = try await InProcessServer(clock: clock)
        defer { server.stop() }
        let alice = try await DaemonUnderTest(name: "alice", player: SimulatedPlayer(clock: clock), room: "r", server: server.port)
        let bob = try await DaemonUnderTest(name: "bob", player: SimulatedPlayer(clock: clock), room: "r", server: server.port)
        try await alice.joined()
        try await bob.joined()
        // The clock estimate needs a few probes before actions are accepted.
        #expect(await eventually {
            let clocks = [(try? await alice.request(.getStatus).get())?["clock"], (try? await bob.request(.getStatus).get())?["clock"]]
            return clocks.allSatisfy { $0 != nil }
        })
        flowing.cancel()
        await flowing.value
        let daemons = [alice, bob]

        let played = try await clock.reply(to: .play, from: alice, daemons: daemons)
        #expect(played["paused"] == false)
        try await clock.pass(0.5, daemons: daemons)
        let seeked = try await clock.reply(to: .seek(seconds: 10, mode: .relative), from: alice, daemons: daemons)
        let position = seeked["position"]?.numberValue ?? -1
        #expect(position >= 10 && position < 11.5, "\(seeked.jsonString)")
        let paused = try await clock.reply(to: .pause, from: bob, daemons: daemons)
        #expect(paused["paused"] == true)
        // And the players get there: both paused on the group's frame.
        #expect(try await clock.pass(until: {
            alice.player.isPaused && bob.player.isPaused && abs(alice.player.position - bob.player.position) < 0.1
        }, within: 5, daemons: daemons))
        await alice.stop()
        await bob.stop()
    }

    @Test("a person dragging the seek bar makes one group seek; a drag back to where it began makes none")
    func dragCoalesced() async throws {
        // On a manual clock: the gesture's quiet period (0.2 s) is measured on time this test
        // moves, never on a busy machine's scheduling.
        let clock = ManualClock()
        let flowing = clock.flow()
        let server = try await InProcessServer(clock: clock)
        defer { server.stop() }
        let alice = try await DaemonUnderTest(name: "alice", player: SimulatedPlayer(clock: clock), room: "drag", server: server.port)
        let bob = try await DaemonUnderTest(name: "bob", player: SimulatedPlayer(clock: clock), room: "drag", server: server.port)
        try await alice.joined()
        try await bob.joined()
        #expect(await eventually { (try? await bob.request(.getStatus).get())?["clock"] != nil })
        flowing.cancel()
        await flowing.value
        let received = Locked<[ControlEvent]>([])
        _ = bob.hub.subscribe { event in received.withLock { $0.append(event) } }
        func seekNotices() -> [ControlEvent] {
            received.withLock { $0 }.filter { $0.name == "notice" && $0.fields["action"] == "seek" }
        }

        // A drag: 30 seeks 15 ms apart, each landing 10 ms after it is made.
        for step in 1...30 {
            alice.player.personSeeks(to: Double(step))
            try await alice.caughtUp()
            try await clock.pass(0.015, daemons: [alice, bob])
        }
        // Quiet from here: the gesture ends 0.2 s after its last landing and becomes one group seek.
        #expect(try await clock.pass(until: { abs(bob.player.position - 30) < 0.1 }, within: 2, daemons: [alice, bob]))
        try await clock.pass(1, daemons: [alice, bob])
        let seeks = seekNotices()
        #expect(seeks.count == 1)
        #expect(seeks.first?.fields["to"]?.numberValue.map { abs($0 - 30) < 0.01 } == true)

        // There and back again: no seek for anyone.
        let before = bob.player.orderedSeeks
        alice.player.personSeeks(to: 45)
        try await alice.caughtUp()
        try await clock.pass(0.03, daemons: [alice, bob])
        alice.player.personSeeks(to: 30.02)
        try await alice.caughtUp()
        try await clock.pass(1, daemons: [alice, bob])  // past the quiet period: the gesture has ended
        #expect(bob.player.orderedSeeks == before)
        #expect(seekNotices().count == 1)
        await alice.stop()
        await bob.stop()
    }
}

extension ManualClock {
    /// Moves time on by `seconds` in steps of `step`, letting `daemons` take in what their players
    /// did at each step and the room's messages cross the loopback (a moment of real time).
    func pass(_ seconds: Double, step: Double = 0.005, daemons: [DaemonUnderTest]) async throws {
        let end = now() + seconds
        while now() < end {
            advance(to: min(end, now() + step))
            try await settle(daemons)
        }
    }

    /// Moves time on in steps until `condition` holds (true) or `within` seconds of it passed (false).
    func pass(
        until condition: () async -> Bool, within seconds: Double, step: Double = 0.005, daemons: [DaemonUnderTest]
    ) async throws -> Bool {
        let end = now() + seconds
        while now() < end {
            if await condition() { return true }
            advance(to: min(end, now() + step))
            try await settle(daemons)
        }
        return await condition()
    }

    /// `daemon`'s reply to `command`, moving time on (in steps, as `pass`) while it is on its
    /// way. Throws the reply's error, or `timeout` when 10 s of this clock passed without one.
    func reply(to command: ControlCommand, from daemon: DaemonUnderTest, daemons: [DaemonUnderTest]) async throws -> JSONValue {
        let answer = Locked<Result<JSONValue, CowatchError>?>(nil)
        let asking = Task {
            let result = await daemon.request(command)
            answer.withLock { $0 = result }
        }
        defer { asking.cancel() }
        _ = try await pass(until: { answer.withLock { $0 } != nil }, within: 10, daemons: daemons)
        guard let result = answer.withLock({ $0 }) else { throw CowatchError(.timeout, "no reply to \(command.name) in 10 s of the manual clock") }
        return try result.get()
    }

    private func settle(_ daemons: [DaemonUnderTest]) async throws {
        for daemon in daemons { try await daemon.caughtUp() }
        // Messages on the loopback and the actors' turns take real time; it decides nothing here.
        try await Task.sleep(for: .milliseconds(2))
        for daemon in daemons { try await daemon.caughtUp() }
    }
}
