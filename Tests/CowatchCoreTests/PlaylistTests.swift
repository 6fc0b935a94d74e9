import Testing

@testable import CowatchCore

/// Issue 23: the room's shared playlist, the pure machine on its own (no sequencer).
@Suite("Playlist: edits, versions, roles and bounds")
struct PlaylistTests {
    static let fingerprint = String(repeating: "ab", count: 32)

    func item(_ number: Int) -> PlaylistItem {
        PlaylistItem(url: "https://example.org/ep\(number).mkv", title: "Episode \(number)")
    }

    func file(_ name: String, duration: Double? = 1420.5) -> PlaylistItem {
        PlaylistItem(file: .init(size: 734_003_200, fingerprint: Self.fingerprint, duration: duration, name: name))
    }

    /// An edit made on the list as it is, by `actor`.
    @discardableResult
    func edit(
        _ playlist: inout RoomPlaylist, _ edit: PlaylistEdit, by actor: String = "ann", role: Role = .owner, managed: Bool = false,
        seed: UInt64 = 1
    ) throws(CowatchError) -> PlaylistOutcome {
        try playlist.apply(
            .init(id: 1, version: playlist.version, current: playlist.current, edit: edit), by: actor, role: role, managed: managed,
            seed: seed)
    }

    /// A list of `count` URL entries, ids 1…count, nothing started.
    func list(_ count: Int) throws -> RoomPlaylist {
        var playlist = RoomPlaylist()
        try edit(&playlist, .add((1...count).map(item), next: false))
        return playlist
    }

    func titles(_ playlist: RoomPlaylist) -> [String] { playlist.entries.map(\.displayTitle) }

    // MARK: Edits

    @Test("add appends with new ids (duplicates allowed), names the actor and the position; every edit raises the version")
    func add() throws {
        var playlist = RoomPlaylist()
        let first = try edit(&playlist, .add([item(1), item(2)], next: false), by: "bob")
        #expect(first.change == PlaylistChange(actor: "bob", kind: "add", text: "bob added 2 entries as #1–#2", entry: 1))
        #expect(first.move == nil)
        let again = try edit(&playlist, .add([item(1)], next: false), by: "bob")
        #expect(again.change.text == "bob added Episode 1 as #3")
        #expect(playlist.entries.map(\.id) == [1, 2, 3] && playlist.version == 2)
        #expect(playlist.entries.allSatisfy { $0.addedBy == "bob" })
        #expect(playlist.entries[0].media == playlist.entries[2].media)
    }

    @Test("add next puts entries right after the current one; insert puts them where asked")
    func addNextAndInsert() throws {
        var playlist = try list(3)
        playlist.started(2, activity: 1)
        try edit(&playlist, .add([item(9)], next: true))
        #expect(titles(playlist) == ["Episode 1", "Episode 2", "Episode 9", "Episode 3"])
        let inserted = try edit(&playlist, .insert([item(7)], at: 0))
        #expect(inserted.change.text == "ann added Episode 7 as #1")
        #expect(titles(playlist).first == "Episode 7")
        try edit(&playlist, .insert([item(8)], at: playlist.entries.count))
        #expect(titles(playlist).last == "Episode 8")
        #expect(throws: CowatchError(.invalidArgument, "")) { try edit(&playlist, .insert([item(1)], at: playlist.entries.count + 1)) }
        #expect(throws: CowatchError(.invalidArgument, "")) { try edit(&playlist, .insert([item(1)], at: -1)) }
        #expect(throws: CowatchError(.invalidArgument, "")) { try edit(&playlist, .add([], next: false)) }
    }

    @Test("remove and move say what they did; unknown entries and positions are refused")
    func removeAndMove() throws {
        var playlist = try list(4)
        let removed = try edit(&playlist, .remove(3))
        #expect(removed.change.text == "ann removed #3 (Episode 3)" && removed.change.entry == 3)
        #expect(playlist.entries.map(\.id) == [1, 2, 4])
        let moved = try edit(&playlist, .move(4, to: 0))
        #expect(moved.change.text == "ann moved Episode 4 from #3 to #1")
        #expect(playlist.entries.map(\.id) == [4, 1, 2])
        #expect(throws: CowatchError(.invalidArgument, "")) { try edit(&playlist, .remove(3)) }
        #expect(throws: CowatchError(.invalidArgument, "")) { try edit(&playlist, .move(1, to: 3)) }
        #expect(throws: CowatchError(.invalidArgument, "")) { try edit(&playlist, .move(1, to: Int.max)) }
        #expect(throws: CowatchError(.invalidArgument, "")) { try edit(&playlist, .jump(99)) }
    }

    @Test("jump, next and previous move the group (by the editor); started makes the entry current and raises the version")
    func moves() throws {
        var playlist = try list(3)
        // Nothing started: next is the first entry; there is nothing before it.
        #expect(try edit(&playlist, .next).move == .start(1, openedBy: "ann"))
        #expect(throws: CowatchError(.invalidArgument, "")) { try edit(&playlist, .previous) }
        let jump = try edit(&playlist, .jump(2), by: "ann")
        #expect(jump.move == .start(2, openedBy: "ann"))
        #expect(jump.change.text == "ann skipped to #2 (Episode 2)")
        let version = playlist.version
        playlist.started(2, activity: 5)
        #expect(playlist.current == 2 && playlist.playingActivity == 5 && playlist.version == version + 1)
        #expect(try edit(&playlist, .next).move == .start(3, openedBy: "ann"))
        let back = try edit(&playlist, .previous)
        #expect(back.move == .start(1, openedBy: "ann") && back.change.text == "ann went back to #1 (Episode 1)")
        playlist.started(3, activity: 6)
        #expect(throws: CowatchError(.invalidArgument, "")) { try edit(&playlist, .next) }
        // Repeat all wraps both ways.
        try edit(&playlist, .setRepeat(.all))
        #expect(try edit(&playlist, .next).move == .start(1, openedBy: "ann"))
        playlist.started(1, activity: 7)
        #expect(try edit(&playlist, .previous).move == .start(3, openedBy: "ann"))
    }

    @Test("an edit made on another version, or another current entry, is stale and changes nothing")
    func stale() throws {
        var playlist = try list(2)
        let before = playlist
        let old = PlaylistEditRequest(id: 4, version: playlist.version - 1, current: nil, edit: .clear)
        #expect(throws: CowatchError(.stalePlaylist, "")) { try playlist.apply(old, by: "ann", role: .owner, managed: false, seed: 1) }
        let otherCurrent = PlaylistEditRequest(id: 4, version: playlist.version, current: 2, edit: .clear)
        #expect(throws: CowatchError(.stalePlaylist, "")) { try playlist.apply(otherCurrent, by: "ann", role: .owner, managed: false, seed: 1) }
        #expect(playlist == before)
        // Two people edit the same version: the first wins, the second is refused and retries.
        let bob = PlaylistEditRequest(id: 1, version: playlist.version, current: nil, edit: .remove(1))
        let carol = PlaylistEditRequest(id: 1, version: playlist.version, current: nil, edit: .move(1, to: 1))
        _ = try playlist.apply(bob, by: "bob", role: .member, managed: false, seed: 1)
        #expect(throws: CowatchError(.stalePlaylist, "")) { try playlist.apply(carol, by: "carol", role: .member, managed: false, seed: 1) }
        #expect(playlist.entries.map(\.id) == [2])
    }

    @Test("replace and clear keep the current media playing; one undo takes back the last change to the list")
    func replaceClearUndo() throws {
        var playlist = try list(3)
        playlist.started(2, activity: 1)
        let replaced = try edit(&playlist, .replace([item(7), item(8)]))
        #expect(replaced.change.text == "ann replaced the playlist (2 entries)" && replaced.move == nil)
        #expect(playlist.entries.map(\.id) == [4, 5] && playlist.current == nil && playlist.playing == 2)
        #expect(playlist.state.canUndo)
        let undone = try edit(&playlist, .undo)
        #expect(undone.change.text == "ann undid the last change to the playlist")
        #expect(playlist.entries.map(\.id) == [1, 2, 3] && playlist.current == 2)
        #expect(throws: CowatchError(.invalidArgument, "")) { try edit(&playlist, .undo) }
        try edit(&playlist, .clear)
        #expect(playlist.entries.isEmpty)
        try edit(&playlist, .undo)
        #expect(playlist.entries.count == 3)
        // Ids are never given twice, not even after an undo.
        try edit(&playlist, .add([item(1)], next: false))
        #expect(playlist.entries.last?.id == 6)
    }

    @Test("removing the entry that plays keeps its place: next goes on with what came after it")
    func removeCurrent() throws {
        var playlist = try list(4)
        playlist.started(2, activity: 1)
        try edit(&playlist, .remove(2))
        #expect(playlist.current == nil && playlist.state.activity == nil)
        // Entries added before the place push it on; the next entry is still #3's.
        try edit(&playlist, .insert([item(9)], at: 0))
        #expect(try edit(&playlist, .next).move == .start(3, openedBy: "ann"))
        #expect(try edit(&playlist, .previous).move == .start(1, openedBy: "ann"))
        try edit(&playlist, .move(3, to: 0))
        #expect(try edit(&playlist, .next).move == .start(4, openedBy: "ann"))
    }

    @Test("settings: repeat, countdown and editing are room state, and say who set them")
    func settings() throws {
        var playlist = RoomPlaylist()
        #expect(try edit(&playlist, .setRepeat(.one)).change.text == "ann set the playlist to repeat the current entry")
        #expect(try edit(&playlist, .setCountdown(0)).change.text == "ann set the playlist's countdown to 0 s")
        #expect(try edit(&playlist, .setEditing(open: true)).change.text == "ann let everyone edit the playlist")
        let state = playlist.state
        #expect(state.repeatMode == .one && state.countdown == 0 && state.openEditing && state.version == 3)
        #expect(throws: CowatchError(.invalidArgument, "")) { try edit(&playlist, .setCountdown(61)) }
        #expect(throws: CowatchError(.invalidArgument, "")) { try edit(&playlist, .setCountdown(.nan)) }
        #expect(throws: CowatchError(.invalidArgument, "")) { try edit(&playlist, .setCountdown(-1)) }
    }

    // MARK: Roles

    @Test("managed rooms: only owner and operators edit, until the owner opens the list; unmanaged: everyone")
    func roles() throws {
        var playlist = RoomPlaylist()
        try edit(&playlist, .add([item(1)], next: false), by: "bob", role: .member, managed: false)
        #expect(throws: CowatchError(.notPermitted, "")) {
            try edit(&playlist, .add([item(2)], next: false), by: "bob", role: .member, managed: true)
        }
        try edit(&playlist, .add([item(2)], next: false), by: "olga", role: .operator, managed: true)
        #expect(throws: CowatchError(.notPermitted, "")) {
            try edit(&playlist, .setEditing(open: true), by: "olga", role: .operator, managed: true)
        }
        try edit(&playlist, .setEditing(open: true), by: "ann", role: .owner, managed: true)
        try edit(&playlist, .jump(1), by: "bob", role: .member, managed: true)
        try edit(&playlist, .setEditing(open: false), by: "ann", role: .owner, managed: true)
        #expect(throws: CowatchError(.notPermitted, "")) { try edit(&playlist, .next, by: "bob", role: .member, managed: true) }
    }

    // MARK: Bounds and hostile input

    @Test("at most 500 entries and the byte budget: past them, playlist-full and nothing changes")
    func full() throws {
        var playlist = try list(499)
        try edit(&playlist, .add([item(500)], next: false))
        let before = playlist
        #expect(throws: CowatchError(.playlistFull, "")) { try edit(&playlist, .add([item(501)], next: false)) }
        #expect(throws: CowatchError(.playlistFull, "")) { try edit(&playlist, .replace((1...501).map(item))) }
        #expect(playlist == before)
        // 500 entries of long URLs do not fit one line: refused by bytes.
        let long = (1...200).map { PlaylistItem(url: "https://example.org/" + String(repeating: "x", count: 900) + "\($0)") }
        var empty = RoomPlaylist()
        #expect(throws: CowatchError(.playlistFull, "")) { try edit(&empty, .add(long, next: false)) }
        #expect(empty.entries.isEmpty)
        // A full state stays within a line.
        #expect(ServerMessage.playlist(playlist.state, change: nil, requestID: nil).encoded().count < wireMaxLineBytes)
    }

    @Test(
        "entries: network URLs or files by identity only; titles of 1–200 characters without control characters",
        arguments: [
            PlaylistItem(url: "/home/ann/film.mkv"), PlaylistItem(url: "file:///etc/passwd"), PlaylistItem(url: "edl://x"),
            PlaylistItem(url: "https:///nohost"), PlaylistItem(url: "https://x/a\u{85}b"),
            PlaylistItem(url: "https://x/a", title: String(repeating: "é", count: 201)),
            PlaylistItem(url: "https://x/a", title: "bell\u{7}"), PlaylistItem(url: "https://x/a", title: "rtl\u{202E}"),
            PlaylistItem(url: "https://x/a", title: ""),
            PlaylistItem(file: .init(size: 1, fingerprint: "abc", name: "a.mkv")),
            PlaylistItem(file: .init(size: 1, fingerprint: String(repeating: "AB", count: 32), name: "a.mkv")),
            PlaylistItem(file: .init(size: -1, fingerprint: PlaylistTests.fingerprint, name: "a.mkv")),
            PlaylistItem(file: .init(size: 1, fingerprint: PlaylistTests.fingerprint, name: "../a.mkv")),
            PlaylistItem(file: .init(size: 1, fingerprint: PlaylistTests.fingerprint, duration: .infinity, name: "a.mkv")),
            PlaylistItem(file: .init(size: 1, fingerprint: PlaylistTests.fingerprint, duration: -3, name: "a.mkv")),
        ])
    func hostileEntries(item: PlaylistItem) {
        var playlist = RoomPlaylist()
        #expect(throws: CowatchError.self) { try edit(&playlist, .add([item], next: false)) }
        #expect(playlist.entries.isEmpty && playlist.version == 0)
    }

    @Test("a title of exactly 200 characters, and a file by identity with its name as the hint, are fine")
    func fineEntries() throws {
        var playlist = RoomPlaylist()
        try edit(&playlist, .add([PlaylistItem(url: "https://x/a", title: String(repeating: "é", count: 200)), file("ep4.mkv")], next: false))
        #expect(playlist.entries[1].displayTitle == "ep4.mkv" && playlist.entries[1].duration == 1420.5)
        let activity = RoomPlaylist.activity(for: playlist.entries[1], openedBy: "bob")
        #expect(activity.url == "ep4.mkv" && activity.openedBy == "bob" && !activity.url.contains("/"))
    }

    // MARK: Availability

    @Test("availability: per participant, entry by entry; entries added after a report are unknown; stale reports are ignored")
    func availability() throws {
        var playlist = try list(3)
        let report = playlist.report(have: [1, 3, 77], version: playlist.version, from: "bob")
        #expect(report == PlaylistAvailability(name: "bob", marks: [.has, .lacks, .has]))
        #expect(playlist.lacks("bob", 2) && !playlist.lacks("bob", 1) && !playlist.lacks("carol", 2))
        #expect(playlist.report(have: [1, 3], version: playlist.version, from: "bob") == nil, "unchanged: nothing to tell")
        try edit(&playlist, .add([item(4)], next: false))
        #expect(playlist.state.availability == [PlaylistAvailability(name: "bob", marks: [.has, .lacks, .has, .unknown])])
        #expect(playlist.report(have: [1, 2, 3, 4], version: playlist.version - 1, from: "bob") == nil, "made on the old list")
        #expect(playlist.report(have: [], version: playlist.version + 1, from: "bob") == nil, "from the future")
        #expect(playlist.state.availability[0].lacking(in: playlist.entries) == [2])
        #expect(playlist.forget("bob") && playlist.state.availability.isEmpty)
        // A setting changes the version but not the entries: a report on either version counts.
        _ = playlist.report(have: [], version: playlist.version, from: "carol")
        try edit(&playlist, .setRepeat(.all))
        #expect(playlist.report(have: [1], version: playlist.version - 1, from: "carol") != nil)
    }

    // MARK: Shuffle

    @Test("shuffle reorders only the entries after the current one, the same way for the same seed")
    func shuffle() throws {
        var one = try list(10)
        one.started(3, activity: 1)
        var two = one
        let change = try edit(&one, .setShuffle(true), seed: 42)
        try edit(&two, .setShuffle(true), seed: 42)
        #expect(change.change.text == "ann shuffled the rest of the playlist")
        #expect(one.entries == two.entries, "same seed, same order")
        #expect(one.entries.prefix(3).map(\.id) == [1, 2, 3], "the current and those before it stay")
        #expect(Set(one.entries.dropFirst(3).map(\.id)) == Set(4...10))
        #expect(one.entries.dropFirst(3).map(\.id) != Array(4...10))
        var three = try list(10)
        three.started(3, activity: 1)
        try edit(&three, .setShuffle(true), seed: 43)
        #expect(three.entries != one.entries, "another seed, another order")
        // The shuffle is undoable; turning it off keeps the order.
        try edit(&one, .undo)
        #expect(one.entries.map(\.id) == Array(1...10))
        try edit(&one, .setShuffle(false))
        #expect(!one.shuffle)
    }

    @Test("the seeded generator is fixed: these numbers are the shuffle's on every machine")
    func generator() {
        var random = PlaylistRandom(seed: 0)
        #expect(random.next() == 0xE220_A839_7B1D_CDAF)
        var entries = (1...5).map { PlaylistEntry(id: $0, media: .url("https://x/\($0)"), addedBy: "a") }
        RoomPlaylist.shuffle(&entries, from: 0, seed: 7)
        var again = (1...5).map { PlaylistEntry(id: $0, media: .url("https://x/\($0)"), addedBy: "a") }
        RoomPlaylist.shuffle(&again, from: 0, seed: 7)
        #expect(entries == again && Set(entries.map(\.id)) == Set(1...5))
    }

    // MARK: Kept with the record

    @Test("the list survives a restart through its record; this run's reports and undo do not")
    func record() throws {
        var playlist = try list(3)
        try edit(&playlist, .add([file("ep4.mkv")], next: false))
        try edit(&playlist, .setRepeat(.all))
        try edit(&playlist, .setCountdown(5))
        playlist.started(2, activity: 9)
        _ = playlist.report(have: [1], version: playlist.version, from: "bob")
        let text = playlist.recordJSON.encoded()
        let back = try #require(RoomPlaylist(recordJSON: try JSONValue.parse(text)))
        #expect(back == playlist.persisted.readBack)
        #expect(back.entries == playlist.entries && back.nextID == 5 && back.version == playlist.version)
        #expect(back.repeatMode == .all && back.countdown == 5 && back.playing == 2 && back.state.availability.isEmpty)
        #expect(!back.state.canUndo)
        // Back with the same media, the room plays the entry again; with other media, not.
        var same = back
        same.roomStarted(with: Activity(url: "https://example.org/ep2.mkv"))
        #expect(same.playingActivity == 0 && same.state.current == 2)
        var other = back
        other.roomStarted(with: Activity(url: "/films/other.mkv"))
        #expect(other.playingActivity == nil)
    }

    @Test("a record's playlist is read as hostile: bad entries and repeated ids are left out, numbers fall back")
    func hostileRecord() throws {
        let good = #"{"id":3,"added_by":"bob","url":"https://x/a"}"#
        let text = #"{"version":-4,"next_id":1e300,"countdown":1e9,"repeat":"sometimes","entries":["#
            + [good, good, #"{"id":4,"added_by":"bob","url":"file:///etc/passwd"}"#,
                #"{"id":5,"added_by":"a b","url":"https://x/b"}"#, #"{"id":6,"added_by":"bob","title":"\u0007","url":"https://x/c"}"#,
                #"{"id":7,"added_by":"bob","url":"https://x/d"}"#, "7", "null"].joined(separator: ",") + "]}"
        let playlist = try #require(RoomPlaylist(recordJSON: try JSONValue.parse(Array(text.utf8))))
        #expect(playlist.entries.map(\.id) == [3, 7])
        #expect(playlist.version == 0 && playlist.nextID == 8 && playlist.countdown == RoomPlaylist.maxCountdown && playlist.repeatMode == .none)
        #expect(RoomPlaylist(recordJSON: "not an object") == nil)
    }
}

extension RoomPlaylist {
    /// The same list as a record read back has it: the activity of its entry not known yet (the
    /// room relinks it), and every report older than the list.
    var readBack: RoomPlaylist {
        var copy = self
        copy.playingActivity = nil
        copy.playingDuration = playing.flatMap(entry)?.duration
        copy.membershipVersion = version
        return copy
    }
}
