import CowatchCore
import NIOCore

/// Syncplay's lines as they arrive on a connection: the one reader both sides of Syncplay use
/// (`SyncplayLink` towards a server, `SyncplayGateway` towards a client).
enum SyncplayLineReader {
    enum End: Sendable {
        /// The peer closed the connection (or the read failed: `error`).
        case closed((any Error)?)
        /// A line longer than Syncplay's bound: reading stopped there.
        case tooLong
        /// `line` refused a line (its owner's queue is full: the peer sends faster than it is
        /// served): reading stopped there.
        case overflow
    }

    /// Hands every line (without its line break) to `line`, in order, and says how reading ended;
    /// `line` returns false to stop.
    /// Threading: call from one task; `line` runs on it.
    static func read(_ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, line: ([UInt8]) async -> Bool) async -> End {
        var framer = LineFramer(maxLineBytes: SyncplayCodec.maxLineBytes)
        do {
            for try await chunk in inbound {
                for item in chunk.withUnsafeReadableBytes({ framer.feed($0) }) {
                    guard case .line(let bytes) = item else { return .tooLong }
                    guard await line(bytes) else { return .overflow }
                }
            }
            return .closed(nil)
        } catch {
            return .closed(error)
        }
    }
}
