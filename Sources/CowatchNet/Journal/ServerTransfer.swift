import CowatchCore
import Foundation
import NIOCore

/// The server's side of a transfer connection, once its `transfer` line was accepted: receive
/// an upload into the store, or send stored content.
///
/// Both stream in chunks of `ContentFile.chunkBytes` with the channel's back-pressure (a read
/// is not asked for until the last chunk is on disk; a write waits while the peer does not
/// read), and both give up on a peer that makes no progress for `stallLimit` seconds by
/// closing the channel.
///
/// Threading: called from the hub's connection loop; a nonisolated async function, so it runs
/// off the rooms' actor (which stays free while a transfer waits for bytes or the disk). Its
/// disk reads, writes and hashing run on the low-priority transfer thread (`TransferExecutor`),
/// so they yield to the rooms' work; the TLS records are still sealed on the connection's loop.
enum ServerTransfer {
    /// Seconds without a byte moving before a transfer is abandoned.
    static let stallLimit = 30.0

    enum Plan: Sendable {
        case upload(id: String, size: Int)
        case download(id: String, size: Int, offset: Int)
    }

    /// Carries out `plan` on the connection. For an upload, returns whether the whole content
    /// arrived and has its SHA-256 (nil: the peer went away or failed first; what arrived is
    /// kept for a resume). A download returns nil.
    static func run(
        _ plan: Plan, store: AttachmentStore, chunks: inout NIOAsyncChannelInboundStream<[ClientLine]>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, channel: any Channel
    ) async -> Bool? {
        await withTaskExecutorPreference(TransferExecutor.shared) {
            await runOnTransferThread(plan, store: store, chunks: &chunks, outbound: outbound, channel: channel)
        }
    }

    private static func runOnTransferThread(
        _ plan: Plan, store: AttachmentStore, chunks: inout NIOAsyncChannelInboundStream<[ClientLine]>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, channel: any Channel
    ) async -> Bool? {
        let progress = Locked(SystemClock.monotonicSeconds())
        return await withTaskGroup(of: Void.self) { group -> Bool? in
            group.addTask {
                // The watchdog: a peer that stops moving bytes loses its connection (and slot).
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    if SystemClock.monotonicSeconds() - progress.withLock({ $0 }) > stallLimit {
                        channel.close(promise: nil)
                        return
                    }
                }
            }
            defer { group.cancelAll() }
            do {
                switch plan {
                case .upload(let id, let size):
                    return try await receive(id: id, size: size, store: store, chunks: &chunks, outbound: outbound, progress: progress)
                case .download(let id, let size, let offset):
                    try await send(id: id, size: size, offset: offset, store: store, outbound: outbound, channel: channel, progress: progress)
                    return nil
                }
            } catch {
                return nil
            }
        }
    }

    private static func receive(
        id: String, size: Int, store: AttachmentStore, chunks: inout NIOAsyncChannelInboundStream<[ClientLine]>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, progress: Locked<Double>
    ) async throws -> Bool? {
        let writer = try ContentWriter(path: store.partialPath(of: id), size: size, resume: true)
        try await outbound.write(ByteBuffer(bytes: ServerMessage.transferReady(offset: writer.written, size: size).encoded()))
        while !writer.isComplete {
            guard let chunk = try await nextBytes(&chunks) else { return nil }
            try writer.append(chunk)
            progress.withLock { $0 = SystemClock.monotonicSeconds() }
        }
        guard writer.digest() == id else {
            store.delete(id)
            return false
        }
        try store.commit(id)
        return true
    }

    /// The next bytes of the upload (`ClientLineHandler` passes them through after the line).
    private static func nextBytes(_ chunks: inout NIOAsyncChannelInboundStream<[ClientLine]>.AsyncIterator) async throws -> ByteBuffer? {
        while let batch = try await chunks.next() {
            var joined = ByteBuffer()
            for item in batch {
                guard case .raw(var bytes) = item else { throw CowatchError(.protocolViolation, "a line inside a transfer") }
                joined.writeBuffer(&bytes)
            }
            if joined.readableBytes > 0 { return joined }
        }
        return nil
    }

    private static func send(
        id: String, size: Int, offset: Int, store: AttachmentStore, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        channel: any Channel, progress: Locked<Double>
    ) async throws {
        let reader = try ContentReader(path: store.path(of: id), offset: offset)
        try await outbound.write(ByteBuffer(bytes: ServerMessage.transferReady(offset: offset, size: size).encoded()))
        var writer = WindowedWriter(channel: channel)
        while reader.offset < size {
            let chunk = try reader.next(limit: min(ContentFile.chunkBytes, size - reader.offset), allocator: channel.allocator)
            guard chunk.readableBytes > 0 else { throw CowatchError(.ioError, "\(id) is shorter than \(size) bytes") }
            try await writer.write(chunk)
            progress.withLock { $0 = SystemClock.monotonicSeconds() }
        }
        try await writer.drain()
    }
}
