@testable import CowatchDaemon
import CowatchCore
import CowatchTesting

/// `ScenarioRoom` in this process: a real `RoomServer` on loopback (`InProcessServer`) and one
/// `DaemonUnderTest` per viewer on a `SimulatedPlayer`, all on one `ManualClock`. While the room
/// is set up time flows; once every daemon is joined and has its reference-clock estimate, time
/// moves only inside `pass`, `wait` and `perform`, in steps of `step`, each followed by a moment
/// of real time for the loopback and the actors (`ManualClock.pass`): what happens is decided by
/// the manual clock, never by how busy the machine is.
///
/// Players are read from the simulated players themselves; `at` is the manual clock's reading.
/// Notices are those each daemon's event hub published since the daemon started.
///
/// Threading: one task drives it; state it shares with the hubs' callbacks is under locks.
/// `stop()` at the end.
///
/// Errors: `init` throws what `DaemonUnderTest` throws, or `CowatchError(.timeout)` when the
/// room is not ready in `timeout` real seconds; `perform` throws the daemon's `CowatchError`, or
/// `.timeout` when it has not answered in `requestTimeout` room seconds.
final class InProcessScenarioRoom: ScenarioRoom, Sendable {
    let names: [String]
    let clock: ManualClock
    let server: InProcessServer
    let daemons: [DaemonUnderTest]
    /// Room seconds per step of `pass` and `wait`.
    let step = 0.005
    /// Room seconds `perform` waits for a daemon's answer.
    let requestTimeout = 10.0
    private let received: [Locked<[Notice]>]

    /// Starts the server and a daemon per name in `room` (each on `sources`, default: a 600 s
    /// film), and waits until each is joined and has estimated the reference clock.
    init(
        names: [String], room: String = "scenario", sources: [String: SimulatedPlayer.Source] = [:], timeout: Double = 20
    ) async throws {
        self.names = names
        let clock = ManualClock()
        self.clock = clock
        let flowing = clock.flow()
        defer { flowing.cancel() }
        server = try await InProcessServer(clock: clock)
        var daemons: [DaemonUnderTest] = []
        var received: [Locked<[Notice]>] = []
        do {
            for name in names {
                let daemon = try await DaemonUnderTest(
                    name: name, player: SimulatedPlayer(sources: sources, clock: clock), room: room, server: server.port)
                daemons.append(daemon)
                let notices = Locked<[Notice]>([])
                _ = daemon.hub.subscribe { event in
                    if case .notice(let notice) = event { notices.withLock { $0.append(notice) } }
                }
                received.append(notices)
                try await daemon.joined(timeout: timeout)
            }
            for daemon in daemons {
                let estimated = await eventually(timeout: timeout) {
                    guard let reply = try? await daemon.request(.getStatus).get() else { return false }
                    return (try? PlayerStatus(json: reply))?.clock != nil
                }
                guard estimated else { throw CowatchError(.timeout, "no reference-clock estimate in \(timeout) s") }
            }
        } catch {
            for daemon in daemons { await daemon.stop() }
            server.stop()
            throw error
        }
        self.daemons = daemons
        self.received = received
        flowing.cancel()
        await flowing.value
    }

    func perform(_ command: ControlCommand, by viewer: Int) async throws {
        let daemon = daemons[viewer]
        let answered = Locked(false)
        let request = Task {
            defer { answered.withLock { $0 = true } }
            return await daemon.request(command)
        }
        // Time moves on while the daemon works on it, as it would for a person waiting.
        guard try await clock.pass(until: { answered.withLock { $0 } }, within: requestTimeout, step: step, daemons: daemons)
        else {
            request.cancel()
            throw CowatchError(.timeout, "\(names[viewer]) did not answer \(command.name) in \(requestTimeout) s")
        }
        _ = try await request.value.get()
    }

    func player(_ viewer: Int) async throws -> PlayerSnapshot {
        let player = daemons[viewer].player
        return PlayerSnapshot(
            paused: player.isPaused, position: try? player.getDouble("time-pos"),
            speed: (try? player.getDouble("speed")) ?? 1, at: clock.now())
    }

    func notices(_ viewer: Int) async throws -> [Notice] {
        received[viewer].withLock { $0 }
    }

    func pass(_ seconds: Double) async throws {
        try await clock.pass(seconds, step: step, daemons: daemons)
    }

    func wait(upTo seconds: Double, for condition: () async throws -> Bool) async throws -> Bool {
        let end = clock.now() + seconds
        while clock.now() < end {
            if try await condition() { return true }
            try await clock.pass(min(step, end - clock.now()), step: step, daemons: daemons)
        }
        return try await condition()
    }

    func stop() async {
        for daemon in daemons { await daemon.stop() }
        server.stop()
    }
}
