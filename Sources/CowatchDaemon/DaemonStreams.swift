import CowatchCore
import CowatchNet

/// What a room session keeps of film streams (issue 25): the loopback HTTP server its player
/// reads streamed media from, the stream it plays now, and the files it offers.
///
/// Threading: a value type owned by `RoomSession` (actor-isolated there).
struct DaemonStreams {
    /// The stream the player plays the room's media from.
    struct Receiving {
        var offer: SharedMedia
        var receiver: StreamReceiver
        /// The loopback URL the player opened.
        var url: String
        /// The room's activity it plays.
        var activity: Int
        /// It plays instead of our own copy, which differs from the room's: when it ends, the
        /// player goes back to that copy rather than standing aside.
        var replacesOwnCopy = false
    }

    /// A file of ours on offer.
    struct Offered: Sendable {
        var identity: MediaIdentity
        var path: String
        var activity: Int?
    }

    /// Started on the first stream (127.0.0.1 only).
    var loopback: LoopbackMediaServer?
    var receiving: Receiving?
    /// Our offers by fingerprint: offered again after every welcome (the server forgets a
    /// member's offers with its connection).
    var offered: [String: Offered] = [:]
    /// `--share` was carried out (once per run).
    var sharedOwnMedia = false
    /// Activities for which we said that nobody shares what we lack (said once each).
    var toldLacking: Set<Int> = []
    /// Streams (by URL) whose slowness we told the person about (once each).
    var toldSlow: Set<String> = []
    /// Our own `--media`'s identity, once hashed: an offer of the same file is not a replacement.
    var ownMedia: MediaIdentity?
    /// When the room last heard how our stream fares, and whether it was told of one.
    var reportedAt = -Double.infinity
    var reportedStream = false
}
