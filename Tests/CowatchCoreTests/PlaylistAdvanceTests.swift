import Testing

@testable import CowatchCore

/// Issue 23: the server decides when the group moves on, from end-of-file reports that agree
/// with the room's timeline; repeat and shuffle at the end of the list.
@Suite("Playlist: advancing")
struct PlaylistAdvanceTests {
    static let fingerprint = String(repeating: "cd", count: 32)

    /// Three files of 100 s each (ids 1–3, added by bob); entry `current` plays as activity 5,
    /// from 0 at reference instant 1000.
    func playing(_ current: PlaylistEntry.ID = 1, count: Int = 3, repeatMode: PlaylistRepeat = .none, shuffle: Bool = false) throws -> RoomPlaylist {
        var playlist = RoomPlaylist()
        let items = (1...count).map {
            PlaylistItem(file: .init(size: 1000 + $0, fingerprint: Self.fingerprint, duration: 100, name: "ep\($0).mkv"), title: "Episode \($0)")
        }
        _ = try playlist.apply(.init(id: 1, version: 0, current: nil, edit: .add(items, next: false)), by: "bob", role: .owner, managed: false, seed: 1)
        if repeatMode != .none {
            _ = try playlist.apply(
                .init(id: 2, version: playlist.version, current: nil, edit: .setRepeat(repeatMode)), by: "bob", role: .owner, managed: false, seed: 1)
        }
        if shuffle {
            // Shuffle on before anything plays reorders the whole list; put it back for the test.
            _ = try playlist.apply(
                .init(id: 3, version: playlist.version, current: nil, edit: .setShuffle(true)), by: "bob", role: .owner, managed: false, seed: 1)
            _ = try playlist.apply(.init(id: 4, version: playlist.version, current: nil, edit: .undo), by: "bob", role: .owner, managed: false, seed: 1)
        }
        playlist.started(current, activity: 5)
        return playlist
    }

    let timeline = GroupTimeline(seq: 7, position: 0, reference: 1000, rate: 1, playing: true)

    func end(
        _ playlist: inout RoomPlaylist, activity: Int = 5, position: Double = 100, at now: Double, timeline: GroupTimeline? = nil,
        trusted: Bool = false, seed: UInt64 = 1
    ) -> PlaylistOutcome? {
        playlist.endReported(
            activity: activity, position: position, roomActivity: 5, timeline: timeline ?? self.timeline, now: now, trusted: trusted,
            seed: seed)
    }

    @Test("the first report that agrees with the timeline moves the group to the next entry, by its adder; a second does nothing")
    func advance() throws {
        var playlist = try playing()
        let outcome = try #require(end(&playlist, position: 99.96, at: 1098.5))
        #expect(outcome.move == .start(2, openedBy: "bob"))
        #expect(outcome.change == PlaylistChange(actor: nil, kind: "advance", text: "Episode 1 ended; playing #2 (Episode 2)", entry: 2))
        #expect(end(&playlist, position: 100, at: 1099) == nil, "the same end twice")
        playlist.started(2, activity: 6)
        #expect(playlist.current == 2)
    }

    @Test("a late joiner's player that ends early, a stale activity, a paused or held group move nothing")
    func strays() throws {
        var playlist = try playing()
        // A joiner's player says the media ended at 30 s (a shorter copy): the room is at 40 s.
        #expect(end(&playlist, position: 30, at: 1040) == nil)
        // Even past its own claim, the room's media is 100 s long.
        #expect(end(&playlist, position: 30, at: 1090) == nil)
        // A report for the activity before this one.
        #expect(end(&playlist, activity: 4, at: 1100) == nil)
        // Paused, or holding, at the end.
        let paused = GroupTimeline(seq: 8, position: 100, reference: 1100, rate: 1, playing: false)
        #expect(end(&playlist, at: 1101, timeline: paused) == nil)
        let held = GroupTimeline(seq: 8, position: 100, reference: 1100, rate: 1, playing: false, holding: true)
        #expect(end(&playlist, at: 1101, timeline: held) == nil)
        // Non-finite or absurd positions.
        #expect(end(&playlist, position: .nan, at: 1100) == nil)
        #expect(end(&playlist, position: 1e12, at: 1100) == nil)
        // None of these used up the end: the real one still moves the group.
        #expect(end(&playlist, at: 1099)?.move == .start(2, openedBy: "bob"))
    }

    @Test("past the end is fine; within 2 s of it too, not 2.5 s before; speed counts")
    func tolerance() throws {
        var early = try playing()
        #expect(end(&early, at: 1097.5) == nil)
        var late = try playing()
        #expect(end(&late, at: 1500) != nil)
        var fast = try playing()
        let double = GroupTimeline(seq: 7, position: 0, reference: 1000, rate: 2, playing: true)
        #expect(end(&fast, at: 1049, timeline: double) != nil)
    }

    @Test("without a known duration the reporter's word counts only from someone who may edit; reported durations count, the longest")
    func unknownDuration() throws {
        var playlist = RoomPlaylist()
        _ = try playlist.apply(
            .init(id: 1, version: 0, current: nil, edit: .add([PlaylistItem(url: "https://x/1"), PlaylistItem(url: "https://x/2")], next: false)),
            by: "bob", role: .owner, managed: false, seed: 1)
        playlist.started(1, activity: 5)
        var untrusted = playlist
        #expect(end(&untrusted, position: 3, at: 1003) == nil, "a member's word alone never skips")
        var trusted = playlist
        #expect(end(&trusted, position: 3, at: 1003, trusted: true) != nil)
        // Participants reported durations of 100 and 120 s: the end is at 120 s.
        var reported = playlist
        reported.noteMediaDuration(100, activity: 5, roomActivity: 5)
        reported.noteMediaDuration(120, activity: 5, roomActivity: 5)
        reported.noteMediaDuration(5, activity: 4, roomActivity: 5)
        #expect(end(&reported, position: 3, at: 1100) == nil)
        #expect(end(&reported, position: 3, at: 1119)?.move == .start(2, openedBy: "bob"))
    }

    @Test("repeat one plays the entry again; repeat all wraps from the top; repeat none stops at the end")
    func repeatModes() throws {
        var one = try playing(2, repeatMode: .one)
        let again = try #require(end(&one, at: 1100))
        #expect(again.move == .start(2, openedBy: "bob") && again.change.text == "playing #2 (Episode 2) again")

        var all = try playing(3, repeatMode: .all)
        let wrapped = try #require(end(&all, at: 1100))
        #expect(wrapped.move == .start(1, openedBy: "bob"))
        #expect(wrapped.change.text == "Episode 3 ended; playing #1 (Episode 1) from the top")

        var none = try playing(3)
        let version = none.version
        let stop = try #require(end(&none, at: 1100))
        #expect(stop.move == .stop && stop.change.kind == "finish" && none.version == version + 1)
        #expect(stop.change.text == "Episode 3 ended; the playlist finished")
        #expect(end(&none, at: 1101) == nil)
    }

    @Test("repeat all with shuffle reshuffles the whole list at the wrap, the same way for the same seed, not the last entry first")
    func shuffleAtWrap() throws {
        for seed in UInt64(0)..<20 {
            var one = try playing(5, count: 5, repeatMode: .all, shuffle: true)
            var two = one
            let first = try #require(end(&one, at: 1100, seed: seed))
            _ = end(&two, at: 1100, seed: seed)
            #expect(one.entries == two.entries)
            #expect(Set(one.entries.map(\.id)) == Set(1...5))
            guard case .start(let next, _) = first.move else {
                Issue.record("no start")
                return
            }
            #expect(next == one.entries[0].id && next != 5)
        }
    }

    @Test("media the list did not start (the room's own, an open) ending moves the list on from where it is")
    func otherMediaEnds() throws {
        var fresh = RoomPlaylist()
        #expect(fresh.endReported(activity: 0, position: 100, roomActivity: 0, timeline: timeline, now: 1100, trusted: true, seed: 1) == nil)
        _ = try fresh.apply(
            .init(id: 1, version: 0, current: nil, edit: .add([PlaylistItem(url: "https://x/1")], next: false)), by: "bob", role: .owner,
            managed: false, seed: 1)
        let first = fresh.endReported(activity: 0, position: 100, roomActivity: 0, timeline: timeline, now: 1100, trusted: true, seed: 1)
        #expect(first?.move == .start(1, openedBy: "bob") && first?.change.text == "the media ended; playing #1 (1)")

        // Entry 1 plays as activity 5; someone opens other media (activity 6); when it ends, entry 2.
        var interrupted = try playing(1)
        let outcome = interrupted.endReported(activity: 6, position: 50, roomActivity: 6, timeline: timeline, now: 1050, trusted: true, seed: 1)
        #expect(outcome?.move == .start(2, openedBy: "bob"))
    }
}
