/// One room's shared playlist, on the server: the list, who may edit it, where the group is in
/// it, and what each participant can play.
///
/// The server sequences every edit (`apply`): each carries the list's `version` and the
/// `current` entry its sender saw, and one made on a list that changed since is refused
/// (`stale-playlist`), so concurrent edits end in the same list everywhere. Entries get ids from a
/// counter that never repeats (the same media may be in the list twice). The server also decides
/// when the group moves on (`endReported`): on the first end-of-file report that agrees with the
/// room's timeline. Moving to an entry is a `PlaylistMove`; the caller (`RoomSequencer`) carries
/// it out as a switch of the room's activity (`RoomPlayback.switchTo`: held until everyone has
/// loaded it, then a countdown) and then tells the playlist with `started`.
///
/// Bounds: `maxEntries` entries and `maxListBytes` of them on the wire (so the whole state fits
/// one line); titles of at most 200 characters; no control characters anywhere; every string and
/// number from a peer is checked again here (the codec checked it once already).
///
/// A pure state machine with no clock of its own: event methods take `now` and the room's
/// timeline as parameters, and randomness (shuffle) as a `seed`, so tests replay. Errors are
/// `CowatchError`s with stable codes (`stale-playlist`, `playlist-full`, `not-permitted`,
/// `invalid-argument`). Threading: a value type; one owner (kept in the room's record).
public struct RoomPlaylist: Sendable, Equatable {
    /// The most entries a list holds.
    public static let maxEntries = PlaylistState.maxEntries
    /// The most bytes the entries take in a `playlist` line (`PlaylistEntry.wireCost`): with the
    /// availability of 64 participants, the state stays well within `wireMaxLineBytes`.
    public static let maxListBytes = 98_304
    /// The longest countdown, seconds.
    public static let maxCountdown: Double = 60
    /// The countdown of a new room's list, seconds.
    public static let defaultCountdown: Double = 3
    /// An end-of-file report moves the group on only when the room's timeline is within this
    /// many seconds of the media's end (or past it).
    public static let endTolerance: Double = 2

    public internal(set) var entries: [PlaylistEntry] = []
    /// Grows with every change (edits, a new current entry, settings); never with availability.
    public internal(set) var version = 0
    /// The id the next entry gets.
    public internal(set) var nextID: PlaylistEntry.ID = 1
    public internal(set) var repeatMode: PlaylistRepeat = .none
    public internal(set) var shuffle = false
    /// In a managed room, members may edit too.
    public internal(set) var openEditing = false
    public internal(set) var countdown: Double
    /// The entry started last; it may have left the list since (then `cursor` says where the
    /// list goes on).
    public internal(set) var playing: PlaylistEntry.ID?
    /// The room activity `playing` was opened as (nil: not known, e.g. after a restart that
    /// brought back other media).
    public internal(set) var playingActivity: Int?
    /// Its duration, from the entry, as it was when it started.
    var playingDuration: Double?
    /// Where the list goes on while `playing` is not in it: the position the next entry is at.
    var cursor = 0
    /// The list before the last change that `undo` takes back.
    var undoSnapshot: Snapshot?
    /// The version at which the set of entries last changed (availability reports made before
    /// it are out of date).
    var membershipVersion = 0
    /// What each participant said it can play.
    var reports: [String: Report] = [:]
    /// The activity whose end already moved the group (a second report does nothing).
    var endedActivity: Int?
    /// The longest duration reported (`media`) for the room's activity.
    var reportedDuration: ReportedDuration?

    struct Snapshot: Sendable, Equatable {
        var entries: [PlaylistEntry]
        var cursor: Int
    }

    struct Report: Sendable, Equatable {
        var have: Set<PlaylistEntry.ID>
        /// The entries the report covered (those in the list when it was made).
        var checked: Set<PlaylistEntry.ID>
    }

    struct ReportedDuration: Sendable, Equatable {
        var activity: Int
        var seconds: Double
    }

    /// An empty list whose countdown is `countdown` seconds (clamped to 0…`maxCountdown`).
    public init(countdown: Double = RoomPlaylist.defaultCountdown) {
        self.countdown = countdown.isFinite ? min(max(0, countdown), Self.maxCountdown) : Self.defaultCountdown
    }

    // MARK: Views

    /// The entry the group plays or last played, while it is in the list.
    public var current: PlaylistEntry.ID? {
        guard let playing, index(of: playing) != nil else { return nil }
        return playing
    }

    /// Where `id` is in the list.
    public func index(of id: PlaylistEntry.ID) -> Int? {
        entries.firstIndex { $0.id == id }
    }

    public func entry(_ id: PlaylistEntry.ID) -> PlaylistEntry? {
        entries.first { $0.id == id }
    }

    /// The position the entry after the current one is at (may be `entries.count`: none).
    var nextIndex: Int {
        if let playing, let index = index(of: playing) { return index + 1 }
        return min(max(0, cursor), entries.count)
    }

    /// The whole state as everyone sees it.
    public var state: PlaylistState {
        let current = current
        return PlaylistState(
            version: version, entries: entries, current: current, activity: current == nil ? nil : playingActivity,
            repeatMode: repeatMode, shuffle: shuffle, openEditing: openEditing, countdown: countdown,
            canUndo: undoSnapshot != nil, availability: reports.keys.sorted().compactMap(availability(of:)))
    }

    /// True when a participant with `role` may edit the list of a room that is `managed` or not.
    public static func mayEdit(role: Role, managed: Bool, openEditing: Bool) -> Bool {
        !managed || role.isPrivileged || openEditing
    }

    /// The room activity that plays `entry`, opened by `actor` (its id is the room's to give).
    /// A network entry opens its URL; a local file its name, which a participant resolves by
    /// the entry's identity (never as a path).
    public static func activity(for entry: PlaylistEntry, openedBy actor: String) -> Activity {
        let url: String
        switch entry.media {
        case .url(let address): url = address
        case .file(let file): url = file.name
        }
        return Activity(url: url, title: entry.title.map(Activity.clampedTitle), openedBy: actor)
    }

    // MARK: What is kept

    /// What goes into the room's record (kept across restarts): the list, its settings and where
    /// the group is in it; not this run's availability reports, undo or end bookkeeping.
    public var persisted: RoomPlaylist {
        var kept = self
        kept.reports = [:]
        kept.undoSnapshot = nil
        kept.endedActivity = nil
        kept.reportedDuration = nil
        return kept
    }

    /// The room was (re)created with `activity` (after it slept, or after a server restart):
    /// the entry last started is the room's activity again if the activity is its media (same
    /// URL, or same file name); otherwise the room plays something else and the list goes on
    /// after the entry when it ends.
    public mutating func roomStarted(with activity: Activity) {
        reports = [:]
        endedActivity = nil
        reportedDuration = nil
        guard let playing, let entry = entry(playing),
            Self.activity(for: entry, openedBy: "").url == activity.url
        else {
            playingActivity = nil
            return
        }
        playingActivity = activity.id
        playingDuration = entry.duration
    }

    // MARK: Availability

    /// `name` says it can play `have` of the list at `version`. Returns its availability when it
    /// changed; nil when unchanged, or when the report is out of date (made on a list whose
    /// entries changed since: the participant reports again on the newer state) or from the
    /// future. Ids not in the list are ignored.
    public mutating func report(have: [PlaylistEntry.ID], version reported: Int, from name: String) -> PlaylistAvailability? {
        guard (membershipVersion...version).contains(reported) else { return nil }
        guard reports[name] != nil || reports.count < 1024 else { return nil }
        let ids = Set(entries.map(\.id))
        let report = Report(have: ids.intersection(have), checked: ids)
        let before = availability(of: name)
        reports[name] = report
        let after = availability(of: name)
        return after == before ? nil : after
    }

    /// `name` left: its reports go.
    @discardableResult
    public mutating func forget(_ name: String) -> Bool {
        reports.removeValue(forKey: name) != nil
    }

    /// What `name` said, entry by entry; nil when it never reported.
    public func availability(of name: String) -> PlaylistAvailability? {
        guard let report = reports[name] else { return nil }
        return PlaylistAvailability(name: name, marks: entries.map { entry in
            report.have.contains(entry.id) ? .has : report.checked.contains(entry.id) ? .lacks : .unknown
        })
    }

    /// True when `name` said it lacks `entry`.
    public func lacks(_ name: String, _ entry: PlaylistEntry.ID) -> Bool {
        guard let report = reports[name] else { return false }
        return report.checked.contains(entry) && !report.have.contains(entry)
    }
}

/// What an edit or an end-of-file report did: the change everyone is told of, and where the
/// group goes, if anywhere.
public struct PlaylistOutcome: Sendable, Equatable {
    public var change: PlaylistChange
    public var move: PlaylistMove?

    public init(change: PlaylistChange, move: PlaylistMove? = nil) {
        self.change = change
        self.move = move
    }
}

/// Where the server sends the group.
public enum PlaylistMove: Sendable, Equatable {
    /// Switch everyone to this entry (`RoomPlaylist.activity(for:openedBy:)`), held until
    /// everyone has loaded it, then the countdown; then call `RoomPlaylist.started`.
    /// `openedBy`: who the switch is by (the editor, or the entry's adder for an advance).
    case start(PlaylistEntry.ID, openedBy: String)
    /// The list ended: pause the group where it is.
    case stop
}

extension CowatchError {
    /// The edit was made on version `seen` (current entry `seenCurrent`); the list is at `version`.
    static func stalePlaylist(seen: Int, version: Int) -> CowatchError {
        CowatchError(
            .stalePlaylist,
            "the playlist changed since you saw it (version \(seen), now \(version)); look again and retry")
    }

    static func playlistFull(_ reason: String) -> CowatchError {
        CowatchError(.playlistFull, reason)
    }

    static func playlistNotPermitted(_ reason: String) -> CowatchError {
        CowatchError(.notPermitted, reason)
    }

    static func invalidPlaylistEdit(_ reason: String) -> CowatchError {
        CowatchError(.invalidArgument, reason)
    }
}
