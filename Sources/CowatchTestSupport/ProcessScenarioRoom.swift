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
/// Threading: one task drives it (it is not Sendable). Nothing it does holds a thread of Swift's
/// cooperative pool: requests and reads run on threads of their own while the task is suspended
/// (`offPool`), and `pass` and `wait` sleep suspended (`pause`). `stop()` at the end (or the
/// processes die with the room).
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
    public init(names: [String], media: String, room name: String, timeout: Double = 20) async throws {
        room = try await DaemonRoom(names: names, media: media, room: name, probes: true, timeout: timeout)
        received = Array(repeating: [], count: names.count)
    }

    public var names: [String] { room.names }

    public func perform(_ command: ControlCommand, by viewer: Int) async throws {
        _ = try await room.clients[viewer].request(command, timeout: 20)
    }

    public func player(_ viewer: Int) async throws -> PlayerSnapshot {
        let probe = room.probes[viewer]
        let paused = try await probe.request(.getProperty("pause"), timeout: 5).boolValue ?? false
        let speed = try await probe.request(.getProperty("speed"), timeout: 5).numberValue ?? 1
        var read = try await position(probe, property: paused ? "time-pos" : "audio-pts")
        if read.position == nil && !paused { read = try await position(probe, property: "time-pos") }
        return PlayerSnapshot(paused: paused, position: read.position, speed: speed, at: read.at)
    }

    public func notices(_ viewer: Int) async throws -> [Notice] {
        // Whatever has arrived: a read that waits 1 ms finds a line already there.
        while let event = try await room.listeners[viewer].nextEvent(timeout: 0.001) {
            if case .notice(let notice) = event { received[viewer].append(notice) }
        }
        return received[viewer]
    }

    /// Real time passes with the task suspended (no thread held).
    public func pass(_ seconds: Double) async throws {
        await CowatchTestSupport.pause(seconds)
    }

    public func wait(upTo seconds: Double, for condition: () async throws -> Bool) async throws -> Bool {
        let deadline = monotonicNow() + seconds
        while monotonicNow() < deadline {
            if try await condition() { return true }
            await CowatchTestSupport.pause(0.05)
        }
        return try await condition()
    }

    /// Terminates the daemons and the server, suspended until they have ended.
    public func stop() async { await room.shutDown() }

    /// One read of `property`; nil when mpv has no value (not loaded, no audio), not an error.
    /// The read and its timing on a thread of their own (`offPool`), so that the instant is the
    /// read's, not when the task happened to resume.
    private func position(_ probe: ControlClient, property: String) async throws -> (position: Double?, at: Double) {
        try await offPool { () throws(CowatchError) -> (position: Double?, at: Double) in
            let before = monotonicNow()
            var value: Double?
            do throws(CowatchError) {
                value = try probe.request(.getProperty(property), timeout: 5).numberValue
            } catch {
                // mpv's "property unavailable" is an answer; silence or a closed socket is not.
                if error.code == .timeout || error.code == .ioError { throw error }
            }
            return (value, (before + monotonicNow()) / 2)
        }
    }
}
