@testable import CowatchDaemon
import CowatchClient
import CowatchCore
import CowatchMpv
import CowatchNet
import CowatchTesting
import Foundation
import Logging

/// One daemon's logic — `PlayerController` and, in a room, `RoomSession` — on a simulated
/// player, in this process; the room server is the real one on loopback. The daemon runs on its
/// player's clock (a `ManualClock` for tests that move time themselves).
///
/// Threading: use from one test task; `stop()` at the end.
final class DaemonUnderTest: Sendable {
    let player: SimulatedPlayer
    let controller: PlayerController
    let hub = EventHub()
    let session: RoomSession?
    private let tasks: Locked<[Task<Void, Never>]> = Locked([])

    /// Opens `media` (throws what `open()` throws); joins `room` on `server` when given.
    init(
        name: String, media: String = "sim://film", fallback: String? = nil, player: SimulatedPlayer = SimulatedPlayer(),
        openTimeout: Double = 2, room: String? = nil, server: Int? = nil
    ) async throws {
        self.player = player
        var configuration = DaemonConfiguration(
            media: media, name: name, controlPath: "/nonexistent/\(name).sock", osd: true, seekTimeout: 5,
            openTimeout: openTimeout)
        configuration.fallbackURL = fallback
        let logger = Logger(label: "test.\(name)")
        // The room's seam is the simulated player itself: typed calls, no mpv strings.
        controller = PlayerController(
            player: player, roomPlayer: player, configuration: configuration, events: hub, logger: logger,
            clock: player.clock)
        let controller = controller
        tasks.withLock { $0.append(Task { await controller.runEvents() }) }
        if let room, let server {
            var settings = RoomSettings(room: room, serverHost: "127.0.0.1", serverPort: server)
            settings.tls = false
            settings.managed = false
            session = RoomSession(
                player: player, subtitles: SubtitleTracks(player), configuration: configuration, room: settings,
                media: controller.media, events: hub, logger: logger)
        } else {
            session = nil
        }
        do {
            try await controller.open()
        } catch {
            await stop()
            throw error
        }
        if let session {
            await controller.attach(room: session)
            tasks.withLock { $0.append(Task { _ = await session.run() }) }
        }
    }

    /// Waits until the server welcomed this daemon. The bound is `eventually`'s: in the first
    /// seconds of the merged test run, hundreds of tests share the pool's two threads, and a CI
    /// run once saw a join on loopback pass 10 s.
    func joined(timeout: Double = 20) async throws {
        let deadline = monotonicNow() + timeout
        while session?.view.withLock({ $0.joined }) != true {
            guard monotonicNow() < deadline else { throw CowatchError(.timeout, "not joined in \(timeout) s") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// A control request, as the socket would pass it.
    func request(_ command: ControlCommand) async -> Result<JSONValue, CowatchError> {
        await controller.handle(ControlRequest(command: command)).result
    }

    func stop() async {
        for task in tasks.withLock({ $0 }) { task.cancel() }
        await player.shutdown()
    }
}

/// A room server on a loopback port, in this process, on `clock` (the daemons' own, so that
/// the room's reference clock and theirs are one).
final class InProcessServer: Sendable {
    let port: Int
    private let task: Task<Void, Never>

    init(clock: any MonotonicClock = SystemClock()) async throws {
        let bound = Reply<Int>()
        let server = RoomServer(
            host: "127.0.0.1", port: 0, identity: nil, logger: Logger(label: "test.server"),
            onBound: { _, port in bound.resume(port) }, clock: clock)
        task = Task { try? await server.run() }
        port = await bound.wait(timeout: 10, orElse: -1)
        guard port > 0 else { throw CowatchError(.timeout, "the room server did not bind") }
    }

    func stop() { task.cancel() }
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes (real time: a generous bound
/// for a delivery on a loaded machine; nothing is timed by it).
func eventually(timeout: Double = 20, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = monotonicNow() + timeout
    while monotonicNow() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

extension InProcessServer {
    /// Daemons named `names`, each joined to `room` on this server before the next starts.
    func joinedRoom(_ names: [String], room: String) async throws -> [DaemonUnderTest] {
        var daemons: [DaemonUnderTest] = []
        for name in names {
            let daemon = try await DaemonUnderTest(name: name, room: room, server: port)
            try await daemon.joined()
            daemons.append(daemon)
        }
        return daemons
    }
}

extension DaemonUnderTest {
    /// Waits (real time, bounded) until the daemon has taken in every event its player sent: the
    /// controller counts an event handled only once the room session has taken it in too (it hands
    /// each one over and waits), and the session counted every one it was passed. A test on a
    /// manual clock calls it before moving time, so the daemon decides on what happened by then.
    func caughtUp(timeout: Double = 10) async throws {
        let deadline = monotonicNow() + timeout
        while true {
            let handled = await controller.eventsHandled
            let forwarded = await controller.eventsForwarded
            let seen = await session?.playerEventsSeen ?? forwarded
            if handled == player.eventsSent, seen == forwarded { return }
            guard monotonicNow() < deadline else {
                throw CowatchError(.timeout, "the daemon did not take in its player's events in \(timeout) s")
            }
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}
