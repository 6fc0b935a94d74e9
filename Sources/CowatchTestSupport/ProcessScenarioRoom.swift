import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTesting
import Foundation

/// `ScenarioRoom` on real processes: a `DaemonRoom` (its own `cowatch-server`, a `cowatchd` with
/// headless libmpv per viewer) in real time. Commands go through each daemon's control socket;
/// players are read through mpv's own IPC socket (the observer's view, never the daemon's);
/// notices are those on each daemon's event client, subscribed from its start.
///
/// Reading a player: `pause`, `speed`, then the position — `time-pos` when paused (the frame on
/// screen), `audio-pts` when playing (smooth, where `time-pos` moves by whole frames), `time-pos`
/// for media without audio. `at` is the middle of the position's read, on CLOCK_MONOTONIC.
///
/// Threading: one task drives it (it is not Sendable); its calls block that task's thread while
/// they wait for a socket, as the integration suites' own calls do. `pass` and `wait` sleep
/// without blocking. `stop()` at the end (or the processes die with the room).
///
/// Errors: `init` throws `DaemonRoom`'s (`TestFailure` when a daemon does not start or join);
/// `perform` throws the daemon's `CowatchError`; reads throw `CowatchError` when a player does not
/// answer.
public final class ProcessScenarioRoom: ScenarioRoom {
    /// The processes, for what a scenario does not say (stderr, the server).
    public let room: DaemonRoom
    private var received: [[Notice]]

    /// Starts a room called `name` of daemons named `names` on `media` and waits (`timeout`
    /// seconds) until each is joined and lists them all.
    public init(names: [String], media: String, room name: String, timeout: Double = 20) throws {
        room = try DaemonRoom(names: names, media: media, room: name, probes: true, timeout: timeout)
        received = Array(repeating: [], count: names.count)
    }

    public var names: [String] { room.names }

    public func perform(_ command: ControlCommand, by viewer: Int) async throws {
        _ = try room.clients[viewer].request(command, timeout: 20)
    }

    public func player(_ viewer: Int) async throws -> PlayerSnapshot {
        let probe = room.probes[viewer]
        let paused = try probe.request(.getProperty("pause"), timeout: 5).boolValue ?? false
        let speed = try probe.request(.getProperty("speed"), timeout: 5).numberValue ?? 1
        var read = try position(probe, property: paused ? "time-pos" : "audio-pts")
        if read.position == nil && !paused { read = try position(probe, property: "time-pos") }
        return PlayerSnapshot(paused: paused, position: read.position, speed: speed, at: read.at)
    }

    public func notices(_ viewer: Int) async throws -> [Notice] {
        // Whatever has arrived: a read that waits 1 ms finds a line already there.
        while let event = try room.listeners[viewer].nextEvent(timeout: 0.001) {
            if case .notice(let notice) = event { received[viewer].append(notice) }
        }
        return received[viewer]
    }

    /// Real time passes with the test's thread kept (a blocking sleep, as the process-driving suites
    /// do): a task suspended here would need a free cooperative thread to resume, and beside those
    /// suites, whose blocking calls hold them, it may not get one for many seconds.
    public func pass(_ seconds: Double) async throws {
        sleepSeconds(seconds)
    }

    public func wait(upTo seconds: Double, for condition: () async throws -> Bool) async throws -> Bool {
        let deadline = monotonicNow() + seconds
        while monotonicNow() < deadline {
            if try await condition() { return true }
            sleepSeconds(0.05)
        }
        return try await condition()
    }

    /// Terminates the daemons and the server.
    public func stop() { room.stop() }

    /// One read of `property`; nil when mpv has no value (not loaded, no audio), not an error.
    private func position(_ probe: ControlClient, property: String) throws -> (position: Double?, at: Double) {
        let before = monotonicNow()
        var value: Double?
        do {
            value = try probe.request(.getProperty(property), timeout: 5).numberValue
        } catch {
            // mpv's "property unavailable" is an answer; silence or a closed socket is not.
            if error.code == .timeout || error.code == .ioError { throw error }
        }
        return (value, (before + monotonicNow()) / 2)
    }
}
