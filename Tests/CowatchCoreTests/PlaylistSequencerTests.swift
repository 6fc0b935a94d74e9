import Testing

@testable import CowatchCore

/// Issue 23 end to end through the sequencer: edits from connections, the switch to an entry
/// (the `open` hold, then the countdown), availability, end-of-file reports, roles, late joiners,
/// restarts, and peers without the feature.
@Suite("Playlist: through the sequencer")
struct PlaylistSequencerTests: SequencerTesting {
    static let fingerprint = String(repeating: "ef", count: 32)

    /// Room "r" with `names` on connections 1…n at time 0; each speaks the playlist unless
    /// `without` names it. Budgets are wide: these tests edit fast.
    func room(_ names: [String], without: Set<String> = [], managed: Bool = false, records: [String: RoomSequencer.RoomRecord] = [:]) -> RoomSequencer {
        var configuration = RoomSequencer.Configuration()
        configuration.admission.idleTimeout = 1e9
        configuration.admission.actionBurst = 1000
        configuration.managed = managed
        configuration.playlistSeed = 7
        configuration.tokenKey = [UInt8](repeating: 3, count: 32)
        var sequencer = RoomSequencer(configuration: configuration, records: records)
        for (index, name) in names.enumerated() {
            _ = join(&sequencer, name, id: index + 1, playlist: !without.contains(name), now: 0)
        }
        return sequencer
    }

    func join(
        _ sequencer: inout RoomSequencer, _ name: String, id: Int, playlist: Bool = true, media: String = "/films/night.mkv", now: Double
    ) -> [Output] {
        let features = playlist ? [WireFeature.roles, WireFeature.playlist] : [WireFeature.roles]
        return sequencer.enter(.hello(.init(features: features, room: "r", name: name, activity: Activity(url: media))), from: id, now: now)
    }

    func item(_ number: Int) -> PlaylistItem {
        PlaylistItem(url: "https://example.org/ep\(number).mkv", title: "Episode \(number)")
    }

    func file(_ number: Int) -> PlaylistItem {
        PlaylistItem(file: .init(size: 1000 + number, fingerprint: Self.fingerprint, duration: 100, name: "ep\(number).mkv"))
    }

    func state(_ sequencer: RoomSequencer) -> PlaylistState { sequencer.playlist(of: "r")?.state ?? PlaylistState() }

    /// An edit on the list as the sender sees it now.
    func edit(_ sequencer: inout RoomSequencer, _ edit: PlaylistEdit, from id: Int, requestID: Int = 1, now: Double) -> [Output] {
        let seen = state(sequencer)
        return sequencer.received(.playlistEdit(.init(id: requestID, version: seen.version, current: seen.current, edit: edit)), from: id, now: now)
    }

    func playlists(_ outputs: [Output], to id: Int) -> [(state: PlaylistState, change: PlaylistChange?, requestID: Int?)] {
        messages(outputs, to: id).compactMap { if case .playlist(let state, let change, let requestID) = $0 { (state, change, requestID) } else { nil } }
    }

    func notices(_ outputs: [Output], to id: Int) -> [Notice] {
        messages(outputs, to: id).compactMap { message -> Notice? in
            switch message {
            case .notice(let notice): notice
            case .applied(_, let notice?, _, _): notice
            default: nil
            }
        }
    }

    /// The codes of the refusals and errors `id` got, with the request ids refusals named.
    func refusals(_ outputs: [Output], to id: Int) -> [String] {
        messages(outputs, to: id).compactMap { message -> String? in
            switch message {
            case .refused(let actionID, let code, _): actionID.map { "\(code) \($0)" } ?? code
            case .error(let code, _): code
            default: nil
            }
        }
    }

    /// Every member reports `ready` for the current hold at `now`; the outputs.
    func land(_ sequencer: inout RoomSequencer, _ ids: [Int], now: Double) -> [Output] {
        let seq = sequencer.timeline(of: "r")?.seq ?? 0
        return ids.flatMap { sequencer.received(.ready(seq: seq), from: $0, now: now) }
    }

    @Test("an edit reaches everyone who speaks the playlist, the editor's copy with its id; a peer without it gets unsupported")
    func editReachesEveryone() {
        var sequencer = room(["alice", "bob", "carol"], without: ["carol"])
        let outputs = edit(&sequencer, .add([item(1), item(2)], next: false), from: 2, requestID: 41, now: 1)
        let toBob = playlists(outputs, to: 2)
        let toAlice = playlists(outputs, to: 1)
        #expect(toBob.count == 1 && toBob[0].requestID == 41 && toAlice.count == 1 && toAlice[0].requestID == nil)
        #expect(toAlice[0].change?.text == "bob added 2 entries as #1–#2")
        #expect(toAlice[0].state.entries.map(\.id) == [1, 2] && toAlice[0].state.version == 1)
        #expect(messages(outputs, to: 3).isEmpty)
        #expect(outputs.contains(.saveRecords))
        let fromCarol = sequencer.received(.playlistEdit(.init(id: 1, version: 1, current: nil, edit: .clear)), from: 3, now: 2)
        #expect(fromCarol == [.send(3, .unsupported(type: "playlist_edit"))])
        #expect(sequencer.received(.playlistHave(version: 1, have: []), from: 3, now: 2) == [.send(3, .unsupported(type: "playlist_have"))])
        #expect(sequencer.received(.playlistEnded(activity: 0, position: 1), from: 3, now: 2) == [.send(3, .unsupported(type: "playlist_eof"))])
        #expect(state(sequencer).entries.count == 2)
    }

    @Test("a stale edit is refused with stale-playlist, and its sender gets the list as it is")
    func staleEdit() {
        var sequencer = room(["alice", "bob"])
        _ = edit(&sequencer, .add([item(1)], next: false), from: 1, now: 1)
        let stale = sequencer.received(.playlistEdit(.init(id: 9, version: 0, current: nil, edit: .clear)), from: 2, now: 2)
        #expect(stale.count == 2)
        #expect(refusals(stale, to: 2) == ["stale-playlist 9"])
        #expect(playlists(stale, to: 2).first?.state == state(sequencer) && playlists(stale, to: 2).first?.change == nil)
        #expect(state(sequencer).entries.count == 1)
    }

    @Test("a jump switches everyone (the state first, then the applied), holds until all landed, then starts after the countdown")
    func jumpHoldCountdown() throws {
        var sequencer = room(["alice", "bob", "carol"], without: ["carol"])
        _ = edit(&sequencer, .add([item(1), item(2)], next: false), from: 1, now: 1)
        let outputs = edit(&sequencer, .jump(2), from: 2, requestID: 5, now: 10)
        let toAlice = messages(outputs, to: 1)
        guard toAlice.count == 2, case .playlist(let list, let change, nil) = toAlice[0],
            case .applied(let held, let notice, nil, let activity?) = toAlice[1]
        else {
            Issue.record("alice got \(toAlice)")
            return
        }
        #expect(list.current == 2 && list.activity == activity.id && activity.id == 1)
        #expect(change?.text == "bob skipped to #2 (Episode 2)")
        #expect(activity.url == "https://example.org/ep2.mkv" && activity.openedBy == "bob" && activity.title == "Episode 2")
        #expect(held.holding && !held.playing && held.position == 0)
        #expect(notice?.action == .open && notice?.actor == "bob")
        // Carol, without the feature, follows the switch like any open.
        #expect(applied(outputs, to: 3) == [held])
        #expect(playlists(outputs, to: 2).first?.requestID == 5)

        #expect(applied(land(&sequencer, [1, 2], now: 11), to: 1).isEmpty, "carol has not landed")
        let started = try #require(applied(land(&sequencer, [3], now: 12), to: 1).first)
        #expect(started.playing && started.reference == 15 && started.position == 0)
    }

    @Test("a countdown of 0 starts with the usual lead; the room's countdown is a setting")
    func zeroCountdown() throws {
        var sequencer = room(["alice", "bob"])
        _ = edit(&sequencer, .add([item(1)], next: false), from: 1, now: 1)
        _ = edit(&sequencer, .setCountdown(0), from: 1, now: 2)
        _ = edit(&sequencer, .jump(1), from: 1, now: 10)
        let started = try #require(applied(land(&sequencer, [1, 2], now: 11), to: 2).first)
        #expect(started.playing && abs(started.reference - 11.12) < 1e-9)
    }

    @Test("one who lacks the entry is skipped for it, with a notice, and the group goes on without waiting")
    func lackingSkipped() throws {
        var sequencer = room(["alice", "bob"])
        _ = edit(&sequencer, .add([file(1), file(2)], next: false), from: 1, now: 1)
        let version = state(sequencer).version
        let report = sequencer.received(.playlistHave(version: version, have: [2]), from: 2, now: 2)
        #expect(messages(report, to: 1) == [.playlistAvailability(PlaylistAvailability(name: "bob", marks: [.lacks, .has]), version: version)])
        #expect(sequencer.received(.playlistHave(version: version, have: [2]), from: 2, now: 3).isEmpty, "unchanged")
        #expect(state(sequencer).availability == [PlaylistAvailability(name: "bob", marks: [.lacks, .has])])

        let outputs = edit(&sequencer, .jump(1), from: 1, now: 10)
        let skipped = notices(outputs, to: 1).first { $0.action == .continued }
        #expect(skipped?.others == ["bob"] && skipped?.detail == "does not have #1")
        #expect(skipped?.text == "continuing without bob (does not have #1)")
        let started = try #require(applied(land(&sequencer, [1], now: 11), to: 2).first)
        #expect(started.playing && started.reference == 14)
    }

    @Test("one who says it lacks the entry during the hold is skipped at once")
    func lackingDuringHold() throws {
        var sequencer = room(["alice", "bob"])
        _ = edit(&sequencer, .add([file(1)], next: false), from: 1, now: 1)
        _ = edit(&sequencer, .jump(1), from: 1, now: 10)
        _ = land(&sequencer, [1], now: 11)
        let report = sequencer.received(.playlistHave(version: state(sequencer).version, have: []), from: 2, now: 12)
        #expect(notices(report, to: 1).contains { $0.action == .continued && $0.others == ["bob"] })
        let started = try #require(applied(report, to: 1).first)
        #expect(started.playing && started.reference == 15)
    }

    @Test("a laggard is left behind at the open deadline, with a notice; then the countdown")
    func laggard() throws {
        var sequencer = room(["alice", "bob"])
        _ = edit(&sequencer, .add([item(1)], next: false), from: 1, now: 1)
        _ = edit(&sequencer, .jump(1), from: 1, now: 10)
        _ = land(&sequencer, [1], now: 11)
        #expect(applied(sequencer.tick(now: 24.9), to: 1).isEmpty)
        let outputs = sequencer.tick(now: 25)
        #expect(notices(outputs, to: 1).contains { $0.action == .continued && $0.others == ["bob"] })
        let started = try #require(applied(outputs, to: 1).first)
        #expect(started.playing && started.reference == 28)
    }

    /// Alice, bob and carol (without the feature) watch entry 1 (a file of 100 s) of two, which
    /// started playing at reference instant 14.
    func watchingFirst() -> RoomSequencer {
        var sequencer = room(["alice", "bob", "carol"], without: ["carol"])
        _ = edit(&sequencer, .add([file(1), file(2)], next: false), from: 1, now: 1)
        _ = edit(&sequencer, .jump(1), from: 1, now: 10)
        _ = land(&sequencer, [1, 2, 3], now: 11)
        return sequencer
    }

    @Test("the end of an entry moves everyone to the next one; a stray or a second report does nothing")
    func advanceAtEnd() throws {
        var sequencer = watchingFirst()
        let activity = try #require(sequencer.activity(of: "r")?.id)
        #expect(sequencer.timeline(of: "r")?.reference == 14)
        // A late joiner's copy ends at 30 s, while the room is at 36 s.
        #expect(sequencer.received(.playlistEnded(activity: activity, position: 30), from: 2, now: 50).isEmpty)
        // A report for the media before.
        #expect(sequencer.received(.playlistEnded(activity: activity - 1, position: 100), from: 2, now: 113).isEmpty)
        let outputs = sequencer.received(.playlistEnded(activity: activity, position: 99.95), from: 1, now: 113.5)
        let change = try #require(playlists(outputs, to: 2).first?.change)
        #expect(change.kind == "advance" && change.actor == nil && change.text == "ep1.mkv ended; playing #2 (ep2.mkv)")
        let switched = messages(outputs, to: 3).compactMap { if case .applied(_, _, _, let activity?) = $0 { activity } else { nil } }
        #expect(switched.map(\.url) == ["ep2.mkv"] && switched.first?.id == activity + 1, "carol, without the feature, follows")
        #expect(state(sequencer).current == 2 && state(sequencer).activity == activity + 1)
        #expect(sequencer.received(.playlistEnded(activity: activity, position: 100), from: 2, now: 113.6).isEmpty)
    }

    @Test("the end of the last entry stops the group there (repeat none), silently in the applied, told in the list")
    func endOfList() throws {
        var sequencer = watchingFirst()
        _ = edit(&sequencer, .remove(2), from: 1, now: 20)
        let activity = try #require(sequencer.activity(of: "r")?.id)
        let outputs = sequencer.received(.playlistEnded(activity: activity, position: 100), from: 2, now: 114)
        #expect(playlists(outputs, to: 1).first?.change?.kind == "finish")
        let stopped = try #require(applied(outputs, to: 3).first)
        #expect(!stopped.playing && stopped.position == 100)
        #expect(messages(outputs, to: 3).allSatisfy { if case .applied(_, nil, nil, nil) = $0 { true } else { false } })
    }

    @Test("managed rooms: members edit only once the owner opens the list, and still may not control playback")
    func managedRoles() {
        var sequencer = room(["alice", "bob"], managed: true)
        let refused = edit(&sequencer, .add([item(1)], next: false), from: 2, requestID: 3, now: 1)
        #expect(refused.count == 1 && refusals(refused, to: 2) == ["not-permitted 3"])
        let notOwner = edit(&sequencer, .setEditing(open: true), from: 2, requestID: 4, now: 2)
        #expect(refusals(notOwner, to: 2) == ["not-permitted 4"])
        let opened = edit(&sequencer, .setEditing(open: true), from: 1, now: 3)
        #expect(playlists(opened, to: 2).first?.state.openEditing == true)
        let added = edit(&sequencer, .add([item(1)], next: false), from: 2, now: 4)
        #expect(playlists(added, to: 1).first?.change?.text == "bob added Episode 1 as #1")
        let pause = sequencer.received(.action(.init(id: 8, kind: .pause, position: 3)), from: 2, now: 5)
        #expect(refusals(pause, to: 2) == ["not-permitted 8"])
    }

    @Test("a late joiner gets the list, its current entry and the timeline right after its welcome")
    func lateJoiner() throws {
        var sequencer = watchingFirst()
        _ = sequencer.received(.playlistHave(version: state(sequencer).version, have: [1, 2]), from: 2, now: 20)
        let outputs = join(&sequencer, "dave", id: 4, now: 30)
        let toDave = messages(outputs, to: 4)
        guard toDave.count >= 2, case .welcome(let welcome) = toDave[0], case .playlist(let list, nil, nil) = toDave[1] else {
            Issue.record("dave got \(toDave)")
            return
        }
        #expect(welcome.timeline.playing && welcome.activity.id == list.activity && list.current == 1)
        #expect(list.entries.count == 2 && list.availability == [PlaylistAvailability(name: "bob", marks: [.has, .has])])
        // One who left is no longer listed.
        _ = sequencer.disconnected(2, now: 31)
        #expect(state(sequencer).availability.isEmpty)
    }

    @Test("the list survives a server restart with the room's record, and the room carries on through it")
    func restart() throws {
        var sequencer = watchingFirst()
        _ = edit(&sequencer, .setRepeat(.all), from: 1, now: 20)
        let saved = sequencer.recordsForSaving(now: 40)
        // Through the cluster's directory and back, as another server would read it.
        let record = try #require(saved["r"])
        let moved = try #require(RoomSequencer.RoomRecord(directoryJSON: try JSONValue.parse(record.directoryJSON.encoded())))
        #expect(moved.playlist.entries == record.playlist.entries && moved.playlist.repeatMode == .all)
        // The directory keeps no timeline; the server's own file does: the record as saved,
        // its playlist as the directory gave it back.
        var kept = record
        kept.playlist = moved.playlist
        var restarted = room([], records: ["r": kept])
        // Someone comes back playing the entry the room played (its name, as the room told it).
        let outputs = join(&restarted, "erin", id: 7, media: "ep1.mkv", now: 50)
        let list = try #require(playlists(outputs, to: 7).first?.state)
        #expect(list.entries.map(\.id) == [1, 2] && list.current == 1 && list.activity == 0 && list.repeatMode == .all)
        // The room carries on from its kept place, and the entry's end moves it on.
        let timeline = try #require(restarted.timeline(of: "r"))
        #expect(timeline.playing && abs(timeline.position(at: 50) - 36) < 1e-9)
        let end = 50 + (100 - timeline.position(at: 50))
        #expect(restarted.received(.playlistEnded(activity: 0, position: 100), from: 7, now: end - 3).isEmpty)
        let next = restarted.received(.playlistEnded(activity: 0, position: 100), from: 7, now: end)
        #expect(playlists(next, to: 7).first?.state.current == 2)
    }

    @Test("an old record without a playlist still loads, as an empty list")
    func oldRecord() throws {
        let text = #"{"operators":{},"owner":"alice","owner_token":"00112233445566778899aabbccddeeff","names":[]}"#
        let record = try #require(RoomSequencer.RoomRecord(directoryJSON: try JSONValue.parse(Array(text.utf8))))
        #expect(record.playlist == RoomPlaylist())
        #expect(record.directoryJSON["playlist"] == nil, "an untouched list adds nothing to the record")
        var sequencer = room(["x"], records: ["r": record])
        #expect(sequencer.playlist(of: "r")?.entries.isEmpty == true)
        _ = edit(&sequencer, .add([item(1)], next: false), from: 1, now: 1)
        #expect(sequencer.recordsForSaving(now: 2)["r"]?.directoryJSON["playlist"] != nil)
    }

    @Test("playlist messages before a welcome: an edit is a protocol violation, reports are ignored")
    func beforeWelcome() {
        var sequencer = room([])
        _ = sequencer.connected(9, now: 0)
        #expect(sequencer.received(.playlistHave(version: 0, have: []), from: 9, now: 0).isEmpty)
        #expect(sequencer.received(.playlistEnded(activity: 0, position: 0), from: 9, now: 0).isEmpty)
        let edit = sequencer.received(.playlistEdit(.init(id: 1, version: 0, current: nil, edit: .clear)), from: 9, now: 0)
        #expect(refusals(edit, to: 9) == ["protocol-violation"])
    }

    @Test("hostile lines from a joined peer are refused or end its connection, never trap the server")
    func hostileLines() {
        var sequencer = room(["alice", "bob"])
        let lines = [
            #"{"type":"playlist_edit","id":1,"version":0,"op":"insert","entries":[{"url":"https://x/a"}],"at":-1}"#,
            #"{"type":"playlist_edit","id":1,"version":0,"op":"move","entry":1,"to":1e300}"#,
            #"{"type":"playlist_have","version":0,"have":[1.5]}"#,
            #"{"type":"playlist_eof","activity":0,"position":"end"}"#,
        ]
        for (index, line) in lines.enumerated() {
            var copy = sequencer
            let outputs = copy.receivedLine(Array(line.utf8), from: 2, now: Double(index))
            #expect(refusals(outputs, to: 2) == ["protocol-violation"], "\(line)")
        }
        // Within the wire's bounds, but not the list's: refused, the connection lives.
        let far = #"{"type":"playlist_edit","id":1,"version":0,"op":"insert","entries":[{"url":"https://x/a"}],"at":9000000000000000}"#
        #expect(refusals(sequencer.receivedLine(Array(far.utf8), from: 2, now: 9), to: 2) == ["invalid-argument 1"])
        let local = #"{"type":"playlist_edit","id":2,"version":0,"op":"add","entries":[{"url":"/etc/passwd"}]}"#
        #expect(refusals(sequencer.receivedLine(Array(local.utf8), from: 2, now: 10), to: 2) == ["not-permitted 2"])
    }
}
