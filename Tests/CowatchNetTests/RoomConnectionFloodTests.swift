import CowatchCore
import CowatchTestSupport
import Foundation
import Logging
import Testing

@testable import CowatchNet

/// A daemon's link under a peer's unreliable stream that comes faster than the daemon handles it
/// (issue 22, item 7): the stream is what the link drops, never a reliable message, and the link
/// is not given up for it.
@Suite("Room connection: unreliable messages have their own share of the inbound queue")
struct RoomConnectionFloodTests {
    @Test("6000 unreliable messages with 10 reliable ones among them, read late: all 10 reliable ones come, and the link ends only when the server closes it")
    func reliableThroughInboundFlood() async throws {
        let (listener, port) = try LoopbackSocket.listen(what: "fake room server")
        defer { close(listener) }
        var lines: [UInt8] = []
        for index in 0..<6000 {
            if index % 600 == 300 {
                lines += ServerMessage.message(RoomMessage(
                    id: index / 600, topic: "note", payload: #"{"n":\#(index / 600)}"#, reliable: true, from: "bob")).encoded()
            }
            lines += ServerMessage.message(RoomMessage(
                id: 1000 + index, topic: "stream", payload: #"{"blob":"x"}"#, reliable: false, from: "carol")).encoded()
        }
        let all = lines
        // The server writes everything at once, then closes.
        Thread {
            let peer = accept(listener, nil, nil)
            guard peer >= 0 else { return }
            var offset = 0
            while offset < all.count {
                let sent = all[offset...].withUnsafeBytes { send(peer, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if sent <= 0 { break }
                offset += sent
            }
            shutdown(peer, Int32(SHUT_WR))
            usleep(3_000_000)
            close(peer)
        }.start()

        let (reliable, unreliable, ending) = try await RoomConnection.connect(
            host: "127.0.0.1", port: port, security: .plaintext, logger: Logger(label: "test")
        ) { inbound, _, _ -> ([Int], Int, String) in
            // A daemon busy elsewhere: everything has arrived before it reads.
            try? await Task.sleep(for: .seconds(1))
            var reliable: [Int] = []
            var unreliable = 0
            do {
                for try await arrival in inbound {
                    guard case .message(let message) = arrival.message else { continue }
                    if message.reliable { reliable.append(message.id) } else { unreliable += 1 }
                }
                return (reliable, unreliable, "finished")
            } catch {
                return (reliable, unreliable, (error as? CowatchError)?.code.rawValue ?? "\(error)")
            }
        }
        #expect(reliable == Array(0..<10), "reliable \(reliable), unreliable \(unreliable), ended: \(ending)")
        #expect(ending == CowatchError.Code.ioError.rawValue, "the link ended with \(ending)")
        // The stream kept its share, no more (some were taken while the reader read).
        #expect(unreliable >= 1 && unreliable < 6000, "\(unreliable) unreliable delivered")
    }
}
