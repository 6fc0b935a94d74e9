import CowatchTestSupport
import Testing

@testable import CowatchCore

@Suite("Room wire messages")
struct WireProtocolTests {
    static let timeline = GroupTimeline(seq: 4, position: 61.5, reference: 1234.5678, rate: 1.25, playing: true, holding: false)

    static let clientMessages: [ClientMessage] = [
        .hello(.init(
            room: "movie-night", name: "alice",
            activity: Activity(url: "/films/night.mkv", title: "Night", type: .watch, fallbackURL: "https://example.org/night.mkv"),
            status: ParticipantStatus(stall: nil, ready: true, waitForMe: false))),
        .hello(.init(room: "r", name: "d", activity: Activity(id: 3, url: "song.ogg", type: .listen, openedBy: "carol"), status: .init(stall: .loading))),
        .hello(.init(versions: 3...5, features: ["roles", "future-thing"], room: "r", name: "b", nonce: String(repeating: "ab", count: 32), token: "00112233445566778899aabbccddeeff.00112233445566778899aabbccddeeff")),
        .auth(.init(proof: String(repeating: "0f", count: 32))),
        .auth(.init(create: RoomVerifier(salt: String(repeating: "1a", count: 16), key: String(repeating: "2b", count: 32)))),
        .auth(.init()),
        .role(name: "bob", role: .operator),
        .role(name: "bob", role: .member),
        .kick(name: "mallory"),
        .chat(id: 9, text: "ça va? <b>not html</b> \"quoted\""),
        .message(RoomMessage(id: 1 << 45, topic: "cursor", payload: #"{"x":1,"y":"\"q\""}"#, reliable: false, to: ["bob", "carol"])),
        .message(RoomMessage(id: 2, topic: "state_v2", payload: "[]", reliable: true)),
        .message(RoomMessage(id: 3, topic: "big", payload: String(repeating: "\"", count: RoomMessage.maxPayloadBytes), reliable: true)),
        .unsupported(type: "chat"),
        .unknown(type: "chat_v9"),
        .action(.init(id: 6, kind: .pause, position: 3, deadline: 12345.678)),
        .hello(.init(room: "r", name: "c", resume: .init(position: 61.5, playing: true, rate: 1.25))),
        .timeRequest(id: 7, t1: 123.456789),
        .action(.init(id: 1, kind: .play)),
        .action(.init(id: 2, kind: .pause, position: 42.04)),
        .action(.init(id: 3, kind: .seek, position: 90, from: 12.5)),
        .action(.init(id: 4, kind: .speed, rate: 1.5)),
        .ready(seq: 9),
        .report(drift: -0.0004, rtt: 0.0012),
        .report(drift: nil, rtt: nil),
        .action(.init(id: 5, kind: .open, activity: Activity(url: "http://host/b.mkv", title: "B"))),
        .status(ParticipantStatus(stall: .buffering, ready: false, waitForMe: true)),
        .status(ParticipantStatus(stall: .seeking, ready: true, waitForMe: false)),
        .media(activity: 2, MediaInfo(duration: 5400.04, size: 734_003_200, hash: "00ff12ab34cd56ef")),
        .media(activity: 0, MediaInfo(duration: nil, size: nil, hash: nil)),
        .end(),
        .bye,
        // request-ids: end, role and kick name themselves, from 0 to the largest id.
        .end(id: 7),
        .role(name: "bob", role: .operator, id: 0),
        .role(name: "bob", role: .member, id: 12),
        .kick(name: "mallory", id: wireMaxRequestID),
        .detach(id: 12, attachment: String(repeating: "ab", count: 32)),
        .transfer(TransferRequest(
            room: "r", name: "alice", token: "00112233445566778899aabbccddeeff.00112233445566778899aabbccddeeff",
            kind: .upload, id: String(repeating: "0f", count: 32), size: 104_857_600, fileName: "Night (2024) ça.en.srt",
            meta: ["kind": "subtitles", "lang": "en"])),
        .transfer(TransferRequest(
            room: "r", name: "bob", token: "00112233445566778899aabbccddeeff.00112233445566778899aabbccddeeff",
            kind: .download, id: String(repeating: "0f", count: 32), offset: 65_536)),
    ]

    static let serverMessages: [ServerMessage] = [
        .chat(ChatLine(from: "bob", text: "hi", id: 3)),
        .chat(ChatLine(from: "bob", text: "from before", history: true)),
        .message(RoomMessage(id: 5, topic: "t", payload: "{}", reliable: true, from: "alice")),
        .messageAck(id: 5, delivered: ["bob", "carol"]),
        .messageAck(id: 6, delivered: []),
        .welcome(.init(name: "alice", room: "movie-night", timeline: timeline, participants: [
            ParticipantInfo(name: "alice", state: "joined"), ParticipantInfo(name: "bob", state: "landed", drift: 0.001, rtt: 0.02),
            ParticipantInfo(name: "carol", state: "joined", status: .init(stall: .buffering, ready: true, waitForMe: false)),
        ], activity: Activity(url: "/films/night.mkv"), policy: RoomPolicy(playWhenReady: true, waitTimeout: 7.5))),
        .timeReply(id: 7, t1: 1, t2: 2.5, t3: 2.5001),
        .applied(timeline: timeline, notice: Notice(actor: "bob", action: .seek, position: 90, from: 12, to: 90), actionID: 3),
        .applied(timeline: timeline, notice: nil, actionID: nil),
        .notice(Notice(actor: "carol", action: .join)),
        .applied(
            timeline: timeline, notice: Notice(actor: "dave", action: .open, title: "Second film"), actionID: nil,
            activity: Activity(id: 2, url: "https://example.org/2.mkv", title: "Second film", openedBy: "dave")),
        .notice(Notice(actor: "bob", action: .waiting, others: ["bob", "carol"], detail: "buffering")),
        .notice(Notice(actor: "bob", action: .continued, others: ["bob"], detail: "not ready")),
        .notice(Notice(actor: "bob", action: .mismatch, others: ["alice"], detail: "duration 1:00:00 vs 1:15:00")),
        .notice(Notice(actor: "erin", action: .ready)),
        .ended(by: "alice"),
        .participants([ParticipantInfo(name: "dave", state: "joined", drift: nil, rtt: 0.5)]),
        .error(code: "name-taken", message: "a participant named bob is already in room r"),
        .challenge(.init(protocolVersion: 3, features: ["roles"], nonce: String(repeating: "cd", count: 32), access: .open)),
        .challenge(.init(nonce: String(repeating: "cd", count: 32), access: .new)),
        .challenge(.init(nonce: String(repeating: "cd", count: 32), access: .secret(salt: String(repeating: "ee", count: 16)))),
        .refused(actionID: 4, code: "not-permitted", message: "in this managed room only the owner and operators may pause"),
        .refused(actionID: nil, code: "rate-limited", message: "too many actions; wait a moment"),
        .refused(actionID: 7, code: "invalid-argument", message: "nobody named carol is in the room"),
        .done(id: 7),
        .done(id: 0),
        .done(id: wireMaxRequestID),
        .unsupported(type: "kick"),
        .unknown(type: "journal_add"),
        .welcome(.init(
            name: "bob", room: "r", timeline: timeline, participants: [ParticipantInfo(name: "bob", state: "joined", role: .operator)],
            activity: Activity(url: "https://example.org/a.mkv"), policy: RoomPolicy(managed: true),
            token: "00112233445566778899aabbccddeeff.00112233445566778899aabbccddeeff", role: .operator,
            proof: String(repeating: "ab", count: 32))),
        .notice(Notice(actor: "alice", action: .op, others: ["bob"])),
        .notice(Notice(actor: "alice", action: .kick, others: ["mallory"])),
        .attachmentAdded(Attachment(id: String(repeating: "12", count: 32), name: "night.srt", size: 4096, from: "bob"), history: false),
        .attachmentAdded(
            Attachment(id: String(repeating: "34", count: 32), name: "notes", size: 0, from: "carol", meta: ["kind": "notes", "n": 1]),
            history: true),
        .attachmentRemoved(id: String(repeating: "12", count: 32), by: "alice", requestID: 9),
        .attachmentRemoved(id: String(repeating: "12", count: 32), by: "alice", requestID: nil),
        .transferReady(offset: 0, size: 104_857_600),
        .transferReady(offset: 1000, size: 1000),
        .transferDone(Attachment(id: String(repeating: "56", count: 32), name: "a.ass", size: 1, from: "dave")),
        .redirect(room: "movie-night", to: Endpoint(host: "cw2.example.org", port: 7433)),
        .redirect(room: "r", to: Endpoint(host: "2001:db8::7", port: 1)),
        .error(code: "room-elsewhere", message: "room r is hosted by 10.0.0.2:7433, another server of this cluster"),
    ]

    @Test("client messages round-trip", arguments: clientMessages)
    func clientRoundTrip(message: ClientMessage) throws {
        let line = message.encoded()
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(try ClientMessage.decode(line: line.dropLast()) == message)
    }

    @Test("server messages round-trip", arguments: serverMessages)
    func serverRoundTrip(message: ServerMessage) throws {
        #expect(try ServerMessage.decode(line: message.encoded().dropLast()) == message)
    }

    @Test("every message survives byte-at-a-time framing (the playlist's too)")
    func byteAtATime() throws {
        let clients = Self.clientMessages + PlaylistWireTests.clientMessages + StreamWireTests.clientMessages
        let servers = Self.serverMessages + PlaylistWireTests.serverMessages + StreamWireTests.serverMessages
        var framer = LineFramer(maxLineBytes: wireMaxLineBytes)
        var lines: [[UInt8]] = []
        let stream = clients.flatMap { $0.encoded() } + servers.flatMap { $0.encoded() }
        for byte in stream {
            for case .line(let line) in framer.feed([byte]) { lines.append(line) }
        }
        #expect(lines.count == clients.count + servers.count)
        for (line, message) in zip(lines, clients) { #expect(try ClientMessage.decode(line: line) == message) }
        for (line, message) in zip(lines.dropFirst(clients.count), servers) {
            #expect(try ServerMessage.decode(line: line) == message)
        }
    }

    static let badClientLines: [String] = [
        "", "not json", "[]", "42", "{}", #"{"type":7}"#, #"{"type":"Launch"}"#, #"{"type":"la\u0085unch"}"#,
        #"{"type":"hello","protocol":1,"room":"r"}"#,
        #"{"type":"hello","protocol":1,"room":"r","name":"a b"}"#,
        #"{"type":"hello","protocol":1,"room":"r","name":"\#(String(repeating: "x", count: 33))"}"#,
        #"{"type":"hello","protocol":1,"room":"\#(String(repeating: "r", count: 65))","name":"a"}"#,
        #"{"type":"hello","protocol":1.5,"room":"r","name":"a"}"#,
        #"{"type":"hello","protocol":3,"versions":[3],"room":"r","name":"a"}"#,
        #"{"type":"hello","protocol":3,"versions":[4,3],"room":"r","name":"a"}"#,
        #"{"type":"hello","protocol":3,"room":"r","name":"a","nonce":"XYZ"}"#,
        #"{"type":"hello","protocol":3,"room":"r","name":"a","features":["ok","Not Ok"]}"#,
        // Journal: names are file names, sizes and offsets bounded, ids are SHA-256 hex.
        #"{"type":"detach","id":1,"attachment":"abc"}"#,
        #"{"type":"transfer","room":"r","name":"a","token":"ab.cd","kind":"upload","id":"\#(String(repeating: "0", count: 64))","size":10,"file":"../etc/passwd"}"#,
        #"{"type":"transfer","room":"r","name":"a","token":"ab.cd","kind":"upload","id":"\#(String(repeating: "0", count: 64))","size":10,"file":".hidden"}"#,
        #"{"type":"transfer","room":"r","name":"a","token":"ab.cd","kind":"upload","id":"\#(String(repeating: "0", count: 64))","size":10,"file":"a\u0000b"}"#,
        #"{"type":"transfer","room":"r","name":"a","token":"ab.cd","kind":"upload","id":"\#(String(repeating: "0", count: 64))","size":104857601,"file":"a"}"#,
        #"{"type":"transfer","room":"r","name":"a","token":"ab.cd","kind":"upload","id":"\#(String(repeating: "0", count: 64))","size":-1,"file":"a"}"#,
        #"{"type":"transfer","room":"r","name":"a","token":"ab.cd","kind":"upload","id":"\#(String(repeating: "0", count: 64))","file":"a"}"#,
        #"{"type":"transfer","room":"r","name":"a","token":"ab.cd","kind":"download","id":"\#(String(repeating: "0", count: 64))","offset":1e300}"#,
        #"{"type":"transfer","room":"r","name":"a","token":"ab.cd","kind":"upload","id":"\#(String(repeating: "0", count: 64))","size":1,"file":"a","meta":[1]}"#,
        #"{"type":"transfer","room":"r","name":"a","token":"ab.cd","kind":"steal","id":"\#(String(repeating: "0", count: 64))"}"#,
        #"{"type":"hello","protocol":3,"room":"r","name":"a","token":"not a token"}"#,
        #"{"type":"action","id":1,"kind":"open","activity":{"url":"http://evil/\u0085x"}}"#,
        #"{"type":"action","id":1,"kind":"open","activity":{"url":"http://evil/\u009bx"}}"#,
        #"{"type":"auth","proof":"00"}"#,
        #"{"type":"auth","create":{"salt":"00","key":"11"}}"#,
        #"{"type":"role","name":"bob","role":"owner2"}"#,
        #"{"type":"kick","name":"a b"}"#,
        // request-ids: whole numbers 0...2^31-1, nothing else.
        #"{"type":"end","id":2147483648}"#,
        #"{"type":"end","id":-1}"#,
        #"{"type":"end","id":1.5}"#,
        #"{"type":"end","id":"7"}"#,
        #"{"type":"end","id":1e300}"#,
        #"{"type":"role","name":"bob","role":"operator","id":9007199254740993}"#,
        #"{"type":"kick","name":"bob","id":true}"#,
        #"{"type":"unsupported","of":"A B"}"#,
        #"{"type":"time_request","id":-1,"t1":0}"#,
        #"{"type":"time_request","id":1,"t1":1e300}"#,
        #"{"type":"time_request","id":1,"t1":"soon"}"#,
        #"{"type":"action","id":1,"kind":"dance"}"#,
        #"{"type":"action","id":1,"kind":"pause"}"#,
        #"{"type":"action","id":1,"kind":"seek","position":-3}"#,
        #"{"type":"action","id":1,"kind":"speed"}"#,
        #"{"type":"action","id":1,"kind":"speed","rate":1000}"#,
        #"{"type":"action","id":1,"kind":"speed","rate":0}"#,
        #"{"type":"ready","seq":"x"}"#,
        #"{"type":"report","rtt":-1}"#,
        #"{"type":"report","drift":1e99}"#,
        #"{"type":"action","id":1,"kind":"open"}"#,
        #"{"type":"action","id":1,"kind":"open","activity":{"url":""}}"#,
        #"{"type":"action","id":1,"kind":"open","activity":{"url":"a\nb"}}"#,
        #"{"type":"action","id":1,"kind":"open","activity":{"url":"x","type":"dance"}}"#,
        #"{"type":"status"}"#,
        #"{"type":"status","status":{"stall":"napping"}}"#,
        #"{"type":"status","status":{"ready":"yes"}}"#,
        #"{"type":"media","activity":1,"media":{"hash":"XYZ"}}"#,
        #"{"type":"media","activity":1,"media":{"size":-4}}"#,
        #"{"type":"media","media":{}}"#,
        #"{"type":"hello","protocol":2,"room":"r","name":"a","activity":{"title":"no url"}}"#,
        #"{"type":"chat","id":1,"text":""}"#,
        #"{"type":"chat","id":1,"text":"bell\u0007"}"#,
        #"{"type":"chat","id":1,"text":"csi\u009b"}"#,
        #"{"type":"chat","text":"no id"}"#,
        #"{"type":"chat","id":1,"text":"\#(String(repeating: "x", count: 1001))"}"#,
        #"{"type":"message","id":1,"topic":"Bad Topic","payload":"{}","reliable":true}"#,
        #"{"type":"message","id":1,"topic":"t","reliable":true}"#,
        #"{"type":"message","id":1,"topic":"t","payload":{"raw":"object"},"reliable":true}"#,
        #"{"type":"message","id":1,"topic":"t","payload":"{}"}"#,
        #"{"type":"message","id":1,"topic":"t","payload":"{}","reliable":true,"to":["a b"]}"#,
        #"{"type":"message","id":1,"topic":"t","payload":"\#(String(repeating: "x", count: 65_537))","reliable":false}"#,
    ]

    @Test("malformed client lines are protocol violations", arguments: badClientLines)
    func badClient(line: String) {
        #expect(throws: CowatchError(.protocolViolation, "")) { try ClientMessage.decode(line: Array(line.utf8)) }
    }

    static let badServerLines: [String] = [
        #"{"type":"message","id":1,"topic":"t","payload":"{}","reliable":true}"#,
        #"{"type":"chat","from":"a","text":"\u001b[31mred"}"#,
        #"{"type":"message_ack","id":1,"delivered":["a b"]}"#,
        #"{"type":"applied"}"#,
        #"{"type":"applied","timeline":{"seq":1,"position":0,"reference":0,"rate":1,"playing":"yes","holding":false}}"#,
        #"{"type":"applied","timeline":{"seq":1,"position":0,"reference":0,"rate":-1,"playing":true,"holding":false}}"#,
        #"{"type":"welcome","protocol":1,"name":"a","room":"r","timeline":{}}"#,
        #"{"type":"notice","notice":{"actor":"a","action":"explode"}}"#,
        #"{"type":"participants","participants":[{"state":"joined"}]}"#,
        #"{"type":"time_reply","id":1,"t1":0,"t2":0}"#,
        #"{"type":"ended"}"#,
        #"{"type":"done"}"#,
        #"{"type":"done","id":2147483648}"#,
        #"{"type":"done","id":-3}"#,
        #"{"type":"notice","notice":{"actor":"a","action":"open","title":"evil\u001b[2J"}}"#,
        #"{"type":"participants","participants":[{"name":"a","state":"x\u0007"}]}"#,
        #"{"type":"ended","by":"a b"}"#,
        #"{"type":"notice","notice":{"actor":"a","action":"waiting","others":["ok","not ok"]}}"#,
        #"{"type":"welcome","protocol":2,"name":"a","room":"r","timeline":{"seq":1,"position":0,"reference":0,"rate":1,"playing":true,"holding":false},"participants":[]}"#,
        #"{"type":"challenge","protocol":3,"nonce":"00","access":{"kind":"open"}}"#,
        #"{"type":"challenge","protocol":3,"nonce":"\#(String(repeating: "0", count: 64))","access":{"kind":"secret","salt":"zz"}}"#,
        #"{"type":"challenge","protocol":3,"nonce":"\#(String(repeating: "0", count: 64))","access":{"kind":"maybe"}}"#,
        #"{"type":"refused","code":"x","message":"evil\u009b"}"#,
        #"{"type":"notice","notice":{"actor":"a","action":"open","title":"evil\u0085"}}"#,
        #"{"type":"redirect","room":"r","host":"evil host","port":7433}"#,
        #"{"type":"redirect","room":"r","host":"h/../x","port":7433}"#,
        #"{"type":"redirect","room":"r","host":"h","port":0}"#,
        #"{"type":"redirect","room":"r","host":"h","port":70000}"#,
        #"{"type":"redirect","room":"r","port":7433}"#,
        #"{"type":"redirect","host":"h","port":7433}"#,
        #"{"type":"redirect","room":"r","host":"\#(String(repeating: "a", count: 254))","port":1}"#,
    ]

    @Test("unknown message types decode as unknown, so they can be answered with unsupported")
    func unknownTypes() throws {
        #expect(try ClientMessage.decode(line: Array(#"{"type":"sticker","text":"hi"}"#.utf8)) == .unknown(type: "sticker"))
        #expect(try ServerMessage.decode(line: Array(#"{"type":"journal","x":[1]}"#.utf8)) == .unknown(type: "journal"))
    }

    @Test("a protocol-2 hello reads as versions 2...2")
    func protocolTwoHello() throws {
        let line = #"{"type":"hello","protocol":2,"room":"r","name":"a","auth":{"scheme":"none"}}"#
        guard case .hello(let hello) = try ClientMessage.decode(line: Array(line.utf8)) else {
            Issue.record("not a hello")
            return
        }
        #expect(hello.versions == 2...2)
    }

    @Test("malformed server lines are protocol violations", arguments: badServerLines)
    func badServer(line: String) {
        #expect(throws: CowatchError(.protocolViolation, "")) { try ServerMessage.decode(line: Array(line.utf8)) }
    }

    @Test("an over-long line is refused before parsing")
    func overlong() {
        let line = Array(#"{"type":"bye","pad":""#.utf8) + [UInt8](repeating: 0x61, count: wireMaxLineBytes) + Array(#""}"#.utf8)
        #expect(throws: CowatchError(.protocolViolation, "")) { try ClientMessage.decode(line: line) }
    }

    @Test("random bytes never crash the decoders (fuzz regression)", arguments: [1, 2, 3, 4, 5] as [UInt64])
    func fuzz(seed: UInt64) {
        var rng = SeededRandom(seed: seed)
        let alphabet = Array(#"{}[]":,.-+0123456789eEtrufalsnybdpchoiqm \#n"#.utf8)
        for _ in 0..<500 {
            let length = Int(rng.next() % 120)
            var bytes: [UInt8] = (0..<length).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            if rng.next() % 3 == 0 { bytes = Array(#"{"type":"action","id":1,"kind":"seek","position":"#.utf8) + bytes }
            _ = try? ClientMessage.decode(line: bytes)
            _ = try? ServerMessage.decode(line: bytes)
        }
    }

    @Test("notice sentences say who did what")
    func sentences() {
        #expect(Notice(actor: "bob", action: .pause, position: 2530).text == "bob paused at 0:42:10")
        #expect(Notice(actor: "carol", action: .seek, position: 60, from: 3, to: 60).text == "carol jumped from 0:00:03 to 0:01:00")
        #expect(Notice(actor: "alice", action: .speed, rate: 1.25).text == "alice set the speed to 1.25×")
        #expect(Notice(actor: "dave", action: .join).text == "dave joined")
        #expect(Notice(actor: "bob", action: .waiting, others: ["bob"], detail: "buffering").text == "waiting for bob (buffering)")
        #expect(Notice(actor: "bob", action: .waiting, others: ["bob", "carol", "dave"]).text == "waiting for bob, carol and dave")
        #expect(Notice(actor: "bob", action: .continued, others: ["bob"]).text == "continuing without bob")
        #expect(Notice(actor: "erin", action: .open, title: "Night").text == "erin switched to Night")
        #expect(Notice(actor: "alice", action: .end).text == "alice ended the activity for everyone")
        #expect(Notice(actor: "bob", action: .mismatch, others: ["alice"], detail: "size 1 vs 2 bytes").text
            == "bob has a different file than alice: size 1 vs 2 bytes")
    }

    @Test("media comparison names what differs, within tolerance")
    func mediaDifferences() {
        let mine = MediaInfo(duration: 5400, size: 100, hash: "aa")
        #expect(mine.differences(from: MediaInfo(duration: 5400.6, size: 100, hash: "aa")).isEmpty)
        #expect(mine.differences(from: MediaInfo(duration: 5000)) == ["duration 1:30:00 vs 1:23:20"])
        #expect(mine.differences(from: MediaInfo(duration: 5400, size: 101)) == ["size 100 bytes vs 101 bytes"])
        #expect(mine.differences(from: MediaInfo(size: 100, hash: "bb")) == ["different content"])
        #expect(mine.differences(from: MediaInfo()).isEmpty)  // a stream: nothing to compare but what is known
    }

    @Test("the media fingerprint is FNV-1a 64 and local paths are recognised")
    func fingerprint() {
        #expect(MediaFingerprint.digest([]) == "cbf29ce484222325")
        #expect(MediaFingerprint.digest(Array("a".utf8)) == "af63dc4c8601ec8c")
        #expect(MediaFingerprint.digest([1, 2, 3]) != MediaFingerprint.digest([1, 2, 4]))
        #expect(MediaFingerprint.localPath(of: "/a/b.mkv") == "/a/b.mkv")
        #expect(MediaFingerprint.localPath(of: "file:///a/my%20film.mkv") == "/a/my film.mkv")
        #expect(MediaFingerprint.localPath(of: "https://host/b.mkv") == nil)
        #expect(MediaFingerprint.localPath(of: "b.mkv") == "b.mkv")
    }
}
