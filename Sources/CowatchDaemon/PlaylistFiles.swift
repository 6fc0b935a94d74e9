import CowatchCore

/// Where this daemon's own copies of the room's playlist entries are: files it was told about
/// (its own `--media`, what it added, what a person picked) by identity, the picks by entry, and
/// what the last resolution found for each entry of the list.
///
/// Paths stay here: only identities cross the wire.
///
/// Threading: a value type, kept by the room session's actor.
struct PlaylistFiles: Sendable {
    /// Files of ours by identity (size and fingerprint): at most `maxKnown`, oldest forgotten.
    private(set) var known: [MediaIdentity.Key: String] = [:]
    private var knownOrder: [MediaIdentity.Key] = []
    /// A person's own choice of file for an entry (`playlist_pick`).
    var picks: [PlaylistEntry.ID: String] = [:]
    /// What the last resolution of the list found: each entry this daemon has, with its path
    /// (nil for a URL, which needs none), at `version`.
    var resolved: [PlaylistEntry.ID: String?] = [:]
    var resolvedVersion: Int?
    /// What mpv's own playlist was last made to list (nil: not made since the last load).
    var mirrored: PlaylistMirror?

    static let maxKnown = 1024

    mutating func remember(_ identity: MediaIdentity, at path: String) {
        if known[identity.key] == nil {
            knownOrder.append(identity.key)
            if knownOrder.count > Self.maxKnown { known[knownOrder.removeFirst()] = nil }
        }
        known[identity.key] = path
    }

    /// This daemon's file for `entry`, as last resolved.
    func path(for entry: PlaylistEntry.ID) -> String? {
        resolved[entry] ?? nil
    }

    /// The entries this daemon can play, as last resolved.
    var here: Set<PlaylistEntry.ID> { Set(resolved.keys) }

    /// Each entry's own file, for the reply.
    var local: [PlaylistEntry.ID: String] { resolved.compactMapValues { $0 } }
}
