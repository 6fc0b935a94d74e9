import Testing

@testable import CowatchCore

/// Issue 25: the film streams' wire messages and frames round-trip, whole and a byte at a time,
/// and hostile input is a protocol violation, never a trap.
@Suite("Streams: wire messages and frames")
struct StreamWireTests {
    static let fingerprint = String(repeating: "5c", count: 32)
    static let file = MediaIdentity(size: 200_721_717, fingerprint: fingerprint, duration: 80.02, name: "Film (2024) «VO».mkv")

    static let clientMessages: [ClientMessage] = [
        .share(file, activity: 0),
        .share(MediaIdentity(size: 0, fingerprint: fingerprint, name: "x"), activity: nil),
        .unshare(fingerprint: fingerprint),
        .unshare(fingerprint: nil),
        .stream(StreamRequest(room: "night", name: "bob", token: "00112233445566778899aabbccddeeff.0011", from: "alice", fingerprint: fingerprint)),
        .streamServe(StreamServe(room: "night", name: "alice", token: "ffeeddccbbaa99887766554433221100.abcd", stream: wireMaxRequestID)),
        .streamStatus(StreamReport(from: "alice", aheadBytes: 33_554_432, aheadSeconds: 61.25, rate: 2_500_000.5)),
        .streamStatus(StreamReport(from: "zoe.b", aheadBytes: 0, rate: 0)),
        .streamStatus(nil),
    ]

    static let serverMessages: [ServerMessage] = [
        .shares([SharedMedia(by: "alice", file: file, activity: 0), SharedMedia(by: "carol", file: file)]),
        .shares([]),
        .streamWanted(stream: 7, fingerprint: fingerprint, for: "bob"),
        .streamReady(size: MediaIdentity.maxSize),
        .participants([
            ParticipantInfo(name: "bob", state: "joined", drift: 0.001, stream: StreamReport(from: "alice", aheadBytes: 9, aheadSeconds: 1, rate: 4)),
            ParticipantInfo(name: "alice", state: "joined"),
        ]),
    ]

    @Test("client messages round-trip", arguments: clientMessages)
    func client(message: ClientMessage) throws {
        #expect(try ClientMessage.decode(line: message.encoded().dropLast()) == message)
    }

    @Test("server messages round-trip", arguments: serverMessages)
    func server(message: ServerMessage) throws {
        #expect(try ServerMessage.decode(line: message.encoded().dropLast()) == message)
    }

    @Test("stream messages round-trip a byte at a time through the line framer")
    func byteAtATime() throws {
        var framer = LineFramer(maxLineBytes: 65_536)
        var decoded: [ClientMessage] = []
        for byte in Self.clientMessages.flatMap({ $0.encoded() }) {
            for case .line(let line) in framer.feed([byte]) { decoded.append(try ClientMessage.decode(line: line)) }
        }
        #expect(decoded == Self.clientMessages)
    }

    static let hostileLines: [String] = [
        #"{"type":"stream_status","stream":{"from":"alice","ahead":-1,"rate":1}}"#,
        #"{"type":"stream_status","stream":{"from":"a\u0000b","ahead":1,"rate":1}}"#,
        #"{"type":"stream_status","stream":{"from":"alice","ahead":1,"rate":1,"ahead_seconds":1e9}}"#,
        #"{"type":"stream_status","stream":{"ahead":1,"rate":1}}"#,
        #"{"type":"stream_status","stream":"alice"}"#,
        #"{"type":"share"}"#,
        #"{"type":"share","file":{"name":"a/b","size":1,"fingerprint":"\#(fingerprint)"}}"#,
        #"{"type":"share","file":{"name":"a","size":-1,"fingerprint":"\#(fingerprint)"}}"#,
        #"{"type":"share","file":{"name":"a","size":1,"fingerprint":"XYZ"}}"#,
        #"{"type":"unshare","fingerprint":"zz"}"#,
        #"{"type":"stream","room":"r","name":"b","token":"t","from":"a"}"#,
        #"{"type":"stream_serve","room":"r","name":"b","token":"tttttttttttttttt","stream":0}"#,
        #"{"type":"stream_serve","room":"r","name":"b","token":"tttttttttttttttt","stream":1e30}"#,
    ]

    @Test("hostile client lines are protocol violations", arguments: hostileLines)
    func hostileClient(line: String) {
        #expect(throws: CowatchError.self) { try ClientMessage.decode(line: Array(line.utf8)) }
    }

    @Test("a shares list longer than a room keeps is refused")
    func tooManyShares() {
        let many = ServerMessage.shares(Array(repeating: SharedMedia(by: "a", file: Self.file), count: SharedMedia.maxPerRoom + 1))
        #expect(throws: CowatchError.self) { try ServerMessage.decode(line: many.encoded().dropLast()) }
    }

    // MARK: Frames

    static let toSharer: [StreamFrame] = [.read(offset: 0, length: 1), .ping, .read(offset: MediaIdentity.maxSize, length: StreamFrame.maxReadBytes)]
    static let toReceiver: [StreamFrame] = [
        .data(offset: 3, bytes: [0, 1, 2, 255]), .data(offset: 0, bytes: []), .ping,
        .refused(offset: 99, CowatchError(.invalidRequest, "past the end — «x»")),
        .data(offset: 1 << 40, bytes: Array(repeating: 7, count: 70_000)),
    ]

    @Test("frames round-trip whole and a byte at a time, each side taking only its own kinds")
    func framesRoundTrip() throws {
        for (frames, side) in [(Self.toSharer, StreamFrameDecoder.Side.sharer), (Self.toReceiver, .receiver)] {
            var whole = StreamFrameDecoder(accepting: side)
            whole.append(frames.flatMap { $0.encoded() })
            var decoded: [StreamFrame] = []
            while let frame = try whole.next() { decoded.append(frame) }
            #expect(decoded == frames)
            #expect(whole.pendingBytes == 0)

            var trickle = StreamFrameDecoder(accepting: side)
            decoded = []
            for byte in frames.flatMap({ $0.encoded() }) {
                trickle.append([byte])
                while let frame = try trickle.next() { decoded.append(frame) }
            }
            #expect(decoded == frames)
        }
    }

    static func header(_ kind: Character, offset: UInt64, length: UInt32) -> [UInt8] {
        [UInt8(kind.asciiValue!)] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: offset >> (UInt64($0) * 8)) }
            + (0..<4).reversed().map { UInt8(truncatingIfNeeded: length >> (UInt32($0) * 8)) }
    }

    static let hostileFrames: [(StreamFrameDecoder.Side, [UInt8])] = [
        (.sharer, header("R", offset: 0, length: 0)),
        (.sharer, header("R", offset: 0, length: UInt32(StreamFrame.maxReadBytes + 1))),
        (.sharer, header("R", offset: UInt64(MediaIdentity.maxSize) + 1, length: 1)),
        (.sharer, header("D", offset: 0, length: 1) + [0]),
        (.receiver, header("R", offset: 0, length: 1)),
        (.receiver, header("D", offset: 0, length: UInt32.max)),
        (.receiver, header("E", offset: 0, length: 600) + Array(repeating: 65, count: 600)),
        (.receiver, header("E", offset: 0, length: 2) + [0xff, 0xfe]),
        (.receiver, header("E", offset: 0, length: 3) + Array("a b".utf8)),
        (.receiver, header("E", offset: 0, length: 3) + Array("AB\t".utf8)),
        (.receiver, header("P", offset: 1, length: 0)),
        (.receiver, header("X", offset: 0, length: 0)),
    ]

    @Test("hostile frames are protocol violations, and the decoder stays failed", arguments: 0..<hostileFrames.count)
    func hostileFrame(index: Int) {
        let (side, bytes) = Self.hostileFrames[index]
        var decoder = StreamFrameDecoder(accepting: side)
        decoder.append(bytes)
        #expect(throws: CowatchError.self) { _ = try decoder.next() }
        decoder.append(StreamFrame.ping.encoded())
        #expect(throws: CowatchError.self) { _ = try decoder.next() }
    }

    @Test("a refusal keeps its code and drops control characters from its message")
    func refusalText() throws {
        var decoder = StreamFrameDecoder(accepting: .receiver)
        let text = Array("not-found\tgone\u{1b}[2J!".utf8)
        decoder.append(Self.header("E", offset: 5, length: UInt32(text.count)) + text)
        let frame = try decoder.next()
        guard case .refused(let offset, let error) = frame else { Issue.record("got \(String(describing: frame))"); return }
        #expect(offset == 5 && error.code == .notFound && error.message == "gone[2J!")
    }
}
