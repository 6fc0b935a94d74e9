import Foundation
import Testing

@testable import CowatchCore

/// Issue 24: Syncplay's lines as typed commands. Every command round-trips, whole and a byte at
/// a time through the line framer; lines as Syncplay's own peers write them decode; hostile lines
/// are refused with a stable code, never a trap.
@Suite("Syncplay: the line codec")
struct SyncplayCodecTests {
    static let file = SyncplayFile(name: "Épisode 4 (2024).mkv", duration: 1420.5, size: 734_003_200)
    static var features: SyncplayFeatures {
        var features = SyncplayFeatures.cowatchClient
        features.maxChatMessageLength = 150
        features.isolateRooms = true
        return features
    }

    static let commands: [[SyncplayCommand]] = [
        [.tls(.send)], [.tls(.accepted)], [.tls(.refused)],
        [.hello(SyncplayHello(username: "alice", passwordHash: "5f4dcc3b5aa765d61d8327deb882cf99", room: "movie night", realVersion: "1.7.3", features: features))],
        [.hello(SyncplayHello(username: "bob_", room: "r", version: "1.7.3", realVersion: "1.7.3", motd: "Welcome\nto the server", features: SyncplayFeatures()))],
        [.set([.room(name: "other", password: nil)])],
        [.set([.room(name: "+r:ABCDEF123456", password: "AB-123-456")])],
        [.set([.file(file)])],
        [.set([.file(SyncplayFile(name: "0123abcd", duration: 60, sizeHash: "89ab"))])],
        [.set([.user(SyncplayUserUpdate(username: "bob", room: "r", file: file, event: .joined)), .user(SyncplayUserUpdate(username: "carol", room: "r", event: .left))])],
        [.set([.user(SyncplayUserUpdate(username: "dan", room: "r", file: file))])],
        [.set([.ready(SyncplayReady(isReady: true, manuallyInitiated: false))])],
        [.set([.ready(SyncplayReady(username: "bob", isReady: nil, manuallyInitiated: true))])],
        [.set([.playlistChange(files: ["a.mkv", "https://example.org/b.mkv", "ç é.mp4"], user: nil)])],
        [.set([.playlistChange(files: [], user: "bob")])],
        [.set([.playlistIndex(index: 2, user: "bob")])],
        [.set([.playlistIndex(index: nil, user: nil)])],
        [.set([.controllerAuth(SyncplayControllerAuth(room: "base", password: "AB-123-456"))])],
        [.set([.controllerAuth(SyncplayControllerAuth(room: "+base:ABCDEF123456", user: "alice", success: true))])],
        [.set([.newControlledRoom(roomName: "+base:ABCDEF123456", password: "AB-123-456")])],
        [.set([.features(username: nil, features)])],
        [.set([.features(username: "bob", features)])],
        [.list(nil)],
        [.list([
            SyncplayListedUser(room: "r", username: "alice", position: 12.5, file: file, controller: true, isReady: true, features: features),
            SyncplayListedUser(room: "r", username: "bob", position: 0, file: nil, controller: false, isReady: nil),
            SyncplayListedUser(room: "s", username: "carol", position: 0),
        ])],
        [.list([])],
        [.state(SyncplayState(
            ping: .init(latencyCalculation: 1_764_172_800.123456, serverRtt: 0.012),
            playstate: .init(position: 42.25, paused: false, doSeek: false, setBy: "bob"),
            ignoring: .init(server: 3)))],
        [.state(SyncplayState(
            ping: .init(latencyCalculation: 1_764_172_800.5, clientLatencyCalculation: 12_345.678, clientRtt: 0.004),
            playstate: .init(position: 0, paused: true, doSeek: true), ignoring: .init(server: 1, client: 7)))],
        [.state(SyncplayState(ping: .init(clientLatencyCalculation: 5, clientRtt: 0)))],
        [.chat(SyncplayChat(message: "hi — «all»"))],
        [.chat(SyncplayChat(username: "bob", message: "{\"not\": \"json\"}"))],
        [.error("Not a known command\nbye")],
        [.hello(SyncplayHello(username: "a", room: "r", realVersion: "1.7.3")), .set([.ready(SyncplayReady(isReady: false))]), .list(nil)],
    ]

    @Test("every command round-trips, whole and a byte at a time", arguments: commands)
    func roundTrip(commands: [SyncplayCommand]) throws {
        let line = SyncplayCodec.encode(commands)
        #expect(line.suffix(2) == [0x0D, 0x0A])
        #expect(try SyncplayCodec.decode(line: line.dropLast(2)) == commands)
        var framer = LineFramer(maxLineBytes: SyncplayCodec.maxLineBytes)
        var lines: [[UInt8]] = []
        for byte in line {
            for item in framer.feed([byte]) {
                guard case .line(let bytes) = item else { Issue.record("too long"); continue }
                lines.append(bytes)
            }
        }
        #expect(lines.count == 1)
        #expect(try SyncplayCodec.decode(line: lines[0]) == commands)
    }

    @Test("lines as Syncplay 1.6.9 and 1.7 write them decode")
    func syncplaysOwnLines() throws {
        let lines: [(String, [SyncplayCommand])] = [
            (#"{"TLS": {"startTLS": "true"}}"#, [.tls(.accepted)]),
            (
                #"{"Hello": {"username": "bob", "room": {"name": "r"}, "version": "1.2.255", "realversion": "1.6.9", "motd": "", "features": {"isolateRooms": false, "readiness": true, "managedRooms": true, "chat": true, "maxChatMessageLength": 150, "maxUsernameLength": 16, "maxRoomNameLength": 35, "maxFilenameLength": 250}}}"#,
                [.hello({
                    var features = SyncplayFeatures()
                    features.isolateRooms = false
                    features.readiness = true
                    features.managedRooms = true
                    features.chat = true
                    features.maxChatMessageLength = 150
                    features.maxUsernameLength = 16
                    features.maxRoomNameLength = 35
                    features.maxFilenameLength = 250
                    return SyncplayHello(username: "bob", room: "r", version: "1.2.255", realVersion: "1.6.9", motd: "", features: features)
                }())]
            ),
            (
                #"{"State": {"ping": {"latencyCalculation": 1764172800.25, "serverRtt": 0}, "playstate": {"position": 0, "paused": true, "doSeek": null, "setBy": null}}}"#,
                [.state(SyncplayState(ping: .init(latencyCalculation: 1_764_172_800.25, serverRtt: 0), playstate: .init(position: 0, paused: true)))]
            ),
            (
                #"{"Set": {"user": {"bob": {"room": {"name": "r"}, "event": {"joined": true}}}}}"#,
                [.set([.user(SyncplayUserUpdate(username: "bob", room: "r", event: .joined))])]
            ),
            (
                #"{"Set": {"user": {"bob": {"room": {"name": "r"}, "file": {"name": "a.mkv", "duration": 75.0, "size": 1048576}}}}}"#,
                [.set([.user(SyncplayUserUpdate(username: "bob", room: "r", file: SyncplayFile(name: "a.mkv", duration: 75, size: 1_048_576)))])]
            ),
            (
                #"{"List": {"r": {"bob": {"position": 0, "file": {}, "controller": false, "isReady": null, "features": {}}}}}"#,
                [.list([SyncplayListedUser(room: "r", username: "bob", position: 0, features: SyncplayFeatures())])]
            ),
            (#"{"Chat": {"username": "bob", "message": "hello"}}"#, [.chat(SyncplayChat(username: "bob", message: "hello"))]),
            (#"{"Error": {"message": "Wrong password supplied"}}"#, [.error("Wrong password supplied")]),
            // A newer server's setting we do not know is skipped, as Syncplay skips it.
            (#"{"Set": {"somethingNew": {"x": 1}, "ready": {"username": "bob", "isReady": true}}}"#, [.set([.ready(SyncplayReady(username: "bob", isReady: true))])]),
        ]
        for (line, expected) in lines {
            #expect(try SyncplayCodec.decode(line: Array(line.utf8)) == expected, "\(line)")
        }
    }

    @Test("hostile lines are refused with a stable code", arguments: [
        ("", "invalid-json"), ("not json", "invalid-json"), ("[1,2]", "protocol-violation"), ("{}", "protocol-violation"),
        (#"{"Launch": {}}"#, "unknown-command"), (#"{"State": 5}"#, "protocol-violation"),
        (#"{"TLS": {"startTLS": "maybe"}}"#, "protocol-violation"),
        (#"{"Hello": {"username": "a", "room": {"name": "r"}}}"#, "protocol-violation"),
        (#"{"Hello": {"username": "a\u001b[2J", "room": {"name": "r"}, "version": "1"}}"#, "protocol-violation"),
        (#"{"Chat": {"username": "bob", "message": "line\nbreak"}}"#, "protocol-violation"),
        (#"{"Chat": "\u0007"}"#, "protocol-violation"),
        (#"{"State": {"playstate": {"position": 1e300, "paused": true}}}"#, "protocol-violation"),
        (#"{"State": {"playstate": {"position": "12", "paused": true}}}"#, "protocol-violation"),
        (#"{"State": {"playstate": {"position": 1, "paused": "yes"}}}"#, "protocol-violation"),
        (#"{"State": {"ignoringOnTheFly": {"server": -1}}}"#, "protocol-violation"),
        (#"{"State": {"ignoringOnTheFly": {"client": 2.5}}}"#, "protocol-violation"),
        (#"{"State": {"ignoringOnTheFly": {"client": 1e12}}}"#, "protocol-violation"),
        (#"{"Set": {"playlistChange": {"files": "a.mkv"}}}"#, "protocol-violation"),
        (#"{"Set": {"playlistChange": {"files": [1]}}}"#, "protocol-violation"),
        (#"{"Set": {"playlistIndex": {"index": -2}}}"#, "protocol-violation"),
        (#"{"Set": {"file": {"duration": 5}}}"#, "protocol-violation"),
        (#"{"Set": {"user": {"bob\r": {}}}}"#, "protocol-violation"),
        (#"{"List": {"r": {"bob": {"position": true}}}}"#, "protocol-violation"),
        (#"{"Set": 7}"#, "protocol-violation"),
    ])
    func hostile(line: String, code: String) {
        #expect(throws: CowatchError(CowatchError.Code(rawValue: code), "")) { try SyncplayCodec.decode(line: Array(line.utf8)) }
    }

    @Test("bounds: a 251-file playlist, a 1 001-character name, a line over 16 KiB")
    func bounds() {
        let files = (0...SyncplayCodec.maxPlaylistFiles).map { "\"f\($0).mkv\"" }.joined(separator: ",")
        #expect(throws: CowatchError(.protocolViolation, "")) {
            try SyncplayCodec.decode(line: Array(#"{"Set": {"playlistChange": {"files": [\#(files)]}}}"#.utf8))
        }
        let long = String(repeating: "é", count: SyncplayCodec.maxTextLength + 1)
        #expect(throws: CowatchError(.protocolViolation, "")) {
            try SyncplayCodec.decode(line: Array(#"{"Chat": "\#(long)"}"#.utf8))
        }
        let huge = #"{"Chat": ""# + String(repeating: "a", count: SyncplayCodec.maxLineBytes) + #""}"#
        #expect(throws: CowatchError(.protocolViolation, "")) { try SyncplayCodec.decode(line: Array(huge.utf8)) }
    }

    @Test("a client's chat is a bare string; a server's names its sender")
    func chatShapes() throws {
        let client = try JSONValue.parse(SyncplayCodec.encode(.chat(SyncplayChat(message: "hi"))).dropLast(2))
        #expect(client == ["Chat": "hi"])
        let server = try JSONValue.parse(SyncplayCodec.encode(.chat(SyncplayChat(username: "bob", message: "hi"))).dropLast(2))
        #expect(server == ["Chat": ["username": "bob", "message": "hi"]])
    }
}

extension SyncplayCodecTests {
    @Test("the server password travels as Syncplay hashes it: MD5 hex")
    func passwordHash() {
        #expect(SyncplayPassword.hash("password") == "5f4dcc3b5aa765d61d8327deb882cf99")
        #expect(SyncplayPassword.hash("") == "d41d8cd98f00b204e9800998ecf8427e")
    }
}
