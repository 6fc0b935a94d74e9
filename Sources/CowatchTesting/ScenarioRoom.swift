import CowatchCore
import Foundation

/// A room of viewers as a scenario needs it, whoever runs it: daemons in this process on a
/// simulated player and a manual clock, or real `cowatchd` processes with libmpv. A scenario
/// written once against this protocol (see `RoomScenarios`) runs both ways.
///
/// Viewers are numbered `0..<names.count` in the order they were started; `names[i]` is the name
/// viewer `i` goes by in the room (the `actor` of its notices).
///
/// Time: every duration here is the room's own time, in seconds — the manual clock in process
/// (it moves only inside `pass`, `wait` and `perform`), real time for real processes.
///
/// Threading: one task drives a room, one call at a time; an implementation need not be
/// `Sendable`.
///
/// Errors: `perform` throws the daemon's `CowatchError` for a refused command; reads throw when a
/// viewer cannot be read (its process or player is gone); anything may throw `CancellationError`.
public protocol ScenarioRoom: AnyObject {
    /// The viewers' names, index `i` for viewer `i`.
    var names: [String] { get }

    /// Viewer `viewer` runs `command` as the person at its control socket would (`cowatch pause`,
    /// `cowatch leave`…), and this returns once the daemon answered; in process, room time moves
    /// on while the answer is awaited, as it would for a real request. Throws the daemon's error.
    func perform(_ command: ControlCommand, by viewer: Int) async throws

    /// Viewer `viewer`'s player now, as the player itself says (not the daemon's bookkeeping).
    func player(_ viewer: Int) async throws -> PlayerSnapshot

    /// Every notice viewer `viewer` received so far (since it started, or since the room handed
    /// it over to the scenario), oldest first.
    func notices(_ viewer: Int) async throws -> [Notice]

    /// Lets `seconds` of room time pass, the daemons working meanwhile.
    func pass(_ seconds: Double) async throws

    /// Lets room time pass until `condition` holds (true) or `seconds` of it have passed (false,
    /// after one last look). `condition` may read the room.
    func wait(upTo seconds: Double, for condition: () async throws -> Bool) async throws -> Bool
}

/// One viewer's player at one instant.
///
/// Threading: a value type, safe to share.
public struct PlayerSnapshot: Sendable, Hashable, CustomStringConvertible {
    public var paused: Bool
    /// Seconds from the start of the media; nil before it is loaded.
    public var position: Double?
    /// The player's rate (with any drift correction in it).
    public var speed: Double
    /// The room time at which `position` was read (the middle of the read for real players).
    public var at: Double

    public init(paused: Bool, position: Double?, speed: Double, at: Double) {
        self.paused = paused
        self.position = position
        self.speed = speed
        self.at = at
    }

    /// Where the player is (or was) at room time `instant`, carried from `at` at `speed` while
    /// playing: readings of several players taken one after another compare at one instant.
    public func position(at instant: Double) -> Double? {
        guard let position else { return nil }
        return paused ? position : position + (instant - at) * speed
    }

    public var description: String {
        let place = position.map { String(format: "%.3f", $0) } ?? "nil"
        return "\(paused ? "paused" : "playing") at \(place) ×\(speed)"
    }
}
