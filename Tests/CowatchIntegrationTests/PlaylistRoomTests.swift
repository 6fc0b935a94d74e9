import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 23 with real processes: the room's shared playlist, with a real `cowatch-server` and
/// real `cowatchd`s (headless libmpv) playing three short ffmpeg-made films
/// (`TestMedia.playlistFilms()`: 6, 12 and 6 s). Every viewer has its own copies, under folders
/// and names of its own, found by identity through its `--media-dir`.
///
/// Everything is read through each daemon's control socket: `get_playlist` (the list, and this
/// viewer's own path for each entry), `get_status` (what its player plays, where, whether paused)
/// and the events its listener received since it started (notices, `playlist` events). Bounds
/// are generous for a loaded 2-core machine: seconds for switches, half a second between players.
/// Each player's own mpv playlist is read on its mpv IPC socket, past the daemon.
@Suite("A shared playlist in a room of real daemons", .serialized, .realProcesses)
struct PlaylistRoomTests {
    /// How far apart players may be once an entry plays. The room keeps them within tens of
    /// milliseconds; this bound catches an entry started at another place or another time.
    static let stepBound = 0.5
    /// Seconds a switch to an entry may take: every player loads it (slowly, on a loaded
    /// machine), then the countdown.
    static let switchSlack = 15.0

    @Test("three films under other paths and names play through untouched; one who lacks the second is skipped and rejoins on the third; a late joiner lands in the second")
    func playsThrough() async throws {
        let films = try await TestMedia.playlistFilms()
        let seconds = TestMedia.playlistFilmSeconds
        let root = try makeTemporaryDirectory("cowatch-playlist")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (alice, bob, carol, dave) = (0, 1, 2, 3)
        let shelves = [
            try Shelf(films, in: root, at: "alice/Films", names: [0: "ep1.mkv", 1: "ep2.mkv", 2: "ep3.mkv"]),
            try Shelf(films, in: root, at: "bob/Videos/Series S01", names: [0: "The Pilot.mkv", 1: "Second (1080p).mkv", 2: "last one.mkv"]),
            // carol never got the second film.
            try Shelf(films, in: root, at: "carol/dl", names: [0: "c-1.mkv", 2: "c-3.mkv"]),
            try Shelf(films, in: root, at: "dave/media/tv", names: [0: "001.mkv", 1: "002.mkv", 2: "003.mkv"]),
        ]

        let room = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: "pl-evening")
        defer { room.stopInBackground() }
        for (name, shelf) in zip(["alice", "bob", "carol"], shelves) {
            try await room.add(name, arguments: shelf.arguments, waitJoined: false)
        }
        try await room.waitForParticipants(3)
        let watch = PlaylistWatch(room)
        /// When the entry alice plays started, by her player's position (so a check that noticed
        /// the start late does not make an entry look shorter).
        func startOfAlicesEntry() async throws -> Double {
            let now = monotonicNow()
            return now - (try await watch.status(alice).position ?? 0)
        }

        // alice queues her three films; each viewer finds its own copies by identity, and the
        // room hears that carol lacks the second.
        try await room.clients[alice].request(.playlist(.setCountdown(1)))
        try await room.clients[alice].request(.playlist(.add(shelves[alice].sources([0, 1, 2]), next: false)))
        try await watch.until("each viewer to list the three films with its own copy of each it has, and alice to see carol lacking #2", within: 15) {
            var wrong: [String] = []
            for viewer in [alice, bob, carol] {
                let locals = try await watch.playlist(viewer).entries.map(\.local)
                if locals != (0..<3).map({ shelves[viewer].paths[$0] }) {
                    wrong.append("\(room.names[viewer]) has \(locals.map { $0 ?? "-" })")
                }
            }
            let lacking = try await watch.playlist(alice).entries.map(\.lacking)
            if lacking != [[], ["carol"], []] { wrong.append("alice sees lacking \(lacking)") }
            return wrong.isEmpty ? nil : wrong.joined(separator: "; ")
        }
        try await watch.until("the same list everywhere", within: 5) { try await watch.sameList([alice, bob, carol]) }

        // alice starts the list. From here on nobody touches anything.
        let before = try await watch.mark()
        try await room.clients[alice].request(.playlist(.jump(1)))
        try await watch.until("alice, bob and carol playing their own copies of #1", within: Self.switchSlack) {
            try await watch.playingOwnCopy(of: 0, [alice, bob, carol], shelves: shelves)
        }
        var starts = [try await startOfAlicesEntry()]
        try await watch.until("the three in step on #1", within: 5) { try await watch.inStep([alice, bob, carol], bound: Self.stepBound) }
        try await watch.until("mpv's own playlist mirroring the room's at alice, bob and carol", within: 5) {
            try await watch.mpvMirrorsList([alice, bob, carol], playingCurrent: true)
        }

        // #2 follows by itself; carol, who lacks it, is left paused on her #1 and the room goes on.
        try await watch.until("alice and bob playing their own #2 while carol stands aside on her #1", within: seconds[0] + Self.switchSlack) {
            if let wrong = try await watch.playingOwnCopy(of: 1, [alice, bob], shelves: shelves) { return wrong }
            let status = try await watch.status(carol)
            guard status.media == shelves[carol].paths[0], status.paused, status.room?.canPlay == false else {
                return watch.describe(status) + ", can_play \(String(describing: status.room?.canPlay))"
            }
            return nil
        }
        starts.append(try await startOfAlicesEntry())
        try await watch.until("every viewer told the room goes on without carol for #2", within: 5) {
            let told = [alice, bob, carol].filter { viewer in
                watch.notices(viewer, since: before).contains {
                    $0.action == .continued && $0.others?.contains("carol") == true && $0.detail == "does not have #2"
                }
            }
            return told.count == 3 ? nil : "told: \(told.map { room.names[$0] })"
        }
        let carolList = try await watch.playlist(carol)
        #expect(carolList.current == 2 && carolList.entries.map(\.here) == [true, false, true], "carol's list: \(carolList.shared)")
        try await watch.until("mpv's own playlist mirroring the room's at alice and bob on #2, carol's after her #1", within: 5) {
            if let wrong = try await watch.mpvMirrorsList([alice, bob], playingCurrent: true) { return wrong }
            return try await watch.mpvMirrorsList([carol], playingCurrent: false)
        }

        // dave arrives in the middle of #2 and lands there, on his own copy.
        try await watch.until("#2 to have played 2 s at alice", within: 10) {
            let status = try await watch.status(alice)
            return (status.position ?? 0) >= 2 ? nil : watch.describe(status)
        }
        try await room.add("dave", arguments: shelves[dave].arguments, waitJoined: false)
        try await room.waitJoined(dave, participants: 4, timeout: 15)
        try await watch.until("dave to land in the middle of #2 on his own copy, in step with alice and bob", within: 8) {
            if let wrong = try await watch.playingOwnCopy(of: 1, [dave], shelves: shelves) {
                let list = try await watch.playlist(dave)
                return wrong + "; his list: #\(list.current.map(String.init) ?? "-") here \(list.entries.map(\.here)); "
                    + "\(watch.happenings(alice) { $0.actor == "dave" || $0.others?.contains("dave") == true })"
            }
            if let apart = try await watch.inStep([alice, bob, dave], bound: Self.stepBound) { return apart }
            let status = try await watch.status(dave)
            return (status.position ?? 0) > 2 ? nil : "dave started from the start: " + watch.describe(status)
        }
        let daveList = try await watch.playlist(dave)
        #expect(daveList.current == 2, "dave's list: \(daveList.shared)")
        #expect(daveList.entries.map(\.local) == (0..<3).map { shelves[dave].paths[$0] })
        try await watch.until("mpv's own playlist mirroring the room's at dave, who joined late", within: 5) {
            try await watch.mpvMirrorsList([dave], playingCurrent: true)
        }

        // #3 follows by itself, and carol is back with the group.
        try await watch.until("all four playing their own copies of #3, carol too", within: seconds[1] + Self.switchSlack) {
            try await watch.playingOwnCopy(of: 2, [alice, bob, carol, dave], shelves: shelves)
        }
        starts.append(try await startOfAlicesEntry())
        try await watch.until("the four in step on #3", within: 5) {
            try await watch.inStep([alice, bob, carol, dave], bound: Self.stepBound)
        }
        try await watch.until("mpv's own playlist mirroring the room's at all four on #3", within: 5) {
            try await watch.mpvMirrorsList([alice, bob, carol, dave], playingCurrent: true)
        }

        // The list ends: everyone holds at the end of #3, told so.
        try await watch.until("every player paused at the end of #3, each told the playlist finished", within: seconds[2] + Self.switchSlack) {
            var wrong: [String] = []
            for viewer in [alice, bob, carol, dave] {
                let status = try await watch.status(viewer)
                if !status.paused || status.media != shelves[viewer].paths[2] || (status.position ?? 0) < seconds[2] - 1.5 {
                    wrong.append(watch.describe(status))
                }
                if !watch.playlistEvents(viewer, since: before).contains(where: { $0.change?.hasSuffix("the playlist finished") == true }) {
                    wrong.append("\(room.names[viewer]) not told the playlist finished")
                }
            }
            return wrong.isEmpty ? nil : wrong.joined(separator: "; ")
        }
        starts.append(monotonicNow())

        // Each film played to its end: no entry was cut short.
        for entry in 0..<3 {
            let lasted = starts[entry + 1] - starts[entry]
            #expect(lasted > seconds[entry] - 1.5, "#\(entry + 1) lasted \(lasted) s of its \(seconds[entry]) s")
        }
        // The server's own moves, in order, as alice's daemon heard of them.
        let moves = watch.playlistEvents(alice, since: before).filter { $0.actor == nil }.compactMap(\.change)
        #expect(
            moves.count == 3 && moves[0].contains("playing #2") && moves[1].contains("playing #3") && moves[2].contains("the playlist finished"),
            "the server's moves: \(moves)")
        // Nobody touched anything: no play, pause, seek or speed from anyone, and the speed is still 1.
        var speeds: [(viewer: String, notices: [String], speed: Double)] = []
        for viewer in [alice, bob, carol, dave] {
            let touched = watch.happenings(viewer, since: before) { [.play, .pause, .seek, .end].contains($0.action) }
            #expect(touched.isEmpty, "\(room.names[viewer]) heard of actions nobody took: \(touched)")
            let speed = try await watch.status(viewer).speed
            speeds.append((room.names[viewer], watch.happenings(viewer, since: before) { $0.action == .speed }, speed))
        }
        // At a switch, a drift correction's speed reported by mpv after the switch once passed for
        // the person's and became a group speed change nobody made ("bob set the speed to
        // 0.90×"): a new file now forgets only our seeks (`PlayerEchoTracker.forgetSeeks`).
        for (viewer, notices, speed) in speeds {
            #expect(notices.isEmpty, "\(viewer) heard of speed changes nobody made: \(notices)")
            #expect(abs(speed - 1) < 0.001, "\(viewer) plays at speed \(speed)")
        }
        #expect(try await watch.sameList([alice, bob, carol, dave]) == nil)
    }

    @Test("two viewers editing at once end with the same list everywhere; a server restart keeps the list, which plays on and reaches a newcomer")
    func editsAndRestart() async throws {
        let films = try await TestMedia.playlistFilms()
        let seconds = TestMedia.playlistFilmSeconds
        let root = try makeTemporaryDirectory("cowatch-playlist")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (alice, bob, carol, dave) = (0, 1, 2, 3)
        let shelves = [
            try Shelf(films, in: root, at: "alice/Films", names: [0: "ep1.mkv", 1: "ep2.mkv", 2: "ep3.mkv"]),
            try Shelf(films, in: root, at: "bob/Videos", names: [0: "The Pilot.mkv", 1: "Second.mkv", 2: "Last.mkv"]),
            try Shelf(films, in: root, at: "carol/dl/x", names: [0: "c1.mkv", 1: "c2.mkv", 2: "c3.mkv"]),
            try Shelf(films, in: root, at: "dave/tv", names: [0: "001.mkv", 1: "002.mkv", 2: "003.mkv"]),
        ]

        let room = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: "pl-edits")
        defer { room.stopInBackground() }
        for (name, shelf) in zip(["alice", "bob", "carol"], shelves) {
            try await room.add(name, arguments: shelf.arguments, waitJoined: false)
        }
        try await room.waitForParticipants(3)
        let watch = PlaylistWatch(room)
        let everyone = [alice, bob, carol]
        func titles(_ viewer: Int) async throws -> [String] { try await watch.playlist(viewer).entries.map(\.title) }

        try await room.clients[alice].request(.playlist(.add(shelves[alice].sources([0, 1]), next: false)))
        try await watch.until("alice's two entries everywhere", within: 10) {
            let counts = try await everyone.asyncMap { try await watch.playlist($0).entries.count }
            guard counts == [2, 2, 2] else { return "counts \(counts)" }
            return try await watch.sameList(everyone)
        }

        // Two edits made at once on the same list: the server is held (SIGSTOP) while both go out,
        // so they surely cross. It applies the first to arrive and refuses the other as stale.
        let paths = room.daemons.map(\.controlPath)
        let move = ControlCommand.playlist(.move(2, to: 1))
        let add = ControlCommand.playlist(.add(shelves[bob].sources([2]), next: false))
        let server = room.server.process.processIdentifier
        kill(server, SIGSTOP)
        async let moved = Self.once(move, at: paths[alice])
        async let added = Self.once(add, at: paths[bob])
        await pause(1)
        kill(server, SIGCONT)
        let (moveRefusal, addRefusal) = await (moved, added)
        #expect(
            [moveRefusal, addRefusal].compactMap { $0?.code } == [.stalePlaylist],
            "crossing edits: move \(String(describing: moveRefusal)), add \(String(describing: addRefusal))")
        // The refused one is made again on the list its viewer now has, as a person would.
        if moveRefusal != nil {
            try await Self.edit(room.clients[alice]) { list in
                guard let index = list.entries.firstIndex(where: { $0.title == "ep2.mkv" }) else { throw TestFailure("no ep2.mkv in \(list.shared)") }
                return .playlist(.move(index + 1, to: 1))
            }
        }
        if addRefusal != nil { try await Self.edit(room.clients[bob]) { _ in add } }
        try await watch.until("[ep2, ep1, Last] everywhere", within: 10) {
            let lists = try await everyone.asyncMap { try await titles($0) }
            guard lists.allSatisfy({ $0 == ["ep2.mkv", "ep1.mkv", "Last.mkv"] }) else { return "\(lists)" }
            return try await watch.sameList(everyone)
        }

        // Then a burst from both at once, one entry at a time, each refused edit made again.
        async let aliceAdds = Self.addOneByOne([shelves[alice].paths[2]!, shelves[alice].paths[0]!], at: paths[alice])
        async let bobAdds = Self.addOneByOne([shelves[bob].paths[0]!, shelves[bob].paths[1]!], at: paths[bob])
        _ = try await (aliceAdds, bobAdds)
        try await watch.until("the same seven entries everywhere", within: 10) {
            let counts = try await everyone.asyncMap { try await watch.playlist($0).entries.count }
            guard counts == [7, 7, 7] else { return "counts \(counts)" }
            return try await watch.sameList(everyone)
        }
        let edited = try await watch.playlist(carol)
        let burst = edited.entries.dropFirst(3)
        #expect(edited.entries.prefix(3).map(\.title) == ["ep2.mkv", "ep1.mkv", "Last.mkv"], "\(edited.shared)")
        // Each one's entries, once each, in the order each added them.
        #expect(burst.filter { $0.addedBy == "alice" }.map(\.title) == ["ep3.mkv", "ep1.mkv"], "\(edited.shared)")
        #expect(burst.filter { $0.addedBy == "bob" }.map(\.title) == ["The Pilot.mkv", "Second.mkv"], "\(edited.shared)")
        #expect(Set(edited.entries.map(\.id)).count == 7, "\(edited.shared)")

        // Settings, and the list plays: #1 is the second (12 s) film.
        try await Self.edit(room.clients[alice]) { _ in .playlist(.setRepeat(.all)) }
        try await Self.edit(room.clients[bob]) { _ in .playlist(.setCountdown(1)) }
        try await Self.edit(room.clients[carol]) { _ in .playlist(.jump(1)) }
        try await watch.until("alice, bob and carol playing their own copies of #1", within: Self.switchSlack) {
            try await watch.playingOwnCopy(of: 1, everyone, shelves: shelves)
        }
        try await watch.until("the same list everywhere", within: 5) { try await watch.sameList(everyone) }
        let kept = try await watch.playlist(alice)
        #expect(kept.current == 1 && kept.repeatMode == .all && kept.countdown == 1, "\(kept.shared)")
        // Anything the old server sent has arrived before the mark.
        await pause(1)
        let beforeRestart = try await watch.mark()

        try await room.restartServer(downFor: 0.5)
        // The restarted server sends each viewer the list it kept (a daemon would ignore an
        // older one: its own copy stays, so only this event says the server kept it).
        try await watch.until("alice, bob and carol to receive the kept list from the restarted server", within: 20) {
            var wrong: [String] = []
            for viewer in everyone {
                let received = watch.playlistEvents(viewer, since: beforeRestart).map(\.state.shared)
                if !received.contains(kept.shared) { wrong.append("\(room.names[viewer]) received \(received)") }
            }
            return wrong.isEmpty ? nil : "kept \(kept.shared); " + wrong.joined(separator: " | ")
        }
        try await room.waitForParticipants(3, timeout: 20)
        // An edit right after is made on the kept version, and is taken: the server's list is
        // the viewers' (no retry: a stale refusal here would say it is not).
        try await room.clients[carol].request(.playlist(.remove(kept.entries.count)), timeout: 15)
        let remaining = kept.entries.dropLast().map(\.id)
        try await watch.until("the kept list less its last entry everywhere", within: 10) {
            let ids = try await everyone.asyncMap { try await watch.playlist($0).entries.map(\.id) }
            guard ids.allSatisfy({ $0 == remaining }) else { return "ids \(ids), want \(remaining)" }
            return try await watch.sameList(everyone)
        }
        // The list plays on: #1 ends and #2 (the first film) starts everywhere.
        try await watch.until("alice, bob and carol playing their own copies of #2", within: seconds[1] + Self.switchSlack) {
            try await watch.playingOwnCopy(of: 0, everyone, shelves: shelves)
        }
        try await watch.until("the three in step on #2", within: 5) { try await watch.inStep(everyone, bound: Self.stepBound) }
        try await watch.until("mpv's own playlist mirroring the kept list at alice, bob and carol after the restart", within: 10) {
            try await watch.mpvMirrorsList([alice, bob, carol], playingCurrent: true)
        }

        // A newcomer to a room restarted mid-entry. bob goes back to #1 (the 12 s film: time
        // enough), the server restarts again while it plays, and dave joins.
        try await Self.edit(room.clients[bob]) { _ in .playlist(.jump(1)) }
        try await watch.until("alice, bob and carol playing their own copies of #1 again", within: Self.switchSlack) {
            try await watch.playingOwnCopy(of: 1, everyone, shelves: shelves)
        }
        await pause(1)
        let beforeSecondRestart = try await watch.mark()
        try await room.restartServer(downFor: 0.5)
        try await watch.until("alice, bob and carol to hear the list from the restarted server", within: 20) {
            let heard = everyone.filter { !watch.playlistEvents($0, since: beforeSecondRestart).isEmpty }
            return heard.count == 3 ? nil : "heard: \(heard.map { room.names[$0] })"
        }
        try await room.waitForParticipants(3, timeout: 20)
        try await room.add("dave", arguments: shelves[dave].arguments, waitJoined: false)
        try await room.waitJoined(dave, participants: 4, timeout: 15)
        try await watch.until("dave to list what the others list, with his own copy of each entry", within: 10) {
            if let apart = try await watch.sameList([alice, dave]) { return apart }
            let here = try await watch.playlist(dave).entries.map(\.here)
            return here.allSatisfy { $0 } ? nil : "dave has \(here)"
        }
        // The restarted room's activity has id 0, which a joining daemon takes for its own
        // `--media` when the welcome names it before the list saying it is entry #1 arrives: once
        // the list is resolved, it loads its copy of the entry (dave played his own --media, and
        // the 75 s he reported for it kept the server from moving the list on).
        try await watch.until("dave playing his own copy of the room's entry, in step with the others", within: 15) {
            let list = try await watch.playlist(dave)
            let status = try await watch.status(dave)
            guard let own = list.currentEntry?.local, status.media == own, !status.paused else {
                return "dave's current \(String(describing: list.currentEntry?.local)); " + watch.describe(status)
            }
            return try await watch.inStep([alice, bob, carol, dave], bound: Self.stepBound)
        }
        let after = try await watch.playlist(dave)
        #expect(after.current == 1 && after.entries.map(\.id) == remaining, "\(after.shared)")
        #expect(try await watch.sameList([alice, bob, carol, dave]) == nil)
    }

    // MARK: Editing as a person does

    /// One attempt at `command` on a connection of its own to the daemon at `path`: its
    /// refusal, or nil when it was taken.
    private static func once(_ command: ControlCommand, at path: String) async -> CowatchError? {
        do throws(CowatchError) {
            let client = try ControlClient(path: path)
            try await client.request(command, timeout: 20)
            return nil
        } catch {
            return error
        }
    }

    /// Adds `files` one at a time through a connection of its own to the daemon at `path`,
    /// each refused edit made again; how many were refused as stale.
    private static func addOneByOne(_ files: [String], at path: String) async throws -> Int {
        let client = try ControlClient(path: path)
        var stale = 0
        for file in files { stale += try await edit(client) { _ in .playlist(.add([.file(file)], next: false)) } }
        return stale
    }

    /// Makes an edit as a person would: one refused as stale is made again on the list the
    /// daemon has then (`make` builds the command from it); one refused as rate-limited waits
    /// a second first. Returns how many times it was refused as stale.
    @discardableResult
    private static func edit(_ client: ControlClient, _ make: (PlaylistReply) throws -> ControlCommand) async throws -> Int {
        var stale = 0
        var refusals: [String] = []
        for _ in 0..<20 {
            let command = try make(try PlaylistReply(json: try await client.request(.getPlaylist, timeout: 15)))
            do throws(CowatchError) {
                try await client.request(command, timeout: 15)
                return stale
            } catch {
                refusals.append(error.code.rawValue)
                if error.code == .stalePlaylist {
                    stale += 1
                    await pause(0.05)
                } else if error.code == .rateLimited {
                    await pause(1.1)
                } else {
                    throw error
                }
            }
        }
        throw TestFailure("an edit was refused 20 times: \(refusals)")
    }
}
