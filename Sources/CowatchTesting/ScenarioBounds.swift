/// How closely, and how soon, a scenario expects the room to agree: one set for both ways of
/// running it. The defaults hold for real daemons on a noisy 2-core machine (they are the
/// integration suite's bounds); in process the players agree exactly, so they hold there a
/// fortiori.
///
/// Threading: a value type, safe to share.
public struct ScenarioBounds: Sendable {
    /// Room seconds within which an action reaches every viewer (its notice, the players' change).
    public var reaction = 5.0
    /// Room seconds within which a viewer who joins again is in the room and on the group's place.
    public var rejoin = 15.0
    /// "On the same frame": how far a paused player may be from the pauser's frame (one frame at
    /// 25 fps, and a little).
    public var frame = 0.045
    /// How far apart paused players may be: they all seek to one position.
    public var pausedSpread = 0.002
    /// How far apart playing players may be, carried to one instant (the readings are sequential
    /// and each is known only within its read's round trip).
    public var playingSpread = 0.1

    public init() {}
}
