import CowatchCore
import Logging
import NIOCore

/// One film stream a sharer serves (issue 25): a connection of its own to the room server,
/// which relays it to the receiver. The `stream_serve` line, `stream_ready`, then the receiver's
/// frames answered in order — a `read` with a `data` frame from the offered file (or a
/// `refused` one), a `ping` with a ping.
///
/// A `data` frame goes out in pieces of `pieceBytes`, each paced (`FilmSharing.paced`, the fair
/// `SharePace`), read from the disk only once the previous ones are nearly written
/// (`WindowedWriter`), so a slow receiver slows the disk reads instead of filling memory, and a
/// slow pace still moves bytes often enough for the watchdogs of the link and the relay.
///
/// Threading: `run` is a nonisolated async function; its work, disk reads included, runs on the
/// low-priority transfer thread (`TransferExecutor`), so bulk bytes yield to playback. It asks
/// `FilmSharing` (an actor) before each read and each piece, and stops when its task is
/// cancelled or its channel closed (an offer withdrawn, `stop`).
enum ServedStream {
    /// Bytes paced and written at a time.
    static let pieceBytes = 64 * 1024
    /// The longest sleep between refreshes of the link's watchdog while a slow pace waits.
    static let stampInterval = 5.0

    /// What is served, as `FilmSharing` allows it at each read.
    struct ServedFile: Sendable {
        var path: String
        var size: Int
    }

    /// Serves stream `stream` (`serial` in `sharing`) until it ends; logs how it ended.
    static func run(
        _ stream: Int, serial: Int, receiver: String, endpoint: TransferClient.Endpoint, sharing: FilmSharing, logger: Logger
    ) async {
        await withTaskExecutorPreference(TransferExecutor.shared) {
            do {
                try await TransferClient.connected(endpoint) { inbound, outbound, channel, stamp in
                    // Known before anything is awaited, so closing the stream closes a link still
                    // waiting for its receiver too.
                    guard await sharing.linked(serial, channel: channel) else { return }
                    let serve = StreamServe(room: endpoint.room, name: endpoint.name, token: endpoint.token, stream: stream)
                    try await outbound.write(ByteBuffer(bytes: ClientMessage.streamServe(serve).encoded()))
                    var reader = TransferClient.LineReader(inbound, progress: stamp)
                    guard case .streamReady = try await reader.message() else {
                        throw CowatchError(.protocolViolation, "the server did not answer stream_serve with stream_ready")
                    }
                    logger.debug("stream serving")
                    var serving = Serving(serial: serial, channel: channel, stamp: stamp, sharing: sharing)
                    var decoder = StreamFrameDecoder(accepting: .sharer)
                    while let chunk = try await reader.chunk() {
                        decoder.append(chunk.readableBytesView)
                        while let frame = try decoder.next() {
                            try await serving.answer(frame)
                        }
                    }
                }
                logger.debug("stream served to its end")
            } catch {
                logger.debug("stream serving ended", metadata: ["cowatch.stream.error": "\(error)"])
            }
        }
    }

    /// The answering side of one linked stream.
    private struct Serving {
        let serial: Int
        let channel: any Channel
        let stamp: Locked<Double>
        let sharing: FilmSharing
        private var writer: WindowedWriter
        private var file: SharedFileReader?

        init(serial: Int, channel: any Channel, stamp: Locked<Double>, sharing: FilmSharing) {
            self.serial = serial
            self.channel = channel
            self.stamp = stamp
            self.sharing = sharing
            writer = WindowedWriter(channel: channel)
        }

        mutating func answer(_ frame: StreamFrame) async throws {
            switch frame {
            case .ping:
                try await write(StreamFrame.ping.encoded())
            case .read(let offset, let length):
                switch await sharing.permit(serial) {
                case .failure(let error):
                    try await write(StreamFrame.refused(offset: offset, error).encoded())
                case .success(let served):
                    try await send(offset: offset, length: length, of: served)
                }
            case .data, .refused:
                // The decoder takes only reads and pings on this side.
                throw CowatchError(.protocolViolation, "a receiver does not send data")
            }
        }

        /// A `data` frame of bytes `offset ..< offset + length` of `served` (fewer at its end),
        /// or a refusal when there are none.
        private mutating func send(offset: Int, length: Int, of served: ServedFile) async throws {
            guard offset < served.size else {
                let error = CowatchError(.invalidRequest, "no byte \(offset) in a file of \(served.size) bytes")
                return try await write(StreamFrame.refused(offset: offset, error).encoded())
            }
            if file?.path != served.path { file = try SharedFileReader(path: served.path) }
            guard let file else { return }
            let count = min(length, served.size - offset)
            // A file that shrank since it was offered cannot fill the frame: refused before its header.
            guard let size = file.size, size >= offset + count else {
                let error = CowatchError(.ioError, "the shared file is shorter than offered now")
                return try await write(StreamFrame.refused(offset: offset, error).encoded())
            }
            try await write(StreamFrame.dataHeader(offset: offset, length: count))
            var done = 0
            while done < count {
                // A withdrawn offer: nothing more of it is read.
                try Task.checkCancellation()
                let piece = min(pieceBytes, count - done)
                try await pace(piece)
                let bytes = try file.read(at: offset + done, count: piece, allocator: channel.allocator)
                guard bytes.readableBytes == piece else { throw CowatchError(.ioError, "\(file.path) shrank while it was read") }
                try await writer.write(bytes)
                refresh()
                done += piece
            }
        }

        /// Waits as the fair pace says, refreshing the link's watchdog meanwhile.
        private func pace(_ bytes: Int) async throws {
            var wait = await sharing.paced(bytes, serial: serial)
            while wait > 0 {
                let slice = min(wait, stampInterval)
                try await Task.sleep(for: .seconds(slice))
                wait -= slice
                refresh()
            }
        }

        private mutating func write(_ bytes: [UInt8]) async throws {
            try await writer.write(ByteBuffer(bytes: bytes))
            refresh()
        }

        private func refresh() {
            stamp.withLock { $0 = SystemClock.monotonicSeconds() }
        }
    }
}
