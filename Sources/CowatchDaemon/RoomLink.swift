import CowatchCore
import CowatchNet

/// The connection to the room server while one is up, as the room session keeps it: its writer,
/// the certificate key it verified (pinned for transfers, and the key our session token is kept
/// under), when it came up and when the server last said anything (a server silent for
/// `RoomSession.silenceLimit` is left), and how it is to end once a server message decided that.
///
/// Threading: a value inside `RoomSession`'s actor.
struct RoomLink {
    let send: RoomConnection.Send
    let fingerprint: String
    let connectedAt: Double
    var lastHeardAt: Double
    /// Someone ended the activity, or the server refused or removed us.
    var outcome: LinkOutcome?

    init(send: @escaping RoomConnection.Send, fingerprint: String, now: Double) {
        self.send = send
        self.fingerprint = fingerprint
        connectedAt = now
        lastHeardAt = now
    }
}
