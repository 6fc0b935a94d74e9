import CowatchTestSupport
import Testing

@testable import CowatchCore

@Suite("RESP2 codec")
struct RESPTests {
    static let values: [RESPValue] = [
        .simple("OK"),
        .simple(""),
        .error("ERR wrong number of arguments for 'get' command"),
        .integer(0),
        .integer(-1),
        .integer(Int.max),
        .bulk(nil),
        .bulk([]),
        .bulk(Array("127.0.0.1:7433".utf8)),
        .bulk([0, 13, 10, 255, 36, 42]),  // binary, with CRLF and type bytes inside
        .bulk([UInt8](repeating: 0x61, count: 100_000)),
        .array(nil),
        .array([]),
        .array([.bulk(Array("a".utf8)), .integer(3), .bulk(nil), .array([.simple("x"), .error("E")])]),
        .command(["EVAL", "return 1", "1", "cowatch:room:r", "10.0.0.1:7433", "10000"]),
    ]

    @Test("values round-trip", arguments: values)
    func roundTrip(value: RESPValue) throws {
        var parser = RESPParser()
        #expect(try parser.feed(value.encoded()) == [value])
        #expect(parser.pendingBytes == 0)
    }

    @Test("every value survives byte-at-a-time delivery, and several in one chunk")
    func byteAtATime() throws {
        let small = Self.values.filter { $0.encoded().count < 1000 }
        let stream = small.flatMap { $0.encoded() }
        var parser = RESPParser()
        var decoded: [RESPValue] = []
        for byte in stream { decoded += try parser.feed([byte]) }
        #expect(decoded == small)
        var whole = RESPParser()
        #expect(try whole.feed(stream) == small)
    }

    @Test("the wire form is what Redis sends and expects")
    func wireForm() {
        #expect(RESPValue.command(["GET", "k"]).encoded() == Array("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n".utf8))
        #expect(RESPValue.bulk(nil).encoded() == Array("$-1\r\n".utf8))
        #expect(RESPValue.integer(-2).encoded() == Array(":-2\r\n".utf8))
        // A simple string cannot carry a line break: it would split the reply.
        #expect(RESPValue.simple("a\r\nb").encoded() == Array("+a  b\r\n".utf8))
    }

    static let malformed: [String] = [
        "?what\r\n",
        ":12x\r\n",
        ":\r\n",
        "$5\r\nabcdefg\r\n",  // length does not match: no CRLF after 5 bytes
        "$-2\r\n",
        "*-5\r\n",
        "+ok\rX",
        "+ok\n",
        "$999999999\r\n",
        "*99999\r\n",
        "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",  // nested deeper than 4
        "+" + String(repeating: "x", count: 5000) + "\r\n",
        "+" + String(repeating: "x", count: 5000),  // an over-long line that never ends
    ]

    @Test("malformed or oversized replies are protocol violations", arguments: malformed)
    func malformedReplies(text: String) {
        var parser = RESPParser()
        #expect(throws: CowatchError(.protocolViolation, "")) { _ = try parser.feed(Array(text.utf8)) }
    }

    @Test("an incomplete value waits for the rest")
    func partial() throws {
        var parser = RESPParser()
        #expect(try parser.feed(Array("*2\r\n$3\r\nfoo\r\n".utf8)).isEmpty)
        #expect(try parser.feed(Array(":7\r".utf8)).isEmpty)
        #expect(try parser.feed([10]) == [.array([.bulk(Array("foo".utf8)), .integer(7)])])
    }

    @Test("random bytes never crash the parser (fuzz regression)", arguments: [1, 2, 3] as [UInt64])
    func fuzz(seed: UInt64) {
        var rng = SeededRandom(seed: seed)
        let alphabet = Array("+-:$*\r\n0123456789-abc".utf8)
        for _ in 0..<2000 {
            var parser = RESPParser()
            let bytes: [UInt8] = (0..<Int(rng.next() % 40)).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            _ = try? parser.feed(bytes)
        }
    }
}
