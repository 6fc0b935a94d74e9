import Testing

@testable import CowatchCore

@Suite("Control events: one codec, today's JSON")
struct ControlEventCodecTests {
    static let status = PlayerStatus(
        position: 42.5, paused: false, speed: 1.25, duration: 600, media: "/m/film.mkv", title: "Film", name: "alice",
        eof: false)

    /// Every kind of event (and the variants whose wire form differs), with the JSON the daemon
    /// wrote before the events were typed: a client reading the control socket sees no change.
    static let golden: [(ControlEvent, String)] = [
        (
            .state(status),
            #"{"duration":600,"eof":false,"event":"state","media":"/m/film.mkv","name":"alice","paused":false,"position":42.5,"protocol_version":"\#(controlProtocolVersion)","speed":1.25,"title":"Film"}"#
        ),
        (
            .state(PlayerStatus(position: nil, paused: true, speed: 1, duration: nil, media: "", title: nil, name: "b", eof: true)),
            #"{"duration":null,"eof":true,"event":"state","media":"","name":"b","paused":true,"position":null,"protocol_version":"\#(controlProtocolVersion)","speed":1,"title":null}"#
        ),
        (.endOfFile(position: 600), #"{"event":"end-of-file","position":600}"#),
        (.endOfFile(position: nil), #"{"event":"end-of-file","position":null}"#),
        (.error(CowatchError(.mediaUnavailable, "no such file")), #"{"code":"media-unavailable","event":"error","message":"no such file"}"#),
        (
            .notice(Notice(actor: "bob", action: .seek, position: 90, from: 10, to: 90)),
            #"{"action":"seek","event":"notice","from":10,"participant":"bob","position":90,"text":"bob jumped from 0:00:10 to 0:01:30","to":90}"#
        ),
        (
            .notice(Notice(actor: "bob", action: .speed, rate: 1.5)),
            #"{"action":"speed","event":"notice","participant":"bob","rate":1.5,"text":"bob set the speed to 1.50×"}"#
        ),
        (
            .notice(Notice(actor: "cat", action: .waiting, others: ["dan", "eve"], detail: "buffering")),
            #"{"action":"waiting","detail":"buffering","event":"notice","others":["dan","eve"],"participant":"cat","text":"waiting for dan and eve (buffering)"}"#
        ),
        (
            .notice(Notice(actor: "ann", action: .open, title: "Second")),
            #"{"action":"open","event":"notice","participant":"ann","text":"ann switched to Second","title":"Second"}"#
        ),
        (.session(.waiting), #"{"event":"session","state":"waiting"}"#),
        (.session(.joined), #"{"event":"session","state":"joined"}"#),
        (.session(.invalidated(.left)), #"{"event":"session","reason":"left","state":"invalidated"}"#),
        (.session(.invalidated(.serverGone)), #"{"event":"session","reason":"server-gone","state":"invalidated"}"#),
        (.session(.invalidated(.endedBy("alice"))), #"{"by":"alice","event":"session","reason":"ended-by","state":"invalidated"}"#),
        (.session(.invalidated(.removed(.kicked))), #"{"code":"kicked","event":"session","reason":"removed","state":"invalidated"}"#),
        (.session(.invalidated(.refused(.nameTaken))), #"{"event":"session","reason":"name-taken","state":"invalidated"}"#),
        (
            .openOffer(OpenOffer(id: 3, url: "https://example.org/b.mkv", title: "B", by: "bob")),
            #"{"by":"bob","event":"open-offer","id":3,"title":"B","url":"https://example.org/b.mkv"}"#
        ),
        (.chat(ChatLine(from: "bob", text: "hi \"all\"", history: true)), #"{"event":"chat","history":true,"participant":"bob","text":"hi \"all\""}"#),
        (
            .message(ReceivedMessage(participant: "bob", topic: "game", payload: ["move": 3], reliable: false)),
            #"{"event":"message","participant":"bob","payload":{"move":3},"reliable":false,"topic":"game"}"#
        ),
        (
            .attachmentAdded(Attachment(id: "ab12", name: "night.srt", size: 2048, from: "bob", meta: ["kind": "subtitles"]), history: false),
            #"{"event":"attachment-added","history":false,"id":"ab12","meta":{"kind":"subtitles"},"name":"night.srt","participant":"bob","size":2048,"subtitles":true}"#
        ),
        (
            .attachmentAdded(Attachment(id: "cd34", name: "notes.txt", size: 0, from: "ann"), history: true),
            #"{"event":"attachment-added","history":true,"id":"cd34","meta":null,"name":"notes.txt","participant":"ann","size":0,"subtitles":false}"#
        ),
        (
            .attachmentRemoved(AttachmentRemoval(id: "ab12", participant: "bob", name: "night.srt")),
            #"{"event":"attachment-removed","id":"ab12","name":"night.srt","participant":"bob"}"#
        ),
        (.attachmentRemoved(AttachmentRemoval(id: "ab12", participant: "bob", name: nil)), #"{"event":"attachment-removed","id":"ab12","name":null,"participant":"bob"}"#),
        (
            .attachmentProgress(TransferProgress(id: "ab12", name: "a.mkv", direction: .download, done: 512, total: 1024, resumedFrom: 256, stage: .running)),
            #"{"direction":"download","done":512,"event":"attachment-progress","id":"ab12","name":"a.mkv","resumed_from":256,"state":"running","total":1024}"#
        ),
        (
            .attachmentProgress(TransferProgress(id: "ab12", name: "a.mkv", direction: .upload, done: 9, total: 9, resumedFrom: 0, stage: .done)),
            #"{"direction":"upload","done":9,"event":"attachment-progress","id":"ab12","name":"a.mkv","resumed_from":0,"state":"done","total":9}"#
        ),
        (
            .attachmentProgress(
                TransferProgress(id: "ab12", name: "a.mkv", direction: .upload, done: 3, total: 9, resumedFrom: 0, stage: .failed(CowatchError(.ioError, "link lost")))),
            #"{"code":"io-error","direction":"upload","done":3,"event":"attachment-progress","id":"ab12","message":"link lost","name":"a.mkv","resumed_from":0,"state":"failed","total":9}"#
        ),
        (.unknown(name: "fireworks", fields: ["colour": "green", "n": 3]), #"{"colour":"green","event":"fireworks","n":3}"#),
    ] + PlaylistControlTests.eventGolden

    static var events: [ControlEvent] { golden.map(\.0) }

    @Test("each event encodes to exactly the JSON of the control protocol", arguments: golden)
    func encodesAsBefore(event: ControlEvent, expected: String) {
        #expect(event.json.jsonString == expected)
    }

    @Test("the golden list holds every kind of event")
    func everyKindCovered() {
        let covered = Set(Self.events.compactMap(\.kind))
        #expect(covered == Set(ControlEvent.Kind.allCases), "missing: \(Set(ControlEvent.Kind.allCases).subtracting(covered))")
    }

    @Test("every event round-trips through its line", arguments: events)
    func roundTrip(event: ControlEvent) throws {
        let decoded = try ControlEvent(line: event.json.encoded())
        #expect(decoded == event)
        // CowatchError compares codes only: the bytes say the messages survived too.
        #expect(decoded.json.encoded() == event.json.encoded())
        #expect(decoded.name == event.name)
    }

    @Test("every event round-trips when its line arrives a byte at a time", arguments: events)
    func byteAtATime(event: ControlEvent) throws {
        var framer = LineFramer(maxLineBytes: controlMaxLineBytes)
        var items: [LineFramer.Item] = []
        for byte in event.json.encoded() + [UInt8(ascii: "\n")] { items += framer.feed([byte]) }
        #expect(items.count == 1)
        guard case .line(let line) = items.first else {
            Issue.record("no line for \(event.name)")
            return
        }
        #expect(try ControlEvent(line: line) == event)
    }

    @Test("name and fields are the wire view of a typed event")
    func wireView() {
        let event = ControlEvent.notice(Notice(actor: "bob", action: .pause, position: 30))
        #expect(event.name == "notice")
        #expect(event.fields["action"] == "pause")
        #expect(event.fields["text"] == "bob paused at 0:00:30")
        #expect(event.fields["event"] == nil)
    }

    @Test("an event name this version does not know, or a notice action, reads as unknown")
    func unknownSurvives() throws {
        let later = try ControlEvent(line: Array(#"{"event":"playlist-changed","items":[1,2]}"#.utf8))
        #expect(later == .unknown(name: "playlist-changed", fields: ["items": [1, 2]]))
        let notice = try ControlEvent(line: Array(#"{"event":"notice","participant":"bob","action":"shuffle","text":"bob shuffled"}"#.utf8))
        #expect(notice == .unknown(name: "notice", fields: ["participant": "bob", "action": "shuffle", "text": "bob shuffled"]))
        #expect(notice.kind == nil)
    }

    @Test("fields a newer daemon adds are ignored")
    func extraFieldsIgnored() throws {
        let event = try ControlEvent(line: Array(#"{"event":"chat","participant":"a","text":"t","history":false,"colour":"red"}"#.utf8))
        #expect(event == .chat(ChatLine(from: "a", text: "t")))
    }

    static let hostile: [String] = [
        #"[1,2]"#, #""state""#, #"null"#, #"{}"#, #"{"event":3}"#, #"{"event":null}"#,
        #"{"event":"state","paused":"yes","name":"a"}"#, #"{"event":"state","paused":true}"#,
        #"{"event":"state","paused":true,"name":"a","room":[]}"#, #"{"event":"state","paused":true,"name":"a","speed":"fast"}"#,
        #"{"event":"end-of-file","position":"the end"}"#, #"{"event":"error","message":"no code"}"#,
        #"{"event":"notice","action":"pause"}"#, #"{"event":"notice","participant":"b","action":7}"#,
        #"{"event":"notice","participant":"b","action":"waiting","others":[1,2]}"#,
        #"{"event":"session","state":"exploded"}"#, #"{"event":"session","state":"invalidated"}"#,
        #"{"event":"session","state":"invalidated","reason":"ended-by"}"#, #"{"event":"open-offer","id":1e300,"url":"u","title":"t"}"#,
        #"{"event":"open-offer","id":1.5,"url":"u","title":"t"}"#, #"{"event":"chat","participant":"a","text":5}"#,
        #"{"event":"message","participant":"a","payload":1}"#,
        #"{"event":"attachment-added","id":"x","name":"n","size":-1e20,"participant":"p"}"#,
        #"{"event":"attachment-added","id":"x","name":"n","size":"big","participant":"p"}"#,
        #"{"event":"attachment-removed","participant":"p"}"#,
        #"{"event":"attachment-progress","id":"x","name":"n","direction":"sideways","done":1,"total":2,"state":"running"}"#,
        #"{"event":"attachment-progress","id":"x","name":"n","direction":"upload","done":1,"total":2,"state":"failed"}"#,
        #"{"event":"attachment-progress","id":"x","name":"n","direction":"upload","done":1,"total":1e19,"state":"done"}"#,
    ]

    @Test("hostile events are refused with malformed-control-message", arguments: hostile)
    func hostileRefused(line: String) {
        #expect(throws: CowatchError(.malformedControlMessage, "")) { try ControlEvent(line: Array(line.utf8)) }
    }

    @Test("a line that is not JSON is invalid-json")
    func notJSON() {
        #expect(throws: CowatchError(.invalidJSON, "")) { try ControlEvent(line: Array(#"{"event":"state""#.utf8)) }
    }

    /// Every field of every event replaced by each wrong value: it decodes or is refused cleanly.
    @Test("any field of any event replaced by a wrong value never traps", arguments: events)
    func fieldsReplaced(event: ControlEvent) {
        let wrong: [JSONValue] = [
            .null, true, "text", -1e300, 1e300, 0.5, -0.0, [], [1, "a"], [:], ["nested": [:]], .string(String(repeating: "x", count: 100_000)),
        ]
        for key in event.json.objectValue?.keys.sorted() ?? [] where key != "event" {
            for value in wrong {
                var object = event.json.objectValue ?? [:]
                object[key] = value
                do {
                    _ = try ControlEvent(json: .object(object))
                } catch {
                    #expect(error.code == .malformedControlMessage, "\(event.name).\(key) = \(value.jsonString.prefix(40)): \(error)")
                }
            }
        }
    }
}
