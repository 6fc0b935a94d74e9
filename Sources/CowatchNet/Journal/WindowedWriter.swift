import NIOCore

/// Writes a transfer's raw chunks with at most `window` of them in flight, each awaited in order.
///
/// Why not `NIOAsyncChannelOutboundWriter.write`: it hands a chunk to the event loop and returns
/// while the channel still looks writable, so a producer reading from the page cache queues
/// chunks on a busy event loop far faster than TLS and the socket drain them (hundreds of MB with
/// nine receivers on two cores). Awaiting each write's completion `window` chunks later bounds a
/// transfer's memory to `window` chunks and keeps the pipe full.
///
/// Threading: one task. Errors: the channel's write errors (the link broke).
struct WindowedWriter {
    static let window = 4
    let channel: any Channel
    private var inFlight: [EventLoopFuture<Void>] = []

    init(channel: any Channel) {
        self.channel = channel
    }

    mutating func write(_ buffer: ByteBuffer) async throws {
        inFlight.append(channel.writeAndFlush(buffer))
        if inFlight.count >= Self.window { try await inFlight.removeFirst().get() }
    }

    /// Waits until everything written is out.
    mutating func drain() async throws {
        while !inFlight.isEmpty { try await inFlight.removeFirst().get() }
    }
}
