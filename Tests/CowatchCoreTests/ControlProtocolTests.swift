import Testing

@testable import CowatchCore

@Suite("Control protocol codec")
struct ControlProtocolTests {
    static let everyCommand: [ControlCommand] = [
        .play, .pause, .togglePause, .seek(seconds: 90, mode: .absolute), .seek(seconds: -5.5, mode: .relative),
        .speed(1.25), .getStatus, .getProperty("audio-pts"), .getParticipants, .leave, .join, .quit,
        .setRole(name: "bob", role: .operator), .setRole(name: "bob-2", role: .member), .kick(name: "eve.x"), .acceptOpen,
        .attach(path: "/home/a/night.srt", name: nil, meta: nil), .attach(path: "/x y/z", name: "Z.ass", meta: ["kind": "subtitles"]),
        .attach(path: "/s/e3.srt", name: nil, meta: nil, entry: 3), .attach(path: "/s/e3.srt", name: "E3.srt", meta: ["lang": "en"], entry: 500),
        .getAttachments, .detach("abcd"), .detach(String(repeating: "0f", count: 32)), .fetch(id: "12345678", path: "/tmp/out"),
        .fetch(id: "12345678", path: "/tmp/out", force: true), .end,
        .open(.init(url: "https://example.org/film.mkv", title: "Film", type: .listen, fallbackURL: "/media/film.mkv")),
        .open(.init(url: "/media/a b.mkv")), .setReady(true), .setReady(false), .setWaitForMe(false), .setWaitForMe(true),
        .getInvite(host: nil), .getInvite(host: "203.0.113.7"), .chat("héllo, \"friends\""), .getChat,
        .sendMessage(.init(topic: "game", payload: ["move": 3], to: ["bob"], reliable: false)),
        .sendMessage(.init(topic: "t", payload: .null)), .showRoom, .share(path: nil), .share(path: "/films/a b.mkv"),
        .unshare, .getShares, .manage,
    ] + PlaylistControlTests.everyCommand

    @Test("the round-trip list holds every command name the daemon knows")
    func everyNameCovered() {
        let covered = Set(Self.everyCommand.map(\.name))
        #expect(covered == Set(ControlCommand.names), "missing: \(Set(ControlCommand.names).subtracting(covered).sorted())")
    }

    @Test("every command round-trips through its JSON line", arguments: everyCommand)
    func roundTrip(command: ControlCommand) throws {
        let request = ControlRequest(requestID: 42, command: command)
        guard case .request(let decoded) = ControlRequest.decode(line: request.encoded()) else {
            Issue.record("did not decode \(command)")
            return
        }
        #expect(decoded == request)
    }

    @Test("every command round-trips when fed a byte at a time", arguments: everyCommand)
    func byteAtATime(command: ControlCommand) throws {
        var framer = LineFramer(maxLineBytes: controlMaxLineBytes)
        let line = ControlRequest(requestID: "x", command: command).encoded() + [UInt8(ascii: "\n")]
        var items: [LineFramer.Item] = []
        for byte in line { items += framer.feed([byte]) }
        #expect(items.count == 1)
        guard case .line(let bytes) = items.first, case .request(let decoded) = ControlRequest.decode(line: bytes)
        else {
            Issue.record("no request")
            return
        }
        #expect(decoded.command == command)
        #expect(decoded.requestID == "x")
    }

    @Test("op, deop, kick and accept_open parse to the role commands")
    func roleCommands() throws {
        #expect(try ControlCommand(arguments: ["op", "bob"]) == .setRole(name: "bob", role: .operator))
        #expect(try ControlCommand(arguments: ["deop", "bob"]) == .setRole(name: "bob", role: .member))
        #expect(try ControlCommand(arguments: ["kick", "bob"]) == .kick(name: "bob"))
        #expect(try ControlCommand(arguments: ["accept_open"]) == .acceptOpen)
        #expect(ControlCommand.setRole(name: "bob", role: .operator).arguments == ["op", "bob"])
        #expect(ControlCommand.kick(name: "bob").arguments == ["kick", "bob"])
        for name in ["op", "deop", "kick", "accept_open"] { #expect(ControlCommand.names.contains(name)) }
    }

    @Test("mpv-style spellings are accepted")
    func mpvSpellings() throws {
        #expect(try ControlCommand(arguments: ["seek", "90", "absolute+exact"]) == .seek(seconds: 90, mode: .absolute))
        #expect(try ControlCommand(arguments: ["seek", 10]) == .seek(seconds: 10, mode: .relative))
        #expect(try ControlCommand(arguments: ["cycle_pause"]) == .togglePause)
        #expect(try ControlCommand(arguments: ["set_speed", "0.5"]) == .speed(0.5))
    }

    static let badLines: [(String, CowatchError.Code)] = [
        ("{not json", .invalidJSON),
        ("\u{1}\u{2}garbage", .invalidJSON),
        ("[1,2,3]", .invalidRequest),
        ("{\"request_id\": 1}", .invalidRequest),
        ("{\"command\": \"pause\"}", .invalidRequest),
        ("{\"command\": []}", .invalidRequest),
        ("{\"command\": [7]}", .invalidRequest),
        ("{\"command\": [\"fly\"]}", .unknownCommand),
        ("{\"command\": [\"pause\", 1]}", .wrongArgumentCount),
        ("{\"command\": [\"seek\"]}", .wrongArgumentCount),
        ("{\"command\": [\"seek\", 1, \"absolute\", 3]}", .wrongArgumentCount),
        ("{\"command\": [\"seek\", \"soon\"]}", .invalidArgument),
        ("{\"command\": [\"seek\", \"nan\"]}", .invalidArgument),
        ("{\"command\": [\"seek\", \"inf\"]}", .invalidArgument),
        ("{\"command\": [\"seek\", true]}", .invalidArgument),
        ("{\"command\": [\"seek\", -4, \"absolute\"]}", .invalidArgument),
        ("{\"command\": [\"seek\", 4, \"sideways\"]}", .invalidArgument),
        ("{\"command\": [\"seek\", 4, 5]}", .invalidArgument),
        ("{\"command\": [\"speed\", -1]}", .invalidArgument),
        ("{\"command\": [\"speed\", 0]}", .invalidArgument),
        ("{\"command\": [\"speed\", 1000]}", .invalidArgument),
        ("{\"command\": [\"speed\", null]}", .invalidArgument),
        ("{\"command\": [\"get_property\", \"a b\"]}", .invalidArgument),
        ("{\"command\": [\"get_property\", \"\"]}", .invalidArgument),
        ("{\"command\": [\"get_property\", 3]}", .invalidArgument),
        ("{\"command\": [\"op\"]}", .wrongArgumentCount),
        ("{\"command\": [\"kick\", \"bob\", \"now\"]}", .wrongArgumentCount),
        ("{\"command\": [\"accept_open\", \"x\"]}", .wrongArgumentCount),
        ("{\"command\": [\"op\", 3]}", .invalidArgument),
        ("{\"command\": [\"deop\", \"\"]}", .invalidArgument),
        ("{\"command\": [\"kick\", \".hidden\"]}", .invalidArgument),
        ("{\"command\": [\"kick\", \"with space\"]}", .invalidArgument),
        ("{\"command\": [\"op\", \"\(String(repeating: "x", count: 33))\"]}", .invalidArgument),
        ("{\"command\": [\"attach\", \"relative/path\"]}", .invalidArgument),
        ("{\"command\": [\"attach\", \"/a\", \"..\"]}", .invalidArgument),
        ("{\"command\": [\"attach\", \"/a\", null, [1]]}", .invalidArgument),
        ("{\"command\": [\"attach\"]}", .wrongArgumentCount),
        ("{\"command\": [\"attach\", \"/a.srt\", null, null, 0]}", .invalidArgument),
        ("{\"command\": [\"attach\", \"/a.srt\", null, null, 2.5]}", .invalidArgument),
        ("{\"command\": [\"attach\", \"/a.srt\", null, null, 501]}", .invalidArgument),
        ("{\"command\": [\"attach\", \"/a.srt\", null, null, \"3\"]}", .invalidArgument),
        ("{\"command\": [\"attach\", \"/a.srt\", null, null, 3, 4]}", .wrongArgumentCount),
        ("{\"command\": [\"detach\", \"xyz\"]}", .invalidArgument),
        ("{\"command\": [\"detach\", \"abc\"]}", .invalidArgument),
        ("{\"command\": [\"fetch\", \"abcd\"]}", .wrongArgumentCount),
        ("{\"command\": [\"fetch\", \"abcd\", \"out\"]}", .invalidArgument),
    ]

    @Test("bad input gets the documented code", arguments: badLines)
    func badInput(line: String, code: CowatchError.Code) {
        guard case .failure(_, let error) = ControlRequest.decode(line: Array(line.utf8)) else {
            Issue.record("accepted \(line)")
            return
        }
        #expect(error.code == code, "\(line) -> \(error)")
        #expect(!error.message.isEmpty)
    }

    @Test("the request id survives a failed request")
    func requestIDEchoedOnFailure() {
        guard case .failure(let id, let error) = ControlRequest.decode(line: Array(#"{"command":["fly"],"request_id":9}"#.utf8))
        else {
            Issue.record("accepted")
            return
        }
        #expect(id == 9)
        #expect(ControlReply.failure(id, error).json["error"] == "unknown-command")
        #expect(ControlReply.failure(id, error).json["request_id"] == 9)
    }

    @Test("replies and events round-trip")
    func replyAndEventRoundTrip() throws {
        let success = ControlReply.success(3, ["position": 1.5])
        let failure = ControlReply.failure("a", CowatchError(.timeout, "slow"))
        for reply in [success, failure] {
            let parsed = try JSONValue.parse(reply.json.encoded())
            #expect(ControlReply(json: parsed) == reply)
        }
        let event = ControlEvent.notice(Notice(actor: "bob", action: .seek, from: 1, to: 2.5))
        #expect(try ControlEvent(json: try JSONValue.parse(event.json.encoded())) == event)
        #expect(ControlReply(json: event.json) == nil)
    }

    @Test("whole numbers print without a fraction, like mpv")
    func integersPrintPlain() {
        #expect(JSONValue.object(["a": 3, "b": 1.5, "c": .finite(.nan)]).jsonString == #"{"a":3,"b":1.5,"c":null}"#)
    }

    @Test("status round-trips with a drift section")
    func statusRoundTrip() throws {
        let status = PlayerStatus(
            position: 12.5, paused: true, speed: 1, duration: 70, media: "/m.mkv", title: "m", name: "alice",
            eof: false,
            drift: DriftStatus(
                error: 0.001, source: "frames", nudges: 0, seeks: 0, playerSpeed: nil, expected: nil, unpauseLead: 0,
                startLate: nil))
        #expect(try PlayerStatus(json: status.json) == status)
    }
}

@Suite("Line framing")
struct LineFramerTests {
    @Test("splits lines, drops CR, keeps partial lines")
    func splits() {
        var framer = LineFramer(maxLineBytes: 100)
        #expect(framer.feed(Array("ab\r\ncd\nef".utf8)) == [.line(Array("ab".utf8)), .line(Array("cd".utf8))])
        #expect(framer.pendingByteCount == 2)
        #expect(framer.feed(Array("\n".utf8)) == [.line(Array("ef".utf8))])
    }

    @Test("an over-long line is reported once and the next line still parses")
    func tooLong() {
        var framer = LineFramer(maxLineBytes: 4)
        var items: [LineFramer.Item] = []
        for byte in Array("abcdefghij\nok\n".utf8) { items += framer.feed([byte]) }
        #expect(items == [.tooLong, .line(Array("ok".utf8))])
        #expect(framer.pendingByteCount == 0)
    }
}

@Suite("Media times")
struct MediaTimeTests {
    @Test(
        "parses what people type",
        arguments: [
            ("90", 90.0, false), ("1:30", 90, false), ("1:02:03", 3723, false), ("+10", 10, true), ("-5", -5, true),
            ("-1:30", -90, true), ("1:02:03.5", 3723.5, false), (" 7 ", 7, false),
        ])
    func parses(text: String, seconds: Double, relative: Bool) {
        #expect(MediaTime.parse(text) == MediaTime.Argument(seconds: seconds, relative: relative))
    }

    @Test("rejects nonsense", arguments: ["", "abc", "1:75", "1:2:3:4", "nan", "inf", "+", "1e3", "1::2", "1.2.3"])
    func rejects(text: String) {
        #expect(MediaTime.parse(text) == nil)
    }

    @Test(
        "says what is wrong with a time that does not parse",
        arguments: [
            ("1:99", "99 is not below 60"), ("1:2:3:4", "more than hours"), ("1::2", "missing"), ("", "empty"),
            ("abc", "\"abc\" is not a number"), ("1.5:30", "fractions only in the seconds"), ("1.2.3", "not a number"),
        ])
    func problems(text: String, reason: String) throws {
        let problem = try #require(MediaTime.problem(text))
        #expect(problem.contains(reason), "\(problem)")
    }

    @Test("no problem with a time that parses")
    func noProblem() {
        #expect(MediaTime.problem("1:02:03") == nil)
        #expect(MediaTime.problem("-5") == nil)
    }

    @Test("formats like a player")
    func formats() {
        #expect(MediaTime.format(3723) == "1:02:03")
        #expect(MediaTime.format(62.04) == "0:01:02")
        #expect(MediaTime.format(62.04, fraction: 1) == "0:01:02.0")
        #expect(MediaTime.format(-5) == "-0:00:05")
        #expect(MediaTime.format(.nan) == "--:--")
    }
}

@Suite("Participant names")
struct ParticipantNameTests {
    @Test("valid names pass", arguments: ["alice", "Bob-2", "a.b_c"])
    func valid(name: String) throws {
        #expect(try ParticipantName.validate(name) == name)
    }

    @Test("invalid names fail", arguments: ["", ".hidden", "a/b", "with space", String(repeating: "x", count: 33), "é"])
    func invalid(name: String) {
        #expect(throws: CowatchError(.invalidConfiguration, "")) { try ParticipantName.validate(name) }
    }
}
