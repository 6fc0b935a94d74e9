import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// One sender's unreliable stream never starves anyone's reliable messages or the sync path
/// (issue 22, item 7), end to end with real daemons and a real server on loopback. These pass
/// with fast readers before the fix as well; the hops where reliable traffic used to be dropped
/// or queued behind the stream are pinned by `ConnectionOutboxLaneTests`,
/// `RoomConnectionFloodTests` and `ControlOutboxDroppableTests`.
@Suite("A flood of unreliable messages in a room of real daemons", .realProcesses)
struct MessengerFloodTests {
    /// An unreliable payload of about 60 KiB (under `RoomMessage.maxPayloadBytes` as JSON).
    static let bigPayload = String(repeating: "x", count: 60_000)

    @Test("while carol streams 60 KiB unreliable messages as fast as her daemon takes them, all 10 of bob's reliable ones reach alice and a pause still reaches everyone")
    func reliableThroughDaemonStream() async throws {
        let room = try await DaemonRoom(
            names: ["alice", "bob", "carol"], media: try await TestMedia.file(.audioVideo), room: "flood")
        defer { room.stopInBackground() }
        let carolPath = room.daemons[2].controlPath
        try await Self.check(room) { flooded in try await Self.flood(controlPath: carolPath, counter: flooded) }
    }

    @Test("while a raw carol streams 60 KiB unreliable messages just under the flood guard, all 10 of bob's reliable ones reach alice and a pause still reaches everyone")
    func reliableThroughRawStream() async throws {
        let room = try await DaemonRoom(
            names: ["alice", "bob"], media: try await TestMedia.file(.audioVideo), room: "flood")
        defer { room.stopInBackground() }
        let port = room.port
        try await Self.check(room) { flooded in try await Self.rawFlood(port: port, counter: flooded) }
    }

    /// Starts `flood`, then bob's ten reliable messages to alice and a pause; checks alice got them all.
    static func check(
        _ room: DaemonRoom, flood source: @escaping @Sendable (Locked<(requests: Int, stop: Bool)>) async throws -> Void
    ) async throws {
        try await room.clients[0].request(.play)
        _ = try await room.expectNotices("play", actor: "alice", timeout: 10)
        let flooded = Locked((requests: 0, stop: false))
        let flood = Task.detached { try await source(flooded) }
        defer { flood.cancel() }
        // The stream is under way before bob says anything.
        let started = monotonicNow()
        while flooded.withLock({ $0.requests }) < 200, monotonicNow() - started < 20 { await pause(0.1) }

        // Bob's ten, one after the other, each acknowledged (or not) before the next.
        var replies: [Int: String] = [:]
        for n in 0..<10 {
            do throws(CowatchError) {
                let data = try await room.clients[1].request(
                    .sendMessage(.init(topic: "note", payload: ["n": .number(Double(n))], to: ["alice"], reliable: true)),
                    timeout: 30)
                replies[n] = "delivered to \(data["delivered"]?.arrayValue?.compactMap(\.stringValue) ?? [])"
            } catch {
                replies[n] = "\(error.code.rawValue): \(error.message)"
            }
        }
        // The sync path under the same stream: bob pauses, alice's player follows.
        let paused = await room.failure(1, .pause, timeout: 20)
        let sentByThen = flooded.withLock { $0.requests }
        #expect(paused == nil, "bob's pause during the stream: \(paused.map { "\($0)" } ?? "")")
        let alicePaused = (try? await room.clients[0].waitForStatus(timeout: 20) { $0.paused }.paused) ?? false

        // What alice's own control client saw.
        var heard: [Int] = []
        var streamed = 0
        var errors: [String] = []
        let until = monotonicNow() + 40
        while heard.count < 10, monotonicNow() < until {
            guard let event = try await room.listeners[0].nextEvent(timeout: max(0.1, until - monotonicNow())) else { continue }
            switch event.name {
            case "message" where event.fields["participant"]?.stringValue == "bob":
                if let n = event.fields["payload"]?["n"]?.numberValue { heard.append(Int(n)) }
            case "message":
                streamed += 1
            case "error":
                errors.append(event.fields["message"]?.stringValue ?? "\(event.fields)")
            default:
                break
            }
        }
        flooded.withLock { $0.stop = true }
        let floodError = await flood.result
        let sent = flooded.withLock { $0.requests }
        print("flood: carol sent \(sent) (\(sentByThen) by bob's pause), alice heard \(streamed); bob's replies \(replies.sorted { $0.key < $1.key }.map(\.value)); flood ended \(floodError)")
        #expect(
            heard == Array(0..<10),
            "alice heard \(heard) of bob's 10 (replies to bob: \(replies.sorted { $0.key < $1.key }.map(\.value))); carol sent \(sent) big ones, alice heard \(streamed); alice's errors: \(errors)")
        #expect(alicePaused, "alice's player never followed bob's pause; alice's errors: \(errors)")
        #expect(errors.isEmpty, "\(errors)")
        #expect(try await room.roomStatus(0)["session"] == "joined")
        // The stream really was a stream (carol's daemon took many).
        #expect(sent >= 200)
    }

    /// A raw participant "carol" (TLS through `openssl s_client`) that sends unreliable messages of
    /// `bigPayload` to everyone at 90 lines a second (under the server's flood guard of 100),
    /// reading and discarding what it is sent, until told to stop or 90 s pass.
    static func rawFlood(port: Int, counter: Locked<(requests: Int, stop: Bool)>) async throws {
        let carol = try RawRoomClient(tlsPort: port)
        defer { carol.close() }
        await carol.send(.hello(.init(
            features: [WireFeature.messages], room: "flood", name: "carol", client: "raw-test", nonce: RoomSecret.nonce())))
        guard await carol.read(type: "challenge", timeout: 10) != nil else { throw TestFailure("carol: no challenge") }
        await carol.send(.auth(.init()))
        guard await carol.read(type: "welcome", timeout: 10) != nil else { throw TestFailure("carol: no welcome") }
        let line = ClientMessage.message(RoomMessage(
            id: 0, topic: "stream", payload: String(decoding: JSONValue.object(["blob": .string(bigPayload)]).encoded(), as: UTF8.self),
            reliable: false, to: nil))
        let started = monotonicNow()
        var id = 0
        while !counter.withLock({ $0.stop }), !Task.isCancelled, monotonicNow() - started < 90 {
            id += 1
            var message = line
            if case .message(var body) = message {
                body.id = id
                message = .message(body)
            }
            await carol.send(message)
            counter.withLock { $0.requests += 1 }
            _ = await carol.readBytes(1 << 20, timeout: 0.001)
            let due = started + Double(id) / 90
            if due > monotonicNow() { await pause(due - monotonicNow()) }
        }
    }

    /// Pipelines `send_message … unreliable` of `bigPayload` on carol's control socket, reading
    /// (and discarding) the replies, until told to stop or 90 s pass.
    static func flood(controlPath: String, counter: Locked<(requests: Int, stop: Bool)>) async throws {
        let socket = try RawControlSocket(path: controlPath)
        var line: [UInt8] = []
        let payload = JSONValue.object(["blob": .string(bigPayload)])
        let request = JSONValue.object([
            "command": .array(["send_message", "stream", payload, "all", "unreliable"]),
        ])
        line = request.encoded() + [10]
        var pending = line[...]
        let deadline = monotonicNow() + 90
        while !counter.withLock({ $0.stop }), !Task.isCancelled, monotonicNow() < deadline {
            let ready = await socket.wait(writable: true, timeout: 0.2)
            if ready.readable { _ = try socket.tryReceive(max: 1 << 20) }
            guard ready.writable else { continue }
            pending = pending.dropFirst(try socket.trySend(pending))
            if pending.isEmpty {
                pending = line[...]
                counter.withLock { $0.requests += 1 }
            }
        }
    }
}
