import Testing

@testable import CowatchCore

/// The playlist on the control socket (1.7): its commands parse from their JSON arrays and back,
/// hostile arguments are refused with the documented code, numbers as people see them map to the
/// room's entries, and the reply and the event have one codec each (the generic round-trip,
/// byte-at-a-time and wrong-field tests of `ControlProtocolTests`, `ControlReplyCodecTests` and
/// `ControlEventCodecTests` run over the lists here too).
@Suite("Playlist control commands, reply and event")
struct PlaylistControlTests {
    static let path = "/home/ann/films/Episode 1.mkv"
    static let url = "https://media.example/ep2.mkv"

    /// Every playlist command, and the variants whose wire form differs.
    static let everyCommand: [ControlCommand] = [
        .getPlaylist,
        .playlist(.add([.file(path), .url(url)], next: false)), .playlist(.add([.file("/a")], next: true)),
        .playlist(.insert([.url("rtsp://cam.example/live")], before: 1)), .playlist(.insert([.file("/x y/z.mkv")], before: 501)),
        .playlist(.replace([.file("/a"), .file("/a")])), .playlist(.remove(1)), .playlist(.remove(500)),
        .playlist(.move(3, to: 1)), .playlist(.jump(2)), .playlist(.next), .playlist(.previous), .playlist(.clear),
        .playlist(.undo), .playlist(.setRepeat(.none)), .playlist(.setRepeat(.one)), .playlist(.setRepeat(.all)),
        .playlist(.setShuffle(true)), .playlist(.setShuffle(false)), .playlist(.setEditing(open: true)),
        .playlist(.setEditing(open: false)), .playlist(.setCountdown(0)), .playlist(.setCountdown(2.5)),
        .playlist(.setCountdown(60)), .playlist(.pick(4, path: "/home/bob/ep4-720p.mkv", force: true)),
        .playlist(.pick(4, path: "/home/bob/ep4.mkv", force: false)),
    ]

    @Test("every playlist name of ControlCommand.Name has a command here")
    func everyPlaylistNameCovered() {
        let playlistNames = Set(ControlCommand.names.filter { $0.hasPrefix("playlist_") || $0 == "get_playlist" })
        #expect(playlistNames.count == 16)
        #expect(Set(Self.everyCommand.map(\.name)) == playlistNames)
    }

    @Test("each command parses from its JSON array and writes the same array back", arguments: everyCommand)
    func parsesAndWritesBack(command: ControlCommand) throws {
        #expect(try ControlCommand(arguments: command.arguments) == command)
        #expect(command.arguments.first == .string(command.name))
    }

    /// Arrays as a client writes them, and the command each one is.
    static let written: [([JSONValue], ControlCommand)] = [
        (["get_playlist"], .getPlaylist),
        (["playlist_add", [.string(path)]], .playlist(.add([.file(path)], next: false))),
        (["playlist_add", [.string(path)], "end"], .playlist(.add([.file(path)], next: false))),
        (["playlist_add", [.string(path)], .null], .playlist(.add([.file(path)], next: false))),
        (["playlist_add", [.string(url), "/b"], "next"], .playlist(.add([.url(url), .file("/b")], next: true))),
        (["playlist_insert", ["/b"], 3], .playlist(.insert([.file("/b")], before: 3))),
        (["playlist_insert", ["/b"], 3.0], .playlist(.insert([.file("/b")], before: 3))),
        (["playlist_replace", ["ftp://files.example/a.mkv"]], .playlist(.replace([.url("ftp://files.example/a.mkv")]))),
        (["playlist_remove", 2], .playlist(.remove(2))),
        (["playlist_move", 4, 1], .playlist(.move(4, to: 1))),
        (["playlist_jump", 501], .playlist(.jump(501))),
        (["playlist_next"], .playlist(.next)), (["playlist_prev"], .playlist(.previous)),
        (["playlist_clear"], .playlist(.clear)), (["playlist_undo"], .playlist(.undo)),
        (["playlist_repeat", "all"], .playlist(.setRepeat(.all))),
        (["playlist_shuffle", true], .playlist(.setShuffle(true))),
        (["playlist_editing", false], .playlist(.setEditing(open: false))),
        (["playlist_countdown", 5], .playlist(.setCountdown(5))),
        (["playlist_countdown", 0.5], .playlist(.setCountdown(0.5))),
        (["playlist_pick", 1, "/m/a.mkv"], .playlist(.pick(1, path: "/m/a.mkv", force: false))),
        (["playlist_pick", 1, "/m/a.mkv", true], .playlist(.pick(1, path: "/m/a.mkv", force: true))),
    ]

    @Test("arrays as clients write them parse to their commands", arguments: written)
    func parsesWritten(arguments: [JSONValue], command: ControlCommand) throws {
        #expect(try ControlCommand(arguments: arguments) == command)
    }

    @Test("the wire form is the documented one")
    func wireForm() {
        #expect(ControlCommand.playlist(.add([.file("/a"), .url(Self.url)], next: true)).arguments == ["playlist_add", ["/a", .string(Self.url)], "next"])
        #expect(ControlCommand.playlist(.add([.file("/a")], next: false)).arguments == ["playlist_add", ["/a"], "end"])
        #expect(ControlCommand.playlist(.insert([.file("/a")], before: 2)).arguments == ["playlist_insert", ["/a"], 2])
        #expect(ControlCommand.playlist(.move(2, to: 5)).arguments == ["playlist_move", 2, 5])
        #expect(ControlCommand.playlist(.previous).arguments == ["playlist_prev"])
        #expect(ControlCommand.playlist(.setRepeat(.one)).arguments == ["playlist_repeat", "one"])
        #expect(ControlCommand.playlist(.setEditing(open: true)).arguments == ["playlist_editing", true])
        #expect(ControlCommand.playlist(.pick(3, path: "/f", force: false)).arguments == ["playlist_pick", 3, "/f", false])
        #expect(ControlCommand.getPlaylist.arguments == ["get_playlist"])
        #expect(ControlRequest(requestID: 1, command: .playlist(.jump(3))).encoded() == Array(#"{"command":["playlist_jump",3],"request_id":1}"#.utf8))
    }

    static let long = "/" + String(repeating: "a", count: 4096)
    static let longURL = "https://example.org/" + String(repeating: "a", count: 4096)
    static let tooMany = JSONValue.array(Array(repeating: "/a", count: 501))

    /// Hostile arrays, and the code each gets.
    static let hostile: [([JSONValue], CowatchError.Code)] = [
        // Numbers: integers 1…501 only.
        (["playlist_remove", 0], .invalidArgument), (["playlist_remove", -1], .invalidArgument),
        (["playlist_remove", 502], .invalidArgument), (["playlist_remove", 1.5], .invalidArgument),
        (["playlist_remove", "3"], .invalidArgument), (["playlist_remove", 1e300], .invalidArgument),
        (["playlist_remove", -0.5], .invalidArgument), (["playlist_remove", true], .invalidArgument),
        (["playlist_remove", .null], .invalidArgument), (["playlist_remove", [1]], .invalidArgument),
        (["playlist_remove", ["n": 1]], .invalidArgument), (["playlist_remove", .number(.nan)], .invalidArgument),
        (["playlist_remove", .number(.infinity)], .invalidArgument),
        (["playlist_jump", 0], .invalidArgument), (["playlist_jump", "#2"], .invalidArgument),
        (["playlist_move", 1, 0], .invalidArgument), (["playlist_move", 1.5, 2], .invalidArgument),
        (["playlist_move", 1, 9e15], .invalidArgument), (["playlist_insert", ["/a"], 0], .invalidArgument),
        (["playlist_insert", ["/a"], 502], .invalidArgument), (["playlist_insert", ["/a"], "1"], .invalidArgument),
        (["playlist_pick", 0, "/a"], .invalidArgument),
        // Items: 1–500 strings, absolute paths or network URLs, bounded, no control characters.
        (["playlist_add", "/a"], .invalidArgument), (["playlist_add", []], .invalidArgument),
        (["playlist_add", tooMany], .invalidArgument), (["playlist_add", [1]], .invalidArgument),
        (["playlist_add", [.null]], .invalidArgument), (["playlist_add", [""]], .invalidArgument),
        (["playlist_add", [["/a"]]], .invalidArgument), (["playlist_add", ["films/a.mkv"]], .invalidArgument),
        (["playlist_add", ["a.mkv"]], .invalidArgument), (["playlist_add", ["~/a.mkv"]], .invalidArgument),
        (["playlist_add", ["/a", "b"]], .invalidArgument), (["playlist_add", [.string(long)]], .invalidArgument),
        (["playlist_add", [.string(longURL)]], .invalidArgument), (["playlist_add", ["/a\nb"]], .invalidArgument),
        (["playlist_add", ["/a\u{7f}"]], .invalidArgument), (["playlist_add", ["/a\u{85}b"]], .invalidArgument),
        (["playlist_add", ["https://x.example/a\u{1b}[2J"]], .invalidArgument),
        (["playlist_add", ["file:///etc/passwd"]], .invalidArgument), (["playlist_add", ["av://lavfi:sine"]], .invalidArgument),
        (["playlist_add", ["edl://a"]], .invalidArgument), (["playlist_add", ["https:///nohost"]], .invalidArgument),
        (["playlist_add", ["javascript:alert(1)"]], .invalidArgument), (["playlist_add", ["C:\\films\\a.mkv"]], .invalidArgument),
        (["playlist_add", ["/a"], "middle"], .invalidArgument), (["playlist_add", ["/a"], true], .invalidArgument),
        (["playlist_add", ["/a"], 2], .invalidArgument),
        (["playlist_insert", "/a", 1], .invalidArgument), (["playlist_replace", [.string(long)]], .invalidArgument),
        (["playlist_replace", tooMany], .invalidArgument),
        // Settings.
        (["playlist_repeat", "twice"], .invalidArgument), (["playlist_repeat", "ALL"], .invalidArgument),
        (["playlist_repeat", 1], .invalidArgument), (["playlist_shuffle", "on"], .invalidArgument),
        (["playlist_shuffle", 1], .invalidArgument), (["playlist_editing", "open"], .invalidArgument),
        (["playlist_editing", .null], .invalidArgument), (["playlist_countdown", -1], .invalidArgument),
        (["playlist_countdown", 61], .invalidArgument), (["playlist_countdown", "5"], .invalidArgument),
        (["playlist_countdown", .number(.nan)], .invalidArgument), (["playlist_countdown", 1e300], .invalidArgument),
        // pick: an absolute path, force a boolean.
        (["playlist_pick", 1, "a.mkv"], .invalidArgument), (["playlist_pick", 1, "https://x.example/a"], .invalidArgument),
        (["playlist_pick", 1, .string(long)], .invalidArgument), (["playlist_pick", 1, "/a\u{0}"], .invalidArgument),
        (["playlist_pick", 1, "/a", "yes"], .invalidArgument), (["playlist_pick", 1, "/a", 1], .invalidArgument),
        (["playlist_pick", 1, 2], .invalidArgument),
        // Counts.
        (["get_playlist", 1], .wrongArgumentCount), (["playlist_add"], .wrongArgumentCount),
        (["playlist_add", ["/a"], "end", 1], .wrongArgumentCount), (["playlist_insert", ["/a"]], .wrongArgumentCount),
        (["playlist_insert", ["/a"], 1, 2], .wrongArgumentCount), (["playlist_replace"], .wrongArgumentCount),
        (["playlist_replace", ["/a"], "end"], .wrongArgumentCount), (["playlist_remove"], .wrongArgumentCount),
        (["playlist_remove", 1, 2], .wrongArgumentCount), (["playlist_move", 1], .wrongArgumentCount),
        (["playlist_move", 1, 2, 3], .wrongArgumentCount), (["playlist_jump"], .wrongArgumentCount),
        (["playlist_next", 1], .wrongArgumentCount), (["playlist_prev", true], .wrongArgumentCount),
        (["playlist_clear", "all"], .wrongArgumentCount), (["playlist_undo", 1], .wrongArgumentCount),
        (["playlist_repeat"], .wrongArgumentCount), (["playlist_shuffle"], .wrongArgumentCount),
        (["playlist_editing", true, false], .wrongArgumentCount), (["playlist_countdown"], .wrongArgumentCount),
        (["playlist_pick", 1], .wrongArgumentCount), (["playlist_pick", 1, "/a", true, 1], .wrongArgumentCount),
        // Names.
        (["playlist"], .unknownCommand), (["playlist_previous"], .unknownCommand), (["Playlist_next"], .unknownCommand),
    ]

    @Test("hostile arguments are refused with the documented code", arguments: hostile)
    func hostileRefused(arguments: [JSONValue], code: CowatchError.Code) {
        do {
            let command = try ControlCommand(arguments: arguments)
            Issue.record("accepted \(JSONValue.array(arguments).jsonString.prefix(80)) as \(command)")
        } catch {
            #expect(error.code == code, "\(JSONValue.array(arguments).jsonString.prefix(80)): \(error)")
            #expect(!error.message.isEmpty)
            #expect(error.message.utf8.count < 400, "a message that repeats hostile input: \(error.message.prefix(80))")
        }
    }

    @Test("a source is an absolute path or a network URL a room opens, as the CLI checks it too")
    func sources() throws {
        #expect(try PlaylistCommand.Source(checking: "/films/a b.mkv") == .file("/films/a b.mkv"))
        #expect(try PlaylistCommand.Source(checking: "HTTPS://media.example/a.mkv") == .url("HTTPS://media.example/a.mkv"))
        #expect(try PlaylistCommand.Source(checking: "srt://cam.example:9000") == .url("srt://cam.example:9000"))
        #expect(try PlaylistCommand.Source(checking: String(Self.long.dropLast())).text.utf8.count == 4096)
        for bad in ["", "a.mkv", "./a.mkv", "file:///x", "av://lavfi:sine", "https://", "https:///a", "/a\u{1}", "/a\u{9f}", Self.long, Self.longURL] {
            #expect(throws: CowatchError(.invalidArgument, ""), "\(bad.prefix(20))") { try PlaylistCommand.Source(checking: bad) }
        }
    }

    @Test("a request line with a hostile playlist command keeps its request id")
    func hostileLine() {
        guard case .failure(let id, let error) = ControlRequest.decode(line: Array(#"{"command":["playlist_jump","3"],"request_id":5}"#.utf8))
        else {
            Issue.record("accepted")
            return
        }
        #expect(id == 5)
        #expect(error.code == .invalidArgument)
    }

    // MARK: Numbers as people see them

    static func file(_ name: String, size: Int = 1000, duration: Double? = 1330) -> PlaylistEntry.Media {
        .file(MediaIdentity(size: size, fingerprint: String(repeating: "ab", count: 32), duration: duration, name: name))
    }

    static let state = PlaylistState(
        version: 12,
        entries: [
            PlaylistEntry(id: 4, media: file("ep1.mkv"), title: "Episode 1", addedBy: "ann"),
            PlaylistEntry(id: 7, media: .url(url), title: "Episode 2", addedBy: "bob"),
            PlaylistEntry(id: 9, media: file("ep3.mkv", size: 2000, duration: nil), addedBy: "bob"),
        ],
        current: 7, activity: 3, repeatMode: .all, shuffle: true, openEditing: true, countdown: 2.5, canUndo: true,
        availability: [
            PlaylistAvailability(name: "ann", marks: [.has, .has, .lacks]),
            PlaylistAvailability(name: "bob", marks: [.has, .has, .has]),
            PlaylistAvailability(name: "cy", marks: [.lacks, .has, .unknown]),
        ])

    @Test("numbers map to the entries' ids and to 0-based places")
    func numbersMap() throws {
        let items = [PlaylistItem(url: Self.url)]
        #expect(try PlaylistCommand.remove(1).edit(against: Self.state) == .remove(4))
        #expect(try PlaylistCommand.jump(3).edit(against: Self.state) == .jump(9))
        #expect(try PlaylistCommand.move(3, to: 1).edit(against: Self.state) == .move(9, to: 0))
        #expect(try PlaylistCommand.insert([.url(Self.url)], before: 4).edit(against: Self.state, items: items) == .insert(items, at: 3))
        #expect(try PlaylistCommand.insert([.url(Self.url)], before: 1).edit(against: Self.state, items: items) == .insert(items, at: 0))
        #expect(try PlaylistCommand.add([.url(Self.url)], next: true).edit(against: Self.state, items: items) == .add(items, next: true))
        #expect(try PlaylistCommand.replace([.url(Self.url)]).edit(against: Self.state, items: items) == .replace(items))
        #expect(try PlaylistCommand.previous.edit(against: Self.state) == .previous)
        #expect(try PlaylistCommand.setRepeat(.one).edit(against: Self.state) == .setRepeat(.one))
        #expect(try PlaylistCommand.setCountdown(4).edit(against: Self.state) == .setCountdown(4))
        #expect(try PlaylistCommand.setEditing(open: false).edit(against: Self.state) == .setEditing(open: false))
        #expect(try PlaylistCommand.pick(1, path: "/a", force: true).edit(against: Self.state) == nil)
        #expect(try PlaylistCommand.entry(2, in: Self.state).id == 7)
    }

    @Test("a number past the list, or items that do not match the sources, are invalid-argument")
    func numbersPastTheList() {
        let invalid = CowatchError(.invalidArgument, "")
        #expect(throws: invalid) { try PlaylistCommand.remove(4).edit(against: Self.state) }
        #expect(throws: invalid) { try PlaylistCommand.jump(1).edit(against: PlaylistState()) }
        #expect(throws: invalid) { try PlaylistCommand.move(1, to: 4).edit(against: Self.state) }
        #expect(throws: invalid) { try PlaylistCommand.move(4, to: 1).edit(against: Self.state) }
        #expect(throws: invalid) { try PlaylistCommand.insert([.file("/a")], before: 5).edit(against: Self.state, items: [PlaylistItem(url: Self.url)]) }
        #expect(throws: invalid) { try PlaylistCommand.add([.file("/a")], next: false).edit(against: Self.state) }
        #expect(throws: invalid) { try PlaylistCommand.remove(1).edit(against: Self.state, items: [PlaylistItem(url: Self.url)]) }
        do {
            _ = try PlaylistCommand.jump(7).edit(against: Self.state)
        } catch {
            #expect(error.message == "there is no #7: the playlist has 3 entries")
        }
        do {
            _ = try PlaylistCommand.jump(1).edit(against: PlaylistState())
        } catch {
            #expect(error.message == "there is no #1: the playlist is empty")
        }
    }

    // MARK: The reply

    static let reply = PlaylistReply(
        state: state, local: [4: "/films/ep1.mkv"], here: [4, 7], members: ["ann", "bob", "cy", "dan"], me: "bob")

    @Test("the reply from the room's state: numbers, the current entry, this daemon's own knowledge, who lacks what")
    func replyFromState() throws {
        let reply = Self.reply
        #expect(reply.version == 12)
        #expect(reply.current == 2)
        #expect(reply.currentEntry?.id == 7)
        #expect(reply.repeatMode == .all && reply.shuffle && reply.editing == .open && reply.countdown == 2.5)
        #expect(reply.entries.map(\.number) == [1, 2, 3])
        #expect(reply.entries.map(\.id) == [4, 7, 9])
        #expect(reply.entries.map(\.title) == ["Episode 1", "Episode 2", "ep3.mkv"])
        #expect(reply.entries.map(\.kind) == [.file, .url, .file])
        #expect(reply.entries.map(\.current) == [false, true, false])
        #expect(reply.entries.map(\.local) == ["/films/ep1.mkv", nil, nil])
        #expect(reply.entries.map(\.here) == [true, true, false])
        #expect(reply.entries.map(\.lacking) == [["cy"], [], ["ann"]])
        // dan never reported; bob (this daemon) is said by `here`; cy has not said about #3.
        #expect(reply.entries.map(\.unknown) == [["dan"], ["dan"], ["cy", "dan"]])
        let first = try #require(reply.entries.first)
        #expect(first.name == "ep1.mkv" && first.size == 1000 && first.duration == 1330 && first.url == nil && first.addedBy == "ann")
        #expect(reply.entries[1].url == Self.url && reply.entries[1].name == nil && reply.entries[1].size == nil)
        #expect(PlaylistReply(state: PlaylistState()) == PlaylistReply(version: 0, current: nil, editing: .managers, countdown: 3))
    }

    static let replyJSON =
        #"{"countdown":2.5,"current":2,"editing":"open","entries":[{"added_by":"ann","current":false,"duration":1330,"here":true,"id":4,"kind":"file","lacking":["cy"],"local":"/films/ep1.mkv","name":"ep1.mkv","number":1,"size":1000,"title":"Episode 1","unknown":["dan"],"url":null},{"added_by":"bob","current":true,"duration":null,"here":true,"id":7,"kind":"url","lacking":[],"local":null,"name":null,"number":2,"size":null,"title":"Episode 2","unknown":["dan"],"url":"https://media.example/ep2.mkv"},{"added_by":"bob","current":false,"duration":null,"here":false,"id":9,"kind":"file","lacking":["ann"],"local":null,"name":"ep3.mkv","number":3,"size":2000,"title":"ep3.mkv","unknown":["cy","dan"],"url":null}],"repeat":"all","shuffle":true,"version":12}"#

    /// For `ControlReplyCodecTests`' generic tests (round trip, a byte at a time, wrong fields).
    static let replyGolden: [(any ControlReplyData, String)] = [
        (reply, replyJSON),
        (PlaylistReply(), #"{"countdown":3,"current":null,"editing":"managers","entries":[],"repeat":"none","shuffle":false,"version":0}"#),
    ]

    @Test("the reply encodes to the documented JSON and reads back, also a byte at a time")
    func replyCodec() throws {
        #expect(Self.reply.json.jsonString == Self.replyJSON)
        #expect(try PlaylistReply(line: Array(Self.replyJSON.utf8)) == Self.reply)
        var framer = LineFramer(maxLineBytes: controlMaxLineBytes)
        var items: [LineFramer.Item] = []
        for byte in Array(Self.replyJSON.utf8) + [UInt8(ascii: "\n")] { items += framer.feed([byte]) }
        guard case .line(let line)? = items.first, items.count == 1 else {
            Issue.record("no single line: \(items.count)")
            return
        }
        #expect(try PlaylistReply(line: line) == Self.reply)
        let sent = ControlReply.success(3, Self.reply.json)
        let received = try #require(ControlReply(json: try JSONValue.parse(sent.json.encoded())))
        #expect(try PlaylistReply(json: try received.result.get()) == Self.reply)
    }

    @Test("a reply with keys a newer daemon adds reads; one without the optional ones takes their defaults")
    func replyLenient() throws {
        let newer = try PlaylistReply(
            line: Array(#"{"version":1,"current":null,"repeat":"one","shuffle":false,"editing":"managers","countdown":3,"can_undo":true,"entries":[{"number":1,"id":2,"title":"t","kind":"url","url":"https://a.example/b","added_by":"ann","here":true,"lacking":[],"unknown":[],"mood":"ok"}]}"#.utf8))
        #expect(newer.entries.first == PlaylistReply.Entry(number: 1, id: 2, title: "t", kind: .url, url: "https://a.example/b", addedBy: "ann", here: true))
        let bare = try PlaylistReply(
            line: Array(#"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":0,"entries":[{"number":1,"id":2,"title":"t","kind":"file","added_by":"ann"}]}"#.utf8))
        #expect(bare.current == nil)
        #expect(bare.entries.first?.here == false && bare.entries.first?.lacking == [] && bare.entries.first?.current == false)
    }

    static let hostileReplies: [String] = [
        #"[]"#, #"null"#, #""playlist""#, #"{}"#,
        #"{"version":"1","repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[]}"#,
        #"{"version":1.5,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[]}"#,
        #"{"version":1e300,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[]}"#,
        #"{"version":1,"repeat":"twice","shuffle":false,"editing":"open","countdown":3,"entries":[]}"#,
        #"{"version":1,"repeat":"none","shuffle":"no","editing":"open","countdown":3,"entries":[]}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"everyone","countdown":3,"entries":[]}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":"3","entries":[]}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":{}}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[1]}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[],"current":0.5}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[{"number":1,"id":2,"title":"t","kind":"disc","added_by":"a"}]}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[{"number":1,"id":2,"kind":"url","added_by":"a"}]}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[{"number":1,"id":2,"title":"t","kind":"url"}]}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[{"number":"1","id":2,"title":"t","kind":"url","added_by":"a"}]}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[{"number":1,"id":2,"title":"t","kind":"url","added_by":"a","lacking":"bob"}]}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[{"number":1,"id":2,"title":"t","kind":"url","added_by":"a","unknown":[1]}]}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[{"number":1,"id":2,"title":"t","kind":"file","added_by":"a","size":-1e20}]}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[{"number":1,"id":2,"title":"t","kind":"file","added_by":"a","here":"yes"}]}"#,
        #"{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[{"number":1,"id":2,"title":"t","kind":"file","added_by":"a","local":7}]}"#,
    ]

    @Test("hostile replies are refused with malformed-control-message", arguments: hostileReplies)
    func hostileReply(line: String) {
        #expect(throws: CowatchError(.malformedControlMessage, "")) { try PlaylistReply(line: Array(line.utf8)) }
    }

    // MARK: The event

    static let event = ControlEvent.playlist(PlaylistEvent(state: reply, change: "bob added Episode 3 as #3", actor: "bob"))
    static let quietEvent = ControlEvent.playlist(PlaylistEvent(state: PlaylistReply()))

    /// For `ControlEventCodecTests`' generic tests (golden JSON, every kind, round trip, a byte at a
    /// time, wrong fields).
    static let eventGolden: [(ControlEvent, String)] = [
        (event, #"{"actor":"bob","change":"bob added Episode 3 as #3","event":"playlist","state":\#(replyJSON)}"#),
        (
            quietEvent,
            #"{"actor":null,"change":null,"event":"playlist","state":{"countdown":3,"current":null,"editing":"managers","entries":[],"repeat":"none","shuffle":false,"version":0}}"#
        ),
    ]

    @Test("the event round-trips, also a byte at a time")
    func eventCodec() throws {
        for (event, _) in Self.eventGolden {
            #expect(try ControlEvent(line: event.json.encoded()) == event)
            var framer = LineFramer(maxLineBytes: controlMaxLineBytes)
            var items: [LineFramer.Item] = []
            for byte in event.json.encoded() + [UInt8(ascii: "\n")] { items += framer.feed([byte]) }
            guard case .line(let line)? = items.first, items.count == 1 else {
                Issue.record("no single line")
                continue
            }
            #expect(try ControlEvent(line: line) == event)
        }
        #expect(Self.event.kind == .playlist && Self.event.name == "playlist")
    }

    static let hostileEvents: [String] = [
        #"{"event":"playlist"}"#, #"{"event":"playlist","state":null}"#, #"{"event":"playlist","state":[]}"#,
        #"{"event":"playlist","state":{}}"#, #"{"event":"playlist","state":"list"}"#,
        #"{"event":"playlist","state":{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[]},"change":5}"#,
        #"{"event":"playlist","state":{"version":1,"repeat":"none","shuffle":false,"editing":"open","countdown":3,"entries":[]},"actor":["bob"]}"#,
    ]

    @Test("hostile playlist events are refused with malformed-control-message", arguments: hostileEvents)
    func hostileEvent(line: String) {
        #expect(throws: CowatchError(.malformedControlMessage, "")) { try ControlEvent(line: Array(line.utf8)) }
    }

    // MARK: As people read it

    @Test("the list as cowatch playlist prints it")
    func lines() {
        #expect(Self.reply.lines == [
            "  #1  Episode 1  (0:22:10)  added by ann  — cy lacks it; dan has not said",
            "▶ #2  Episode 2  added by bob  — dan has not said",
            "  #3  ep3.mkv  added by bob  — you and ann lack it; cy and dan have not said",
            "repeat all · shuffle on · editing: everyone · countdown 2.5 s",
        ])
        #expect(PlaylistReply().lines == [
            "the playlist is empty",
            "repeat none · shuffle off · editing: owner and operators (in a managed room) · countdown 3 s",
        ])
        let url = PlaylistReply.Entry(number: 1, id: 1, title: "Stream", kind: .url, url: "rtsp://a.example/s", addedBy: "ann", here: false)
        #expect(PlaylistReply.line(url) == "  #1  Stream  added by ann  — you cannot open it here")
        let many = PlaylistReply.Entry(
            number: 9, id: 1, title: "A\u{202E}B\nC", kind: .file, addedBy: "ann", current: true, here: true,
            lacking: ["bob", "cy", "dan"], unknown: ["eve"])
        #expect(PlaylistReply.line(many) == "▶ #9  A B C  added by ann  — bob, cy and dan lack it; eve has not said")
    }

    @Test("the list as an extended M3U: local paths, URLs, a comment for what is missing here")
    func m3u() {
        #expect(Self.reply.m3u == """
            #EXTM3U
            #EXTINF:1330,Episode 1
            /films/ep1.mkv
            #EXTINF:-1,Episode 2
            https://media.example/ep2.mkv
            # missing here: ep3.mkv

            """)
        #expect(Self.reply.missingHere.map(\.number) == [3])
        #expect(PlaylistReply().m3u == "#EXTM3U\n")
        let odd = PlaylistReply(entries: [
            .init(number: 1, id: 1, title: "Line\nbreak", kind: .file, name: "a\nb.mkv", duration: 59.6, addedBy: "a", local: "/x/a\nb.mkv", here: true),
            .init(number: 2, id: 2, title: "T", kind: .file, duration: .infinity, addedBy: "a", local: "/x/t.mkv", here: true),
        ])
        // A path that cannot be one line of the file is named in a comment instead.
        #expect(odd.m3u == "#EXTM3U\n# missing here: a b.mkv\n#EXTINF:-1,T\n/x/t.mkv\n")
    }
}
