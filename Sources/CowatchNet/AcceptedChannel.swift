import CowatchCore
import NIOCore

/// An accepted connection on its way from a listening channel's inbound stream to the task that
/// serves it, finished on every path.
///
/// Why: a `NIOAsyncChannel` made with `wrappingChannelSynchronously` traps ("Deinited
/// NIOAsyncWriter without calling finish()") if it is released before `executeThenClose` ran. A
/// listening channel's inbound stream drops the connections it still buffers when the accept
/// loop is cancelled or ends (swift-nio issues 2813 and 3481), so a connection accepted while a
/// server stops would crash the process. Wrapped in this box, a dropped connection is run and
/// closed instead: the box's `deinit` hands a connection nobody took to a task that runs
/// `executeThenClose` with an empty body, which finishes its writer and closes the socket.
///
/// Threading: any thread; `take()` hands the connection out at most once.
public final class AcceptedChannel<Inbound: Sendable, Outbound: Sendable>: Sendable {
    private let connection: Locked<NIOAsyncChannel<Inbound, Outbound>?>

    /// Wraps a connection just made in a channel initializer (on its event loop).
    public init(_ connection: NIOAsyncChannel<Inbound, Outbound>) {
        self.connection = Locked(connection)
    }

    /// The connection, the first time; `nil` after. Whoever takes it must run `executeThenClose`.
    public func take() -> NIOAsyncChannel<Inbound, Outbound>? {
        connection.withLock { value in
            defer { value = nil }
            return value
        }
    }

    deinit {
        guard let orphan = take() else { return }
        Task { try? await orphan.executeThenClose { _, _ in } }
    }
}
