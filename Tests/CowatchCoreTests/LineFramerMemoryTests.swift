import CowatchCore
import CowatchTestSupport
import Testing

@Suite("Line framing from memory")
struct LineFramerMemoryTests {
    /// Lines of every kind: empty, CRLF, a lone CR inside, exactly at the limit, over it (with and
    /// without a CR before the newline), and an unfinished tail.
    static func stream(limit: Int) -> [UInt8] {
        var text: [UInt8] = []
        text += Array("hello\n\n\r\nwith crlf\r\nlone\rcr\n".utf8)
        text += [UInt8](repeating: 0x61, count: limit) + [0x0A]
        text += [UInt8](repeating: 0x62, count: limit) + [0x0D, 0x0A]
        text += [UInt8](repeating: 0x63, count: limit + 1) + [0x0A]
        text += Array("after the long one\n".utf8)
        text += [UInt8](repeating: 0x64, count: 3 * limit) + Array("\nlast\nunfinished".utf8)
        return text
    }

    @Test("the in-memory path finds the same lines as the byte-at-a-time path, however the stream is cut", arguments: 1...40)
    func sameAsBytewise(seed: UInt64) {
        let limit = 16
        let bytes = Self.stream(limit: limit)
        var reference = LineFramer(maxLineBytes: limit)
        var expected: [LineFramer.Item] = []
        for byte in bytes { expected += reference.feed([byte]) }

        var random = SeededRandom(seed: seed)
        var framer = LineFramer(maxLineBytes: limit)
        var found: [LineFramer.Item] = []
        var start = 0
        while start < bytes.count {
            let length = min(bytes.count - start, Int(random.next() % 24))
            found += bytes[start..<(start + length)].withUnsafeBytes { framer.feed($0) }
            start += length
        }
        #expect(found == expected)
        #expect(framer.pendingByteCount == reference.pendingByteCount)
        #expect(expected.contains(.tooLong))
        #expect(expected.contains(.line(Array("lone\rcr".utf8))))
    }
}
