import CowatchTestSupport
import Testing

@testable import CowatchCore

/// The hand-written encoder and the flat-object reader must be invisible on the wire: the same
/// bytes as the generic encoder, the same values (or the same refusal) as the generic parser.
@Suite("Wire fast paths: byte-compatible with the generic codec")
struct WireFastPathTests {
    @Test("the fixed server messages encode to the generic encoder's bytes", arguments: WireProtocolTests.serverMessages)
    func fixedMessages(message: ServerMessage) {
        #expect(message.encoded() == message.genericEncoded())
    }

    /// Awkward strings: escapes, control characters, slashes, non-ASCII, emoji.
    static let strings = [
        "", "a", "bob", "with space", "quote\"d", "back\\slash", "sl/ash", "tab\there", "new\nline", "cr\rlf", "\u{1}\u{1f}\u{7f}",
        "\u{8}\u{c}", "ça va", "日本語", "🎬 film", "</script>", "a\"b\\c/d\ne",
    ]

    /// Awkward numbers: integers, big and small fractions, exponents, negative zero, limits.
    static let numbers: [Double] = [
        0, -0.0, 1, -1, 0.5, 1e-7, 1.5e-5, 123.456789, 1234.5678, 1e7, 9.0e15, 9.0e15 - 1, 1e16, 1e21, 1e22, 1e-300,
        -123456.000001, 0.1 + 0.2, 3_600, 86_400.25, Double.ulpOfOne, 1_700_000_000.123456,
    ]

    @Test("random timelines, notices and participant lists encode to the generic encoder's bytes")
    func randomMessages() {
        var random = SeededRandom(seed: 11)
        func number() -> Double {
            let pick = Int(random.next() % 3)
            if pick == 0 { return Self.numbers[Int(random.next() % UInt64(Self.numbers.count))] }
            if pick == 1 { return random.uniform(-1e6, 1e6) }
            return Double(Int(random.next() % 100_000))
        }
        func text() -> String { Self.strings[Int(random.next() % UInt64(Self.strings.count))] }
        func maybe<T>(_ make: () -> T) -> T? { random.next() % 2 == 0 ? make() : nil }
        for _ in 0..<400 {
            let timeline = GroupTimeline(
                seq: Int(random.next() % 1_000_000), position: number(), reference: number(), rate: random.uniform(0.25, 4),
                playing: random.next() % 2 == 0, holding: random.next() % 2 == 0)
            let notice = Notice(
                actor: text(), action: NoticeAction.allCases[Int(random.next() % UInt64(NoticeAction.allCases.count))],
                position: maybe(number), from: maybe(number), to: maybe(number), rate: maybe(number),
                others: maybe { [text(), text()] }, detail: maybe(text), title: maybe(text))
            let activity = Activity(
                id: Int(random.next() % 100), url: text(), title: maybe(text), type: random.next() % 2 == 0 ? .watch : .listen,
                fallbackURL: maybe(text), openedBy: maybe(text))
            let participants = (0..<Int(random.next() % 12)).map { _ in
                ParticipantInfo(
                    name: text(), state: text(), drift: maybe(number), rtt: maybe(number),
                    status: ParticipantStatus(
                        stall: maybe { StallReason.allCases[Int(random.next() % 3)] }, ready: random.next() % 2 == 0,
                        waitForMe: random.next() % 2 == 0),
                    role: Role.allCases[Int(random.next() % UInt64(Role.allCases.count))],
                    stream: maybe {
                        StreamReport(from: text(), aheadBytes: Int(random.next() % 1_000_000_000), aheadSeconds: maybe(number), rate: number())
                    })
            }
            let messages: [ServerMessage] = [
                .timeReply(id: Int(random.next() % 1_000_000), t1: number(), t2: number(), t3: number()),
                .applied(timeline: timeline, notice: maybe { notice }, actionID: maybe { Int(random.next() % 1000) }, activity: maybe { activity }),
                .notice(notice),
                .participants(participants),
            ]
            for message in messages {
                #expect(message.encoded() == message.genericEncoded(), "\(message)")
            }
        }
    }

    @Test("a non-finite number takes the generic path (which writes the same line as before)")
    func nonFinite() {
        let message = ServerMessage.timeReply(id: 1, t1: .nan, t2: 1, t3: 2)
        #expect(message.encoded() == message.genericEncoded())
    }

    /// Lines the flat reader must read exactly as the generic parser does, or leave to it.
    static let lines: [String] = [
        #"{"id":7,"t1":123.456789,"type":"time_request"}"#, #"{"type":"report","drift":-0.0004,"rtt":0.0012}"#,
        #"{ "type" : "ready" , "seq" : 9 }"#, #"{}"#, #"{"a":null,"b":true,"c":false}"#, #"{"a":-0,"b":0.5e-3,"c":1E+2,"d":-12.5E2}"#,
        #"{"s":"esc \" \\ \/ \n \r \t \b \f"}"#, #"{"s":"ça va 🎬"}"#, #"{"u":"\u00e9"}"#, #"{"nested":{"a":1}}"#, #"{"list":[1,2]}"#,
        #"{"dup":1,"dup":2}"#, #"{"a":01}"#, #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":+1}"#, #"{"a":1e}"#, #"{"a":1e400}"#, #"{"a":NaN}"#,
        #"{"a":tru}"#, #"{"a":1,}"#, #"{"a" 1}"#, #"{"a":1} x"#, #"{"a":"unterminated}"#, "{\"a\":\"raw\ttab\"}", #"[1]"#, #"  {"a":1}  "#,
        #"{"a":"\x"}"#, #"{"a":123456789012345678901234567890123}"#, #"{"a":1}{"b":2}"#, "{\"a\":\"\u{7f}\"}",
    ]

    @Test("the flat reader agrees with the generic parser, or defers to it", arguments: lines)
    func flatReader(line: String) {
        let bytes = Array(line.utf8)
        guard let fast = FlatJSONObject.parse(bytes) else { return }  // deferred: the generic path decides
        let generic = try? JSONValue.parse(bytes)
        #expect(generic?.objectValue == fast, "\(line)")
    }

    @Test("the flat reader takes the frequent lines itself")
    func flatReaderTakesFrequentLines() {
        for message in [ClientMessage.timeRequest(id: 7, t1: 123.456789), .report(drift: -0.0004, rtt: 0.0012), .ready(seq: 3),
            .action(.init(id: 2, kind: .pause, position: 42.04, deadline: 99.5))]
        {
            #expect(FlatJSONObject.parse(message.encoded().dropLast()) != nil, "\(message)")
        }
        #expect(FlatJSONObject.parse(Array(#"{"u":"\u00e9"}"#.utf8)) == nil)
        #expect(FlatJSONObject.parse(Array(#"{"dup":1,"dup":2}"#.utf8)) == nil)
        #expect(FlatJSONObject.parse([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D]) == nil)  // invalid UTF-8
    }

    @Test("random flat objects read the same both ways")
    func randomFlatObjects() {
        var random = SeededRandom(seed: 5)
        for _ in 0..<300 {
            var fields: [String] = []
            for index in 0..<Int(random.next() % 6) {
                let value: String
                switch random.next() % 4 {
                case 0: value = "\(Self.numbers[Int(random.next() % UInt64(Self.numbers.count))])"
                case 1: value = "\(random.uniform(-1e9, 1e9))"
                case 2: value = random.next() % 2 == 0 ? "true" : "null"
                default: value = String(decoding: JSONValue.string(Self.strings[Int(random.next() % UInt64(Self.strings.count))]).encoded(), as: UTF8.self)
                }
                fields.append("\"k\(index)\":\(value)")
            }
            let line = Array(("{" + fields.joined(separator: ",") + "}").utf8)
            let generic = try? JSONValue.parse(line)
            if let fast = FlatJSONObject.parse(line) { #expect(generic?.objectValue == fast, "\(String(decoding: line, as: UTF8.self))") }
        }
    }
}
