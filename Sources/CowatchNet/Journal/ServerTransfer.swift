import CowatchCore
import Foundation
import NIOCore

/// The server's side of a transfer connection, once its `transfer` line was accepted: receive
/// an upload into the store, or send stored content.
///
/// Both stream in chunks of `ContentFile.chunkBytes` with the channel's back-pressure (a read
/// is not asked for until the last chunk is on disk; a write waits while the peer does not
/// read), and both give up on a peer that moves fewer than `minimumWindowBytes` in any
/// `stallLimit` seconds by closing the channel: a transfer slot and an upload's reservation are
/// paid for in bytes moved, so a trickle of a byte now and then cannot hold them (issue 22).
///
/// Threading: called from the hub's connection loop; a nonisolated async function, so it runs
/// off the rooms' actor (which stays free while a transfer waits for bytes or the disk). Its
/// disk reads, writes and hashing run on the low-priority transfer thread (`TransferExecutor`),
/// so they yield to the rooms' work; the TLS records are still sealed on the connection's loop.
enum ServerTransfer {
    /// The window over which a transfer must move `minimumWindowBytes` (64 KiB in 30 s, about
    /// 2 KiB/s: far under any real link, far over a trickle).
    static let stallLimit = 30.0
    static let minimumWindowBytes = 65_536

    enum Plan: Sendable {
        case upload(id: String, size: Int, resume: Bool)
        case download(id: String, size: Int, offset: Int)
    }

    enum Outcome: Sendable, Equatable {
        /// The whole upload arrived; whether it has its announced SHA-256.
        case uploaded(verified: Bool)
        /// The upload stopped (peer gone, too slow, or a failure) holding `received` bytes.
        case interrupted(received: Int)
        /// A download ended (done or not).
        case downloaded
    }

    /// Carries out `plan` on the connection and says how it ended (an interrupted upload's bytes
    /// are kept for a resume).
    static func run(
        _ plan: Plan, store: AttachmentStore, chunks: inout NIOAsyncChannelInboundStream<[ClientLine]>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, channel: any Channel
    ) async -> Outcome {
        await withTaskExecutorPreference(TransferExecutor.shared) {
            await runOnTransferThread(plan, store: store, chunks: &chunks, outbound: outbound, channel: channel)
        }
    }

    private static func runOnTransferThread(
        _ plan: Plan, store: AttachmentStore, chunks: inout NIOAsyncChannelInboundStream<[ClientLine]>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, channel: any Channel
    ) async -> Outcome {
        let progress = Locked(TransferWindow(start: SystemClock.monotonicSeconds()))
        return await withTaskGroup(of: Void.self) { group -> Outcome in
            group.addTask {
                // The watchdog: a peer that moves too little loses its connection (and slot).
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    let slow = progress.withLock {
                        $0.isTooSlow(now: SystemClock.monotonicSeconds(), window: stallLimit, minimum: minimumWindowBytes)
                    }
                    if slow {
                        channel.close(promise: nil)
                        return
                    }
                }
            }
            defer { group.cancelAll() }
            switch plan {
            case .upload(let id, let size, let resume):
                let received = Locked(0)
                do {
                    let verified = try await receive(
                        id: id, size: size, resume: resume, store: store, chunks: &chunks, outbound: outbound, progress: progress,
                        received: received)
                    return verified.map { .uploaded(verified: $0) } ?? .interrupted(received: received.withLock { $0 })
                } catch {
                    return .interrupted(received: received.withLock { $0 })
                }
            case .download(let id, let size, let offset):
                try? await send(id: id, size: size, offset: offset, store: store, outbound: outbound, channel: channel, progress: progress)
                return .downloaded
            }
        }
    }

    /// Whether the whole upload arrived with its SHA-256; nil when its peer went away first.
    /// `received` follows the bytes held (kept ones included).
    private static func receive(
        id: String, size: Int, resume: Bool, store: AttachmentStore,
        chunks: inout NIOAsyncChannelInboundStream<[ClientLine]>.AsyncIterator, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        progress: Locked<TransferWindow>, received: Locked<Int>
    ) async throws -> Bool? {
        let writer = try ContentWriter(path: store.partialPath(of: id), size: size, resume: resume)
        received.withLock { $0 = writer.written }
        try await outbound.write(ByteBuffer(bytes: ServerMessage.transferReady(offset: writer.written, size: size).encoded()))
        while !writer.isComplete {
            guard let chunk = try await nextBytes(&chunks) else { return nil }
            try writer.append(chunk)
            received.withLock { $0 = writer.written }
            progress.withLock { $0.moved(chunk.readableBytes) }
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
        channel: any Channel, progress: Locked<TransferWindow>
    ) async throws {
        let reader = try ContentReader(path: store.path(of: id), offset: offset)
        try await outbound.write(ByteBuffer(bytes: ServerMessage.transferReady(offset: offset, size: size).encoded()))
        var writer = WindowedWriter(channel: channel)
        while reader.offset < size {
            let chunk = try reader.next(limit: min(ContentFile.chunkBytes, size - reader.offset), allocator: channel.allocator)
            guard chunk.readableBytes > 0 else { throw CowatchError(.ioError, "\(id) is shorter than \(size) bytes") }
            let bytes = chunk.readableBytes
            try await writer.write(chunk)
            progress.withLock { $0.moved(bytes) }
        }
        try await writer.drain()
    }
}
