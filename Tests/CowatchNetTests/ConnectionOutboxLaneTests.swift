import CowatchCore
import CowatchTestSupport
import Foundation
import NIOCore
import NIOPosix
import Testing

@testable import CowatchNet

/// The room server's per-connection outbox under another sender's unreliable stream (issue 22,
/// item 7): reliable messages never queue behind unreliable ones, and unreliable ones have their
/// own bounded allowance, in bytes as well as in count.
@Suite("Connection outbox: unreliable traffic has its own allowance")
struct ConnectionOutboxLaneTests {
    /// Resumes the outbox when its channel can take writes again.
    final class Writability: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let outbox: Locked<ConnectionOutbox?> = Locked(nil)

        func channelWritabilityChanged(context: ChannelHandlerContext) {
            outbox.withLock { $0 }?.writabilityChanged()
            context.fireChannelWritabilityChanged()
        }
    }

    @Test("64 unreliable 60 KiB lines and then 10 reliable ones queued at once: the reliable ones are written first, and at most 512 KiB of the unreliable ones are kept")
    func reliableBeforeUnreliable() async throws {
        let handler = Writability()
        let accepted = Locked<(any Channel)?>(nil)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                accepted.withLock { $0 = channel }
                return channel.pipeline.addHandler(handler)
            }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { server.close(promise: nil) }
        let client = try RawRoomClient(port: server.localAddress!.port!)
        defer { client.close() }
        var child: (any Channel)?
        let deadline = SystemClock.monotonicSeconds() + 10
        while child == nil, SystemClock.monotonicSeconds() < deadline {
            child = accepted.withLock { $0 }
            if child == nil { await pause(0.01) }
        }
        let channel = try #require(child)
        let outbox = ConnectionOutbox(channel: channel)
        handler.outbox.withLock { $0 = outbox }

        let big = String(repeating: "u", count: 60_000)
        // All queued in one go on the channel's event loop: no write happens in between.
        let outcomes = try await channel.eventLoop.submit { () -> [ConnectionOutbox.Outcome] in
            var outcomes: [ConnectionOutbox.Outcome] = []
            for index in 0..<64 { outcomes.append(outbox.push(ByteBuffer(string: "u\(index) \(big)\n"), lane: .droppable)) }
            for index in 0..<10 { outcomes.append(outbox.push(ByteBuffer(string: "r\(index)\n"), lane: .message)) }
            return outcomes
        }.get()
        let keptUnreliable = outcomes.prefix(64).filter { $0 == .queued }.count
        #expect(outcomes.suffix(10).allSatisfy { $0 == .queued })
        #expect(keptUnreliable <= 9, "\(keptUnreliable) unreliable 60 KiB lines kept for one connection")

        var order: [String] = []
        while order.count < 10 + keptUnreliable, let line = await client.readLine(timeout: 10) {
            order.append(String(line.prefix(while: { $0 != " " })))
        }
        let reliable = order.filter { $0.hasPrefix("r") }
        #expect(reliable == (0..<10).map { "r\($0)" }, "\(order)")
        let firstUnreliable = order.firstIndex { $0.hasPrefix("u") } ?? order.count
        let lastReliable = order.lastIndex { $0.hasPrefix("r") } ?? -1
        #expect(lastReliable < firstUnreliable, "written: \(order)")
    }
}
