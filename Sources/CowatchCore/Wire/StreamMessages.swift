/// The room protocol's film streams (`stream`, issue 25): a member offers a local file to the
/// room (`share`), the server keeps the room's list of offers and tells everyone (`shares`), and
/// a member who lacks the room's media reads it from the sharer on a connection of its own that
/// the server relays (`stream` from the receiver, `stream_wanted` to the sharer, `stream_serve`
/// from the sharer, `stream_ready` to both; then `StreamFrame`s, end to end).
///
/// Threading: value types, safe to share.

/// A file on offer in a room, as everyone sees it: who offers it and what it is (the
/// playlist's identity: size, fingerprint of both ends, duration, a name hint; never a path).
public struct SharedMedia: Sendable, Hashable {
    /// The most files one member may offer at once.
    public static let maxPerMember = 4
    /// The most offers a room keeps.
    public static let maxPerRoom = 16

    /// The sharer's name (set by the server).
    public var by: String
    public var file: MediaIdentity
    /// The room's activity the sharer plays this file as, when it offered what it plays (the
    /// room's first media has no identity of its own on the wire: this ties the two).
    public var activity: Int?

    public init(by: String, file: MediaIdentity, activity: Int? = nil) {
        self.by = by
        self.file = file
        self.activity = activity
    }
}

/// How a member's stream fares, as it tells the room (`ClientMessage.streamStatus`, every few
/// seconds while it plays a stream) and the room shows it (`ParticipantInfo.stream`): whom it
/// streams from and how far its buffer reaches ahead of its player. Telemetry, like drift: the
/// server keeps the last one and shows it, and trusts nothing in it.
public struct StreamReport: Sendable, Hashable {
    /// The sharer it reads from.
    public var from: String
    /// Bytes received and not yet played, without a gap.
    public var aheadBytes: Int
    /// The same in seconds of the film, when its duration is known.
    public var aheadSeconds: Double?
    /// Bytes a second arriving lately.
    public var rate: Double

    public init(from: String, aheadBytes: Int, aheadSeconds: Double? = nil, rate: Double) {
        self.from = from
        self.aheadBytes = aheadBytes
        self.aheadSeconds = aheadSeconds
        self.rate = rate
    }
}

/// The first line of a receiver's stream connection (`ClientMessage.stream`).
public struct StreamRequest: Sendable, Hashable {
    public var room: String
    public var name: String
    /// The session token of `name`'s room connection (a secret; only inside TLS).
    public var token: String
    /// The sharer.
    public var from: String
    /// The shared file's fingerprint (with `from`, names the offer).
    public var fingerprint: String

    public init(room: String, name: String, token: String, from: String, fingerprint: String) {
        self.room = room
        self.name = name
        self.token = token
        self.from = from
        self.fingerprint = fingerprint
    }
}

/// The first line of a sharer's serving connection (`ClientMessage.streamServe`), after its
/// room connection was told `stream_wanted`.
public struct StreamServe: Sendable, Hashable {
    public var room: String
    public var name: String
    /// The session token of `name`'s room connection.
    public var token: String
    /// The stream the server numbered in `stream_wanted`.
    public var stream: Int

    public init(room: String, name: String, token: String, stream: Int) {
        self.room = room
        self.name = name
        self.token = token
        self.stream = stream
    }
}
