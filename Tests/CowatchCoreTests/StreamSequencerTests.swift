import Testing

@testable import CowatchCore

/// Issue 25: the server's side of film streams — offers kept and told, and the pairing of a
/// receiver's stream connection with its sharer's serving connection, bounded everywhere.
@Suite("Streams on the server: offers and pairing")
struct StreamSequencerTests: SequencerTesting {
    static let film = MediaIdentity(size: 700_000_000, fingerprint: String(repeating: "f1", count: 32), name: "Film.mkv")

    static func file(_ index: Int) -> MediaIdentity {
        let hex = String(index, radix: 16)
        return MediaIdentity(size: 1000 + index, fingerprint: String(repeating: hex.count == 1 ? "0" + hex : hex, count: 32), name: "f\(index).mkv")
    }

    /// Joins `names` (connections 1…n) to room "r"; those in `speaking` speak `stream`. Returns
    /// the sequencer and everyone's session token.
    func streamRoom(
        _ names: [String], speaking: Set<String>? = nil, configuration: RoomSequencer.Configuration = .init()
    ) -> (RoomSequencer, [String: String]) {
        var configuration = configuration
        configuration.admission.idleTimeout = 1e9
        var sequencer = RoomSequencer(configuration: configuration)
        var tokens: [String: String] = [:]
        for (index, name) in names.enumerated() {
            let features = speaking.map { $0.contains(name) } ?? true ? [WireFeature.stream] : []
            let outputs = sequencer.enter(
                .hello(.init(features: features, room: "r", name: name, activity: Activity(url: "/f.mkv"))), from: index + 1, now: 0)
            for case .welcome(let welcome) in messages(outputs, to: index + 1) { tokens[name] = welcome.token }
        }
        return (sequencer, tokens)
    }

    /// A new connection `id` sends `message` as its first line.
    func connection(_ sequencer: inout RoomSequencer, _ message: ClientMessage, on id: Int, now: Double = 1) -> [Output] {
        _ = sequencer.connected(id, now: now)
        return sequencer.received(message, from: id, now: now)
    }

    func request(_ name: String, token: String?, from sharer: String = "alice", file: MediaIdentity = film) -> ClientMessage {
        .stream(StreamRequest(room: "r", name: name, token: token ?? "00.00", from: sharer, fingerprint: file.fingerprint))
    }

    func serve(_ name: String, token: String?, stream: Int) -> ClientMessage {
        .streamServe(StreamServe(room: "r", name: name, token: token ?? "00.00", stream: stream))
    }

    func errorCode(_ outputs: [Output], to id: Int) -> String? {
        for case .error(let code, _) in messages(outputs, to: id) { return code }
        return nil
    }

    func refusal(_ outputs: [Output], to id: Int) -> String? {
        for case .refused(_, let code, _) in messages(outputs, to: id) { return code }
        return nil
    }

    /// The stream number the sequencer gave a receiver's connection.
    func streamNumber(_ outputs: [Output], on id: Int) -> Int? {
        for case .relayStream(id, let stream, _) in outputs { return stream }
        return nil
    }

    @Test("share and unshare are told to everyone who speaks stream, and to a late joiner after its welcome")
    func sharesBroadcast() {
        var (sequencer, _) = streamRoom(["alice", "bob", "carol"], speaking: ["alice", "bob"])
        let shared = sequencer.received(.share(Self.film, activity: 0), from: 1, now: 1)
        let offer = SharedMedia(by: "alice", file: Self.film, activity: 0)
        #expect(shared.contains(.sendMessage(1, .shares([offer]), reliable: true)))
        #expect(shared.contains(.sendMessage(2, .shares([offer]), reliable: true)))
        #expect(messages(shared, to: 3).isEmpty, "carol does not speak stream")
        #expect(messages(sequencer.received(.share(Self.film, activity: nil), from: 3, now: 1), to: 3) == [.unsupported(type: "share")])

        let late = sequencer.enter(
            .hello(.init(features: [WireFeature.stream], room: "r", name: "dan", activity: Activity(url: "x"))), from: 4, now: 2)
        let toDan = messages(late, to: 4)
        let welcomed = toDan.firstIndex { if case .welcome = $0 { true } else { false } }
        let told = toDan.firstIndex(of: .shares([offer]))
        #expect(welcomed != nil && told != nil && welcomed! < told!, "\(toDan)")

        let withdrawn = sequencer.received(.unshare(fingerprint: nil), from: 1, now: 3)
        for id in [1, 2, 4] { #expect(messages(withdrawn, to: id) == [.shares([])]) }
        #expect(sequencer.received(.unshare(fingerprint: nil), from: 1, now: 3).isEmpty, "nothing left to withdraw: nothing told")
    }

    @Test("a member's stream status shows in everyone's participant list; one that does not speak stream is told unsupported")
    func streamStatusShown() throws {
        var (sequencer, _) = streamRoom(["alice", "bob", "carol"], speaking: ["alice", "bob"])
        let report = StreamReport(from: "alice", aheadBytes: 5 << 20, aheadSeconds: 12.5, rate: 2.5e6)
        #expect(sequencer.received(.streamStatus(report), from: 2, now: 1).isEmpty, "telemetry: nothing at once")
        #expect(messages(sequencer.received(.streamStatus(report), from: 3, now: 1), to: 3) == [.unsupported(type: "stream_status")])
        func bobsStream(at now: Double) -> StreamReport?? {
            for case .participants(let list) in messages(sequencer.tick(now: now), to: 1) {
                return .some(list.first { $0.name == "bob" }?.stream)
            }
            return nil
        }
        #expect(bobsStream(at: 30) == .some(report))
        #expect(sequencer.received(.streamStatus(nil), from: 2, now: 31).isEmpty)
        #expect(bobsStream(at: 60) == .some(nil), "a stream that ended is no longer shown")
    }

    @Test("offers are capped per member and per room; the same file offered again replaces its offer")
    func offerCaps() {
        let names = (0..<6).map { "m\($0)" }
        var (sequencer, _) = streamRoom(names)
        for index in 0..<SharedMedia.maxPerMember {
            #expect(refusal(sequencer.received(.share(Self.file(index), activity: nil), from: 1, now: 1), to: 1) == nil)
        }
        #expect(refusal(sequencer.received(.share(Self.file(0), activity: 7), from: 1, now: 1), to: 1) == nil, "a replacement")
        #expect(refusal(sequencer.received(.share(Self.file(9), activity: nil), from: 1, now: 1), to: 1) == "too-large")
        // Room: 16 offers from four members, then a fifth member is refused.
        for member in 2...4 {
            for index in 0..<SharedMedia.maxPerMember {
                #expect(refusal(sequencer.received(.share(Self.file(member * 10 + index), activity: nil), from: member, now: 1), to: member) == nil)
            }
        }
        #expect(refusal(sequencer.received(.share(Self.file(60), activity: nil), from: 5, now: 1), to: 5) == "too-large")
    }

    @Test("in a managed room only the owner and operators share")
    func managedRoom() {
        var configuration = RoomSequencer.Configuration()
        configuration.managed = true
        var (sequencer, _) = streamRoom(["alice", "bob"], configuration: configuration)
        #expect(refusal(sequencer.received(.share(Self.film, activity: nil), from: 2, now: 1), to: 2) == "not-permitted")
        #expect(refusal(sequencer.received(.share(Self.film, activity: nil), from: 1, now: 1), to: 1) == nil)
    }

    @Test("a stream pairs the receiver's connection with the sharer's serving connection, told stream_wanted")
    func pairing() throws {
        var (sequencer, tokens) = streamRoom(["alice", "bob"])
        _ = sequencer.received(.share(Self.film, activity: nil), from: 1, now: 1)
        let asked = connection(&sequencer, request("bob", token: tokens["bob"]), on: 10)
        let stream = try #require(streamNumber(asked, on: 10))
        #expect(asked == [
            .relayStream(10, stream: stream, size: Self.film.size),
            .sendMessage(1, .streamWanted(stream: stream, fingerprint: Self.film.fingerprint, for: "bob"), reliable: true),
        ])
        #expect(sequencer.admission.address(of: 10) == nil, "out of the handshake's admission")
        let served = connection(&sequencer, serve("alice", token: tokens["alice"], stream: stream), on: 11)
        #expect(served == [.relayStream(11, stream: stream, size: Self.film.size)])
        // Served once: a second serving connection for it is refused.
        let again = connection(&sequencer, serve("alice", token: tokens["alice"], stream: stream), on: 12)
        #expect(errorCode(again, to: 12) == "not-found")
        #expect(again.contains(.close(12)))
        // Nothing expires once served.
        let later = sequencer.tick(now: 100)
        #expect(!later.contains(.close(10)) && !later.contains(.close(11)), "\(later)")
    }

    @Test("only the sharer named in the request may serve it")
    func wrongSharer() throws {
        var (sequencer, tokens) = streamRoom(["alice", "bob", "carol"])
        _ = sequencer.received(.share(Self.film, activity: nil), from: 1, now: 1)
        let stream = try #require(streamNumber(connection(&sequencer, request("bob", token: tokens["bob"]), on: 10), on: 10))
        let carol = connection(&sequencer, serve("carol", token: tokens["carol"], stream: stream), on: 11)
        #expect(errorCode(carol, to: 11) == "not-found")
        #expect(carol.contains(.close(11)))
        // alice still can.
        #expect(connection(&sequencer, serve("alice", token: tokens["alice"], stream: stream), on: 12) == [
            .relayStream(12, stream: stream, size: Self.film.size)
        ])
    }

    @Test("what cannot be streamed is refused with a stable code: nothing offered, from oneself, a serve line out of place")
    func refusals() {
        var (sequencer, tokens) = streamRoom(["alice", "bob", "carol"])
        _ = sequencer.received(.share(Self.film, activity: nil), from: 1, now: 1)
        let nothing = connection(&sequencer, request("bob", token: tokens["bob"], from: "carol"), on: 10)
        #expect(errorCode(nothing, to: 10) == "not-found")
        #expect(nothing.contains(.close(10)))
        #expect(!nothing.contains { if case .sendMessage(3, _, _) = $0 { true } else { false } }, "carol is not asked")
        let other = connection(&sequencer, request("bob", token: tokens["bob"], file: Self.file(1)), on: 11)
        #expect(errorCode(other, to: 11) == "not-found")
        let own = connection(&sequencer, request("alice", token: tokens["alice"]), on: 12)
        #expect(errorCode(own, to: 12) == "invalid-request")
        // A stream line on a room connection.
        let misplaced = sequencer.received(request("bob", token: tokens["bob"]), from: 2, now: 2)
        #expect(errorCode(misplaced, to: 2) == "protocol-violation")
        // A stream number nobody waits on.
        let stray = connection(&sequencer, serve("alice", token: tokens["alice"], stream: 777), on: 13)
        #expect(errorCode(stray, to: 13) == "not-found")
    }

    @Test("a wrong token is refused a moment later, as a wrong room secret is")
    func wrongToken() {
        var (sequencer, tokens) = streamRoom(["alice", "bob"])
        _ = sequencer.received(.share(Self.film, activity: nil), from: 1, now: 1)
        #expect(connection(&sequencer, request("bob", token: tokens["alice"]), on: 10).isEmpty)
        let later = sequencer.tick(now: 1 + sequencer.configuration.admission.authFailureDelay)
        #expect(errorCode(later, to: 10) == "auth-failed")
        #expect(later.contains(.close(10)))
        #expect(!later.contains { if case .sendMessage(1, .streamWanted, _) = $0 { true } else { false } })
    }

    @Test("a member without the stream feature cannot open streams")
    func featureNeeded() {
        var (sequencer, tokens) = streamRoom(["alice", "bob"], speaking: ["alice"])
        _ = sequencer.received(.share(Self.film, activity: nil), from: 1, now: 1)
        let asked = connection(&sequencer, request("bob", token: tokens["bob"]), on: 10)
        #expect(errorCode(asked, to: 10) == "unsupported")
    }

    @Test("streams are capped per receiver and per sharer")
    func streamCaps() {
        let receivers = (0..<5).map { "r\($0)" }
        var (sequencer, tokens) = streamRoom(["alice"] + receivers)
        _ = sequencer.received(.share(Self.film, activity: nil), from: 1, now: 1)
        var id = 100
        func ask(_ name: String) -> [Output] {
            id += 1
            return connection(&sequencer, request(name, token: tokens[name]), on: id)
        }
        for _ in 0..<4 { #expect(streamNumber(ask("r0"), on: id) != nil) }
        #expect(errorCode(ask("r0"), to: id) == "server-busy", "a fifth stream for one receiver")
        // alice serves 16 at most: r1…r3 take 12 more.
        for name in ["r1", "r2", "r3"] {
            for _ in 0..<4 { #expect(streamNumber(ask(name), on: id) != nil) }
        }
        #expect(errorCode(ask("r4"), to: id) == "server-busy", "a 17th stream from one sharer")
        // One ends: room again.
        _ = sequencer.disconnected(101, now: 2)
        #expect(streamNumber(ask("r4"), on: id) != nil)
    }

    @Test("a stream not served in time: its receiver is told timeout and closed; a late serve finds nothing")
    func serveDeadline() throws {
        var (sequencer, tokens) = streamRoom(["alice", "bob"])
        _ = sequencer.received(.share(Self.film, activity: nil), from: 1, now: 1)
        let stream = try #require(streamNumber(connection(&sequencer, request("bob", token: tokens["bob"]), on: 10, now: 1), on: 10))
        #expect(sequencer.nextDeadline() ?? .infinity <= 1 + StreamBook.serveDeadline)
        #expect(errorCode(sequencer.tick(now: 1 + StreamBook.serveDeadline - 0.5), to: 10) == nil)
        let expired = sequencer.tick(now: 1 + StreamBook.serveDeadline)
        #expect(errorCode(expired, to: 10) == "timeout")
        #expect(expired.contains(.close(10)))
        let late = connection(&sequencer, serve("alice", token: tokens["alice"], stream: stream), on: 11, now: 12)
        #expect(errorCode(late, to: 11) == "not-found")
    }

    @Test("a receiver that leaves before it is served drops its stream")
    func receiverLeaves() throws {
        var (sequencer, tokens) = streamRoom(["alice", "bob"])
        _ = sequencer.received(.share(Self.film, activity: nil), from: 1, now: 1)
        let stream = try #require(streamNumber(connection(&sequencer, request("bob", token: tokens["bob"]), on: 10), on: 10))
        _ = sequencer.disconnected(10, now: 2)
        #expect(errorCode(connection(&sequencer, serve("alice", token: tokens["alice"], stream: stream), on: 11, now: 2), to: 11) == "not-found")
        #expect(errorCode(sequencer.tick(now: 30), to: 10) == nil, "nothing expires for a gone connection")
    }

    @Test("a sharer that leaves takes its offers and unserved streams with it; one that unshares too")
    func sharerLeaves() throws {
        var (sequencer, tokens) = streamRoom(["alice", "bob", "carol"])
        _ = sequencer.received(.share(Self.film, activity: nil), from: 1, now: 1)
        let stream = try #require(streamNumber(connection(&sequencer, request("bob", token: tokens["bob"]), on: 10), on: 10))
        let left = sequencer.disconnected(1, now: 2)
        #expect(messages(left, to: 2).contains(.shares([])))
        #expect(messages(left, to: 3).contains(.shares([])))
        #expect(errorCode(connection(&sequencer, request("bob", token: tokens["bob"]), on: 11, now: 2), to: 11) == "not-found")
        _ = stream

        // carol offers, bob asks, carol unshares before serving: the stream is gone.
        _ = sequencer.received(.share(Self.film, activity: nil), from: 3, now: 3)
        let second = try #require(streamNumber(connection(&sequencer, request("bob", token: tokens["bob"], from: "carol"), on: 12, now: 3), on: 12))
        _ = sequencer.received(.unshare(fingerprint: Self.film.fingerprint), from: 3, now: 4)
        #expect(errorCode(connection(&sequencer, serve("carol", token: tokens["carol"], stream: second), on: 13, now: 4), to: 13) == "not-found")
    }
}
