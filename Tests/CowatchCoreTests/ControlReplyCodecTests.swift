import Testing

@testable import CowatchCore

/// The typed replies of the control socket (`ControlReplyData`): each encodes to exactly the JSON
/// the daemon built by hand before, reads it back whole or a byte at a time, ignores keys a newer
/// daemon adds, and refuses anything malformed with `malformed-control-message`.
@Suite("Control replies: one codec each, today's JSON")
struct ControlReplyCodecTests {
    static let subtitles = Attachment(id: "ab12", name: "night.srt", size: 2048, from: "bob", meta: ["kind": "subtitles"])
    static let notes = Attachment(id: "cd34", name: "notes.txt", size: 0, from: "ann")
    static let reachability = ReachabilityStatus(
        state: "mapped", summary: "friends can reach this machine at 203.0.113.7:7433", advice: nil, address: "203.0.113.7",
        mapping: .init(method: "upnp", externalPort: 7433, lease: 3600, gateway: "192.168.1.1"),
        ipv6: .init(state: "no-gateway", summary: "no IPv6 pinhole", address: nil))

    /// Every reply type (and the variants whose wire form differs), with the JSON the daemon wrote
    /// before the replies were typed.
    static let golden: [(any ControlReplyData, String)] = [
        (
            ParticipantsReply(participants: [
                .init(name: "alice", state: "joined", drift: 0.25, rtt: 0.5, ready: true, waitForMe: true, role: "owner", you: true),
                .init(name: "bob", state: "silent", ready: false, waitForMe: false, stall: "buffering"),
            ]),
            #"[{"drift":0.25,"name":"alice","ready":true,"role":"owner","rtt":0.5,"stall":null,"state":"joined","wait_for_me":true,"you":true},{"drift":null,"name":"bob","ready":false,"role":"member","rtt":null,"stall":"buffering","state":"silent","wait_for_me":false}]"#
        ),
        (ParticipantsReply(participants: []), "[]"),
        (
            ParticipantsReply(participants: [
                .init(name: "bob", state: "joined", stream: .init(from: "alice", aheadBytes: 4096, aheadSeconds: 12.5, rate: 2.5e6)),
                .init(name: "dan", state: "joined", stream: .init(from: "alice", aheadBytes: 0, aheadSeconds: nil, rate: 0)),
            ]),
            #"[{"drift":null,"name":"bob","ready":false,"role":"member","rtt":null,"stall":null,"state":"joined","stream":{"ahead_bytes":4096,"ahead_seconds":12.5,"from":"alice","rate":2500000},"wait_for_me":true},{"drift":null,"name":"dan","ready":false,"role":"member","rtt":null,"stall":null,"state":"joined","stream":{"ahead_bytes":0,"ahead_seconds":null,"from":"alice","rate":0},"wait_for_me":true}]"#
        ),
        (
            AttachmentsReply(attachments: [subtitles, notes]),
            #"[{"id":"ab12","meta":{"kind":"subtitles"},"name":"night.srt","participant":"bob","size":2048,"subtitles":true},{"id":"cd34","meta":null,"name":"notes.txt","participant":"ann","size":0,"subtitles":false}]"#
        ),
        (AttachmentsReply(attachments: []), "[]"),
        (
            AttachmentReply(notes),
            #"{"id":"cd34","meta":null,"name":"notes.txt","participant":"ann","size":0,"subtitles":false}"#
        ),
        (
            FetchReply(attachment: subtitles, path: "/home/a/night.srt", resumedFrom: 512),
            #"{"id":"ab12","meta":{"kind":"subtitles"},"name":"night.srt","participant":"bob","path":"/home/a/night.srt","resumed_from":512,"size":2048,"subtitles":true}"#
        ),
        (
            ChatReply(lines: [ChatLine(from: "bob", text: "hi \"all\"", history: true), ChatLine(from: "ann", text: "ok")]),
            #"[{"history":true,"participant":"bob","text":"hi \"all\""},{"history":false,"participant":"ann","text":"ok"}]"#
        ),
        (ChatReply(lines: []), "[]"),
        (SendMessageReply(id: 7, delivered: ["bob", "cat"]), #"{"delivered":["bob","cat"],"id":7}"#),
        (SendMessageReply(id: 8, delivered: []), #"{"delivered":[],"id":8}"#),
        (SendMessageReply(id: 9, delivered: nil), #"{"id":9}"#),
        (ShowRoomReply(text: "alice, bob (not ready) · waiting for bob"), #"{"text":"alice, bob (not ready) · waiting for bob"}"#),
        (InviteReply(invite: "cowatch://10.0.0.2:7433/den#s=abc"), #"{"invite":"cowatch://10.0.0.2:7433/den#s=abc"}"#),
        (
            InviteReply(invite: "cowatch://203.0.113.7:7433/den#s=abc", reachability: reachability),
            #"{"invite":"cowatch://203.0.113.7:7433/den#s=abc","reachability":{"address":"203.0.113.7","advice":null,"external_port":7433,"gateway":"192.168.1.1","ipv6":{"address":null,"state":"no-gateway","summary":"no IPv6 pinhole"},"lease":3600,"method":"upnp","state":"mapped","summary":"friends can reach this machine at 203.0.113.7:7433"}}"#
        ),
        (SharesReply(), #"{"offers":[],"receiving":null,"serving":[]}"#),
        (
            SharesReply(
                offers: [.init(by: "alice", name: "film.mkv", size: 200_000_000, fingerprint: "ab")],
                receiving: .init(from: "alice", name: "film.mkv", received: 1024, rate: 2.5e6, ahead: 4096, problem: "slow", onDisk: 3 << 20),
                serving: [.init(to: "carol", name: "other.mkv", sent: 7, rate: 0)]),
            #"{"offers":[{"by":"alice","fingerprint":"ab","name":"film.mkv","size":200000000}],"receiving":{"ahead":4096,"from":"alice","name":"film.mkv","on_disk":3145728,"problem":"slow","rate":2500000,"received":1024},"serving":[{"name":"other.mkv","rate":0,"sent":7,"to":"carol"}]}"#
        ),
        (
            ManagedRoomReply(room: "+film:ABCDEF123456", password: "AB-123-456", link: "syncplay://h/+film:ABCDEF123456", created: true),
            #"{"created":true,"link":"syncplay://h/+film:ABCDEF123456","password":"AB-123-456","room":"+film:ABCDEF123456"}"#
        ),
    ] + PlaylistControlTests.replyGolden

    static var replies: [any ControlReplyData] { golden.map(\.0) }

    /// Reads `bytes` as a reply of `reply`'s own type.
    static func decode<Reply: ControlReplyData>(like reply: Reply, _ bytes: [UInt8]) throws(CowatchError) -> Reply {
        try Reply(line: bytes)
    }

    static func same<Reply: ControlReplyData>(_ reply: Reply, _ bytes: [UInt8]) throws(CowatchError) -> Bool {
        try decode(like: reply, bytes) == reply
    }

    @Test("each reply encodes to exactly the JSON of the control protocol", arguments: golden)
    func encodesAsBefore(reply: any ControlReplyData, expected: String) {
        #expect(reply.json.jsonString == expected)
    }

    @Test("every reply round-trips through its line", arguments: replies)
    func roundTrip(reply: any ControlReplyData) throws {
        let line = reply.json.encoded()
        #expect(try Self.same(reply, line))
    }

    @Test("every reply round-trips when its line arrives a byte at a time", arguments: replies)
    func byteAtATime(reply: any ControlReplyData) throws {
        var framer = LineFramer(maxLineBytes: controlMaxLineBytes)
        var items: [LineFramer.Item] = []
        for byte in reply.json.encoded() + [UInt8(ascii: "\n")] { items += framer.feed([byte]) }
        #expect(items.count == 1)
        guard case .line(let line) = items.first else {
            Issue.record("no line for \(reply.json.jsonString.prefix(40))")
            return
        }
        #expect(try Self.same(reply, Array(line)))
    }

    @Test("a reply inside a whole reply line reads back through ControlReply")
    func insideReplyLine() throws {
        let sent = ControlReply.success(7, SendMessageReply(id: 3, delivered: ["bob"]).json)
        let received = try #require(ControlReply(json: try JSONValue.parse(sent.json.encoded())))
        #expect(try SendMessageReply(json: try received.result.get()) == SendMessageReply(id: 3, delivered: ["bob"]))
    }

    @Test("keys a newer daemon adds are ignored, in objects and in list entries")
    func extraKeysIgnored() throws {
        let participants = try ParticipantsReply(
            line: Array(#"[{"name":"a","state":"joined","drift":null,"rtt":null,"ready":false,"wait_for_me":true,"stall":null,"role":"member","mood":"happy"}]"#.utf8))
        #expect(participants == ParticipantsReply(participants: [.init(name: "a", state: "joined")]))
        let fetch = try FetchReply(
            line: Array(#"{"id":"x","name":"n","size":1,"participant":"p","meta":null,"subtitles":false,"path":"/t","resumed_from":0,"checked":true}"#.utf8))
        #expect(fetch == FetchReply(attachment: Attachment(id: "x", name: "n", size: 1, from: "p"), path: "/t", resumedFrom: 0))
        #expect(try SendMessageReply(line: Array(#"{"id":1,"delivered":["b"],"late":[]}"#.utf8)) == SendMessageReply(id: 1, delivered: ["b"]))
        #expect(try ShowRoomReply(line: Array(#"{"text":"t","width":80}"#.utf8)) == ShowRoomReply(text: "t"))
        #expect(try InviteReply(line: Array(#"{"invite":"i","qr":"…"}"#.utf8)) == InviteReply(invite: "i"))
        #expect(try ChatReply(line: Array(#"[{"participant":"a","text":"t","at":3}]"#.utf8)) == ChatReply(lines: [ChatLine(from: "a", text: "t")]))
        #expect(try AttachmentReply(line: Array(#"{"id":"x","name":"n","size":1,"participant":"p","hash":"sha256"}"#.utf8)) == AttachmentReply(Attachment(id: "x", name: "n", size: 1, from: "p")))
    }

    @Test("optional fields left out take their defaults")
    func defaults() throws {
        let entry = try ParticipantsReply(line: Array(#"[{"name":"a","state":"joined"}]"#.utf8)).participants.first
        #expect(entry == ParticipantsReply.Entry(name: "a", state: "joined"))
        #expect(entry?.waitForMe == true && entry?.role == "member" && entry?.you == false)
        #expect(try FetchReply(line: Array(#"{"id":"x","name":"n","size":1,"participant":"p","path":"/t"}"#.utf8)).resumedFrom == 0)
        #expect(try ChatReply(line: Array(#"[{"participant":"a","text":"t"}]"#.utf8)).lines.first?.history == false)
    }

    /// Per reply type, lines that must be refused.
    static let hostile: [(String, String)] = [
        ("participants", #"{}"#), ("participants", #""alice""#), ("participants", #"null"#), ("participants", #"[1]"#),
        ("participants", #"[null]"#), ("participants", #"[[]]"#), ("participants", #"[{"state":"joined"}]"#),
        ("participants", #"[{"name":"a"}]"#), ("participants", #"[{"name":7,"state":"joined"}]"#),
        ("participants", #"[{"name":"a","state":"joined","drift":"far"}]"#),
        ("participants", #"[{"name":"a","state":"joined","rtt":[]}]"#),
        ("participants", #"[{"name":"a","state":"joined","ready":"yes"}]"#),
        ("participants", #"[{"name":"a","state":"joined","you":1}]"#),
        ("participants", #"[{"name":"a","state":"joined","stall":false}]"#),
        ("participants", #"[{"name":"a","state":"joined"},{"name":"b"}]"#),
        ("attachments", #"{}"#), ("attachments", #"[3]"#), ("attachments", #"[{"id":"x","name":"n","participant":"p"}]"#),
        ("attachments", #"[{"id":"x","name":"n","size":1.5,"participant":"p"}]"#),
        ("attachments", #"[{"id":"x","name":"n","size":1e300,"participant":"p"}]"#),
        ("attachments", #"[{"id":"x","name":"n","size":"big","participant":"p"}]"#),
        ("attachments", #"[{"id":null,"name":"n","size":1,"participant":"p"}]"#),
        ("attachment", #"[]"#), ("attachment", #"null"#), ("attachment", #"{"id":"x","name":"n","size":-1e20,"participant":"p"}"#),
        ("attachment", #"{"id":"x","size":1,"participant":"p"}"#),
        ("fetch", #"[]"#), ("fetch", #"{"id":"x","name":"n","size":1,"participant":"p"}"#),
        ("fetch", #"{"id":"x","name":"n","size":1,"participant":"p","path":5}"#),
        ("fetch", #"{"id":"x","name":"n","size":1,"participant":"p","path":"/t","resumed_from":0.5}"#),
        ("fetch", #"{"name":"n","size":1,"participant":"p","path":"/t"}"#),
        ("chat", #"{}"#), ("chat", #"["hi"]"#), ("chat", #"[{"participant":"a"}]"#), ("chat", #"[{"text":"t"}]"#),
        ("chat", #"[{"participant":"a","text":5}]"#), ("chat", #"[{"participant":"a","text":"t","history":"no"}]"#),
        ("send", #"[]"#), ("send", #"{}"#), ("send", #"{"id":"7"}"#), ("send", #"{"id":1.5}"#), ("send", #"{"id":1e300}"#),
        ("send", #"{"id":1,"delivered":"bob"}"#), ("send", #"{"id":1,"delivered":[1,2]}"#), ("send", #"{"id":1,"delivered":{}}"#),
        ("room", #"[]"#), ("room", #"{}"#), ("room", #"{"text":3}"#), ("room", #""text""#),
        ("invite", #"{}"#), ("invite", #"{"invite":7}"#), ("invite", #"{"invite":"i","reachability":"fine"}"#),
        ("invite", #"{"invite":"i","reachability":{"summary":"s"}}"#),
        ("invite", #"{"invite":"i","reachability":{"state":"mapped","summary":"s","method":"upnp"}}"#),
        ("invite", #"[{"invite":"i"}]"#),
        ("manage", #"{}"#), ("manage", #"{"room":"r","password":"p","link":"l"}"#), ("manage", #"{"room":"r","password":7,"link":"l","created":true}"#),
        ("manage", #"{"room":"r","password":"p","link":"l","created":"yes"}"#), ("manage", #"[]"#),
    ]

    static func read(_ kind: String, _ line: String) throws(CowatchError) {
        let bytes = Array(line.utf8)
        switch kind {
        case "participants": _ = try ParticipantsReply(line: bytes)
        case "attachments": _ = try AttachmentsReply(line: bytes)
        case "attachment": _ = try AttachmentReply(line: bytes)
        case "fetch": _ = try FetchReply(line: bytes)
        case "chat": _ = try ChatReply(line: bytes)
        case "send": _ = try SendMessageReply(line: bytes)
        case "room": _ = try ShowRoomReply(line: bytes)
        case "invite": _ = try InviteReply(line: bytes)
        case "manage": _ = try ManagedRoomReply(line: bytes)
        default: Issue.record("no reply type \(kind)")
        }
    }

    @Test("hostile replies are refused with malformed-control-message", arguments: hostile)
    func hostileRefused(kind: String, line: String) {
        #expect(throws: CowatchError(.malformedControlMessage, "")) { try Self.read(kind, line) }
    }

    @Test("a reply that is not JSON is invalid-json")
    func notJSON() {
        #expect(throws: CowatchError(.invalidJSON, "")) { try ParticipantsReply(line: Array(#"[{"name":"a""#.utf8)) }
        #expect(throws: CowatchError(.invalidJSON, "")) { try FetchReply(line: Array("{".utf8)) }
    }

    @Test("the refusal names the reply and the field")
    func refusalSaysWhat() {
        do {
            _ = try ParticipantsReply(line: Array(#"[{"name":"a","state":"joined"},{"name":"b"}]"#.utf8))
            Issue.record("accepted")
        } catch {
            #expect(error.message == "the get_participants reply's entry lacks state")
        }
        do {
            _ = try SendMessageReply(line: Array(#"{"id":1,"delivered":[1]}"#.utf8))
            Issue.record("accepted")
        } catch {
            #expect(error.message == "the send_message reply: delivered must be a list of strings")
        }
    }

    /// Every key of every reply (of the first entry, for a list) replaced by each wrong value:
    /// it decodes or is refused cleanly.
    @Test("any field of any reply replaced by a wrong value never traps", arguments: replies)
    func fieldsReplaced(reply: any ControlReplyData) {
        let wrong: [JSONValue] = [
            .null, true, "text", -1e300, 1e300, 0.5, -0.0, [], [1, "a"], [:], ["nested": [:]],
            .string(String(repeating: "x", count: 100_000)),
        ]
        func variants(of object: [String: JSONValue]) -> [[String: JSONValue]] {
            object.keys.sorted().flatMap { key in
                wrong.map { value in
                    var changed = object
                    changed[key] = value
                    return changed
                }
            }
        }
        var lines: [JSONValue] = []
        if let object = reply.json.objectValue {
            lines = variants(of: object).map(JSONValue.object)
        } else if let list = reply.json.arrayValue, let first = list.first?.objectValue {
            lines = variants(of: first).map { .array([.object($0)] + list.dropFirst()) }
            lines += wrong.map { .array([$0] + list.dropFirst()) }
        }
        for line in lines {
            do {
                _ = try Self.decode(like: reply, line.encoded())
            } catch {
                #expect(error.code == .malformedControlMessage, "\(line.jsonString.prefix(60)): \(error)")
            }
        }
    }
}
