import NIOCore
import ServiceLifecycle

/// Runs a server's accept loop, closing its listening channel on graceful shutdown or
/// cancellation so the loop ends by itself.
///
/// Why not plain cancellation: connections already accepted but not yet taken from the inbound
/// stream would be dropped unfinished, which NIO treats as a fatal error (swift-nio issue 2813).
/// So: stop accepting (no more reads on the listening socket), give connections that are being
/// activated a moment to reach the stream, then close the listener, which lets the loop hand out
/// everything buffered before it ends.
func withShutdownClosing(_ channel: any Channel, _ body: () async throws -> Void) async throws {
    try await withTaskCancellationHandler {
        try await withGracefulShutdownHandler {
            do {
                try await body()
            } catch is CancellationError {
                // Ending by cancellation is a normal stop.
            }
        } onGracefulShutdown: {
            stopAcceptingThenClose(channel)
        }
    } onCancel: {
        stopAcceptingThenClose(channel)
    }
}

private func stopAcceptingThenClose(_ channel: any Channel) {
    channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in
        channel.eventLoop.scheduleTask(in: .milliseconds(100)) {
            channel.close(promise: nil)
        }
    }
}
