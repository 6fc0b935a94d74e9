import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// One sender's unreliable stream never starves anyone's reliable messages or the sync path
/// (issue 22, item 7), with real daemons and a real server.
@Suite("A flood of unreliable messages in a room of real daemons", .realProcesses)
struct MessengerFloodTests {
    /// An unreliable payload of about 60 KiB (under `RoomMessage.maxPayloadBytes` as JSON).
    static let bigPayload = String(repeating: "x", count: 60_000)

    @Test("while carol streams 60 KiB unreliable messages as fast as her daemon takes them, all 10 of bob's reliable ones reach alice and a pause still reaches everyone")
    func reliableThroughUnreliableStream() async throws {
        let room = try await DaemonRoom(
            names: ["alice", "bob", "carol"], media: try await TestMedia.file(.audioVideo), room: "flood")
        defer { room.stopInBackground() }
        try await room.clients[0].request(.play)
        _ = try await room.expectNotices("play", actor: "alice", timeout: 10)
        let flooded = Locked((requests: 0, stop: false))
        let carolPath = room.daemons[2].controlPath
        let flood = Task.detached { try await Self.flood(controlPath: carolPath, counter: flooded) }
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
        _ = try? await flood.value
        let sent = flooded.withLock { $0.requests }
        #expect(
            heard == Array(0..<10),
            "alice heard \(heard) of bob's 10 (replies to bob: \(replies.sorted { $0.key < $1.key }.map(\.value))); carol sent \(sent) big ones, alice heard \(streamed); alice's errors: \(errors)")
        #expect(alicePaused, "alice's player never followed bob's pause; alice's errors: \(errors)")
        #expect(errors.isEmpty, "\(errors)")
        #expect(try await room.roomStatus(0)["session"] == "joined")
        // The stream really was a stream (carol's daemon took many).
        #expect(sent >= 200)
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
