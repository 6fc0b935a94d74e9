/// Advancing: the server, never a client, decides when the group moves to the next entry.
///
/// The first end-of-file report that agrees with the room's timeline moves it: the reporter's
/// activity is the room's, the timeline plays, and its position now is within `endTolerance` of
/// the media's end (or past it). The end is the longest of what is known: the entry's duration,
/// the durations participants reported for the activity (`media`), and the position the reporter
/// says its player ended at. So a late joiner whose player ends early, a stale report for media
/// the room has left, or a second report for the same end never skips anything.
extension RoomPlaylist {
    /// The room's activity is `activity` and a participant's player reports its media lasts
    /// `seconds` (its `media` report): the longest such duration counts as the media's end.
    public mutating func noteMediaDuration(_ seconds: Double?, activity: Int, roomActivity: Int) {
        guard activity == roomActivity, let seconds, seconds.isFinite, (0...1e7).contains(seconds) else { return }
        if let known = reportedDuration, known.activity == activity {
            reportedDuration = ReportedDuration(activity: activity, seconds: max(known.seconds, seconds))
        } else {
            reportedDuration = ReportedDuration(activity: activity, seconds: seconds)
        }
    }

    /// A participant's player reached the end of activity `reported`, at `position`; the room
    /// plays `roomActivity` on `timeline`, now `now`. `trusted`: the reporter may edit the list
    /// (an unknown duration is taken on its word only then).
    ///
    /// Returns nil when the report moves nothing (it disagrees with the room, or the end was
    /// already handled, or the list has nothing to go on with); otherwise the change and the move:
    /// the next entry (repeat one: the same one again; past the last with repeat all: the first,
    /// the list reshuffled first when shuffle is on), or `stop` at the end of the list. `seed`
    /// drives that reshuffle. A `stop` raises `version` here; a start raises it in `started`.
    public mutating func endReported(
        activity reported: Int, position: Double, roomActivity: Int, timeline: GroupTimeline, now: Double, trusted: Bool,
        seed: UInt64
    ) -> PlaylistOutcome? {
        guard reported == roomActivity, endedActivity != reported, timeline.playing, !timeline.holding,
            position.isFinite, (0...1e7).contains(position)
        else { return nil }
        let entryDuration = reported == playingActivity ? playingDuration : nil
        let mediaDuration = reportedDuration.flatMap { $0.activity == reported ? $0.seconds : nil }
        guard entryDuration != nil || mediaDuration != nil || trusted else { return nil }
        let end = max(entryDuration ?? 0, mediaDuration ?? 0, position)
        guard timeline.position(at: now) >= end - Self.endTolerance else { return nil }

        let ended = reported == playingActivity ? playing.flatMap(entry) : nil
        let endedText = ended.map { Self.short($0.displayTitle) } ?? "the media"
        if repeatMode == .one, let ended {
            endedActivity = reported
            return PlaylistOutcome(
                change: PlaylistChange(
                    actor: nil, kind: "again", text: "playing #\((index(of: ended.id) ?? 0) + 1) (\(endedText)) again", entry: ended.id),
                move: .start(ended.id, openedBy: ended.addedBy))
        }
        var index = nextIndex
        var wrapped = false
        if index >= entries.count, repeatMode == .all, !entries.isEmpty {
            index = wrap(seed: seed)
            wrapped = true
        }
        guard index < entries.count else {
            // Nothing after it: the group stops at the end, if the list was playing.
            guard playing != nil else { return nil }
            endedActivity = reported
            bump(membership: false)
            return PlaylistOutcome(change: PlaylistChange(actor: nil, kind: "finish", text: "\(endedText) ended; the playlist finished"), move: .stop)
        }
        endedActivity = reported
        let next = entries[index]
        return PlaylistOutcome(
            change: PlaylistChange(
                actor: nil, kind: "advance",
                text: "\(endedText) ended; playing #\(index + 1) (\(Self.short(next.displayTitle)))" + (wrapped ? " from the top" : ""),
                entry: next.id),
            move: .start(next.id, openedBy: next.addedBy))
    }

    /// The room switched to `entry` as activity `activity` (after a `PlaylistMove.start`): it is
    /// the current entry now. Raises `version`. An id not in the list is ignored.
    public mutating func started(_ entry: PlaylistEntry.ID, activity: Int) {
        guard let started = self.entry(entry) else { return }
        playing = entry
        playingActivity = activity
        playingDuration = started.duration
        endedActivity = nil
        reportedDuration = nil
        bump(membership: false)
    }

    /// Past the last entry with repeat all: the position to go on from (0), after reshuffling
    /// the whole list when shuffle is on (the entry that just played does not come first again,
    /// when there are others). Raises `version` when the order changed.
    mutating func wrap(seed: UInt64) -> Int {
        guard shuffle, entries.count > 1 else { return 0 }
        let last = playing
        Self.shuffle(&entries, from: 0, seed: seed)
        if entries[0].id == last { entries.swapAt(0, 1 + Int(seed % UInt64(entries.count - 1))) }
        bump(membership: false)
        return 0
    }
}
