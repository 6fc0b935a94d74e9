/// What the daemon outside the room session reads of the room without awaiting its actor
/// (status replies, `state` events): derived from the session machine and the group timeline by
/// the session, which alone writes it.
///
/// Threading: a value type, kept in a `Locked` by `RoomSession`.
struct RoomView: Sendable {
    /// True while playback commands are group actions: in the room, or only cut off from it
    /// (server gone, reconnecting). False after `leave`, an end or a removal.
    var following = true
    /// True while the server has welcomed this session.
    var joined = false
    /// The group's rate: status reports it, not the player's momentary drift-corrected speed.
    var groupRate: Double?
}
