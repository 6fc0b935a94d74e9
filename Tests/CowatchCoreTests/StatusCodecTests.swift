import Testing

@testable import CowatchCore

@Suite("get_status sections: typed, one codec each, today's JSON")
struct StatusCodecTests {
    static let hosting = RoomStatus(
        room: "movie-night", server: "203.0.113.7:7000", session: "invalidated", reason: "ended-by", endedBy: "alice",
        participants: 3, seq: 17,
        activity: .init(
            id: 2, url: "https://example.org/b.mkv", title: "B", type: "listen", fallbackURL: "/media/b.mkv",
            openedBy: "bob", loading: "/media/b.mkv"),
        policy: .init(playWhenReady: true, waitTimeout: 30, managed: true), ready: true, waitForMe: false,
        waitForMeSetting: true, canPlay: false, lastError: CowatchError(.ioError, "cannot reach the room server"),
        role: "operator", managed: true, openOffer: OpenOffer(id: 3, url: "u", title: "t", by: nil), stall: "buffering",
        waitingFor: ["cat", "dan"],
        reachability: ReachabilityStatus(
            state: "mapped", summary: "friends can reach 198.51.100.4:7000", advice: nil, address: "198.51.100.4",
            mapping: .init(method: "pcp", externalPort: 7000, lease: 7200, gateway: "192.168.1.1"),
            ipv6: .init(state: "direct", summary: "reachable over IPv6", address: "2001:db8::1")))

    static let plain = RoomStatus(
        room: "r", server: "h:1", session: "joined", participants: 1, seq: 0,
        activity: .init(id: 0, url: "/m.mkv", title: "m", type: "watch"),
        policy: .init(playWhenReady: false, waitTimeout: 10, managed: false), ready: false, waitForMe: true,
        waitForMeSetting: true, canPlay: true, role: "member", managed: false)

    static let clock = ClockStatus(offset: -0.25, rtt: 0.002, uncertainty: 0.001, skew: 0.5, samples: 40)
    static let drift = DriftStatus(
        error: 0.004, source: "audio-pts", nudges: 2, seeks: 1, playerSpeed: 1.01, expected: 61.5, unpauseLead: 0.05,
        startLate: nil, pause: PauseTiming(arrived: 1204.25, set: 1204.2508), outputDelay: 0.05)

    static let statuses: [PlayerStatus] = [
        PlayerStatus(position: 61.5, paused: false, speed: 1, duration: 600, media: "/m.mkv", title: "m", name: "alice", eof: false),
        PlayerStatus(
            position: nil, paused: true, speed: 1, duration: nil, media: "", title: nil, name: "bob", eof: false, room: plain,
            drift: DriftStatus(error: nil, source: "frames", nudges: 0, seeks: 0, playerSpeed: nil, expected: nil, unpauseLead: 0, startLate: nil)),
        PlayerStatus(
            position: 600, paused: true, speed: 0.5, duration: 600, media: "/m.mkv", title: "m", name: "cat", eof: true,
            room: hosting, clock: clock, drift: drift),
    ]

    @Test("the room section is the JSON the daemon built by hand before")
    func roomGolden() throws {
        let expected = try JSONValue.parse(Array(#"""
            {"activity":{"fallback_url":null,"id":0,"opened_by":null,"title":"m","type":"watch","url":"/m.mkv"},
             "can_play":true,"last_error":null,"managed":false,"open_offer":null,"participants":1,
             "policy":{"managed":false,"play_when_ready":false,"wait_timeout":10},"reason":null,"ready":false,
             "role":"member","room":"r","seq":0,"server":"h:1","session":"joined","stall":null,"wait_for_me":true,
             "wait_for_me_setting":true,"waiting_for":[]}
            """#.utf8))
        #expect(Self.plain.json == expected)
        let hosting = try #require(Self.hosting.json.objectValue)
        #expect(hosting["ended_by"] == "alice")
        #expect(hosting["activity"]?["loading"] == "/media/b.mkv")
        #expect(hosting["last_error"] == ["code": "io-error", "message": "cannot reach the room server"])
        #expect(hosting["open_offer"] == ["id": 3, "url": "u", "title": "t", "by": .null])
        #expect(hosting["reachability"]?["external_port"] == 7000)
        #expect(hosting["reachability"]?["ipv6"]?["address"] == "2001:db8::1")
        #expect(hosting["reachability"]?["advice"] == .null)
    }

    @Test("the clock and drift sections are the JSON the daemon built by hand before (and the pause timing beside it)")
    func measurementGolden() {
        #expect(Self.clock.json.jsonString == #"{"offset":-0.25,"rtt":0.002,"samples":40,"skew":0.5,"uncertainty":0.001}"#)
        #expect(
            Self.drift.json.jsonString
                == #"{"error":0.004,"expected":61.5,"nudges":2,"output_delay":0.05,"pause_arrived":1204.25,"pause_set":1204.2508,"player_speed":1.01,"seeks":1,"source":"audio-pts","start_late":null,"unpause_lead":0.05}"#)
    }

    @Test("every status round-trips through get_status's JSON", arguments: statuses)
    func roundTrip(status: PlayerStatus) throws {
        let decoded = try PlayerStatus(json: try JSONValue.parse(status.json.encoded()))
        #expect(decoded == status)
        #expect(decoded.json.encoded() == status.json.encoded())
        #expect(decoded.room?.lastError?.message == status.room?.lastError?.message)
    }

    @Test("every status round-trips when its reply line arrives a byte at a time", arguments: statuses)
    func byteAtATime(status: PlayerStatus) throws {
        let reply = ControlReply.success(7, status.json)
        var framer = LineFramer(maxLineBytes: controlMaxLineBytes)
        var items: [LineFramer.Item] = []
        for byte in reply.json.encoded() + [UInt8(ascii: "\n")] { items += framer.feed([byte]) }
        guard items.count == 1, case .line(let line) = items.first, let parsed = ControlReply(json: try JSONValue.parse(line))
        else {
            Issue.record("no reply line")
            return
        }
        #expect(try PlayerStatus(json: try parsed.result.get()) == status)
    }

    static let hostile: [String] = [
        #"[]"#, #"{"name":"a"}"#, #"{"paused":true}"#, #"{"paused":1,"name":"a"}"#,
        #"{"paused":true,"name":"a","position":"1:00"}"#, #"{"paused":true,"name":"a","room":"r"}"#,
        #"{"paused":true,"name":"a","room":{"room":"r","server":"s","session":"joined"}}"#,
        #"{"paused":true,"name":"a","room":{"room":"r","server":"s","session":"joined","activity":{"id":1e300,"url":"u","title":"t"}}}"#,
        #"{"paused":true,"name":"a","room":{"room":"r","server":"s","session":"joined","participants":-1e300,"activity":{"id":1,"url":"u","title":"t"}}}"#,
        #"{"paused":true,"name":"a","room":{"room":"r","server":"s","session":"joined","activity":{"id":1,"url":"u","title":"t"},"waiting_for":"bob"}}"#,
        #"{"paused":true,"name":"a","room":{"room":"r","server":"s","session":"joined","activity":{"id":1,"url":"u","title":"t"},"reachability":{"state":"mapped","summary":"s","method":"pcp","external_port":1e20,"lease":1,"gateway":"g"}}}"#,
        #"{"paused":true,"name":"a","clock":{"offset":0,"rtt":"fast","uncertainty":0}}"#,
        #"{"paused":true,"name":"a","drift":{"nudges":0.5}}"#,
    ]

    @Test("hostile statuses are refused with malformed-control-message", arguments: hostile)
    func hostileRefused(text: String) {
        #expect(throws: CowatchError(.malformedControlMessage, "")) { try PlayerStatus(json: try JSONValue.parse(Array(text.utf8))) }
    }

    /// Each key of the room section (and of its nested objects) replaced by each wrong value.
    @Test("any field of the room section replaced by a wrong value never traps")
    func roomFieldsReplaced() {
        let wrong: [JSONValue] = [.null, false, "x", 1e300, -0.5, [], ["a"], [:]]
        let room = Self.hosting.json.objectValue ?? [:]
        for key in room.keys.sorted() {
            var paths: [[String]] = [[key]]
            if let nested = room[key]?.objectValue { paths += nested.keys.sorted().map { [key, $0] } }
            for path in paths {
                for value in wrong {
                    var object = room
                    if path.count == 1 {
                        object[key] = value
                    } else {
                        var nested = room[key]?.objectValue ?? [:]
                        nested[path[1]] = value
                        object[key] = .object(nested)
                    }
                    do {
                        _ = try RoomStatus(json: .object(object))
                    } catch {
                        #expect(error.code == .malformedControlMessage, "\(path) = \(value.jsonString): \(error)")
                    }
                }
            }
        }
    }
}

@Suite("Control command names come from one list")
struct ControlCommandNameTests {
    @Test("every name parses to a command of that name, and back", arguments: ControlCommand.Name.allCases)
    func everyNameParses(name: ControlCommand.Name) {
        let arguments: [JSONValue] =
            switch name {
            case .seek: ["seek", 5]
            case .speed: ["speed", 1.5]
            case .getProperty: ["get_property", "pause"]
            case .open: ["open", "/m.mkv"]
            case .waitForMe: ["wait_for_me", false]
            case .op, .deop, .kick: [.string(name.rawValue), "bob"]
            case .chat: ["chat", "hi"]
            case .sendMessage: ["send_message", "game", 1]
            case .attach: ["attach", "/tmp/a.srt"]
            case .detach: ["detach", "abcd"]
            case .fetch: ["fetch", "abcd", "/tmp"]
            case .playlistAdd, .playlistReplace: [.string(name.rawValue), ["/m.mkv"]]
            case .playlistInsert: ["playlist_insert", ["/m.mkv"], 1]
            case .playlistRemove, .playlistJump: [.string(name.rawValue), 1]
            case .playlistMove: ["playlist_move", 1, 2]
            case .playlistRepeat: ["playlist_repeat", "all"]
            case .playlistShuffle, .playlistEditing: [.string(name.rawValue), true]
            case .playlistCountdown: ["playlist_countdown", 3]
            case .playlistPick: ["playlist_pick", 1, "/m.mkv"]
            default: [.string(name.rawValue)]
            }
        let command = try? ControlCommand(arguments: arguments)
        #expect(command?.kind == name, "\(name.rawValue)")
        #expect(command?.arguments.first == .string(name.rawValue))
    }

    @Test("names is the Name list, and the aliases read as their command")
    func namesAndAliases() throws {
        #expect(ControlCommand.names == ControlCommand.Name.allCases.map(\.rawValue))
        #expect(Set(ControlCommand.names).count == ControlCommand.names.count)
        #expect(try ControlCommand(arguments: ["cycle_pause"]) == .togglePause)
        #expect(try ControlCommand(arguments: ["set_speed", 2]) == .speed(2))
        #expect(throws: CowatchError(.unknownCommand, "")) { try ControlCommand(arguments: ["explode"]) }
    }
}
