import CowatchCore
import Logging
import NIOCore

/// One stream a sharer serves, for `cowatch participants` and `get_shares`.
public struct SharingStatus: Sendable, Equatable {
    /// Who reads it.
    public var receiver: String
    /// The shared file's fingerprint.
    public var fingerprint: String
    /// File bytes sent on the stream so far.
    public var bytesSent: Int
    /// File bytes a second over the last ~5 s.
    public var bytesPerSecond: Double

    public init(receiver: String, fingerprint: String, bytesSent: Int, bytesPerSecond: Double) {
        self.receiver = receiver
        self.fingerprint = fingerprint
        self.bytesSent = bytesSent
        self.bytesPerSecond = bytesPerSecond
    }
}

/// The sharer's side of film streams (issue 25): the files this member offers, by path and
/// identity, and the streams it serves to members who lack them, each on a connection of its
/// own through the room server's relay (`ServedStream`).
///
/// Each read is checked when it comes: the receiver must be allowed (`allow`; else
/// `not-permitted`), the file still offered (else `not-found`), the range inside it (else
/// `invalid-request`); only the path given to `offer` is ever read. All streams share the pace
/// `rate` sets (`SharePace`: a total and a per-receiver cap, fairly). At most `maxStreams` are
/// served at once; a request beyond is not served (the server tells its receiver `timeout`).
/// Withdrawing an offer closes its streams at once, and nothing more of it is read.
///
/// Threading: an actor; call from any task. The streams run in tasks of their own on the
/// low-priority transfer thread, and come back here only to ask before each read and each
/// piece of bytes. Errors: none thrown; a stream that fails (the link, the server's refusal) is
/// logged at debug and ends.
public actor FilmSharing {
    /// Streams served at once at most, as the server allows a sharer (`StreamBook.maxStreamsPerSharer`).
    public static let maxStreams = 16

    private struct Offer {
        var path: String
        var identity: MediaIdentity
    }

    private struct Stream {
        var number: Int
        var receiver: String
        var fingerprint: String
        var task: Task<Void, Never>?
        var channel: (any Channel)?
        var sent = 0
        var meter = ThroughputMeter()
    }

    private let logger: Logger
    private var pace: SharePace
    private var offers: [String: Offer] = [:]
    private var allowed: Set<String>?
    /// By serial (stream numbers are the server's and could come again).
    private var streams: [Int: Stream] = [:]
    private var nextSerial = 0

    /// - Parameter rate: how fast all streams together, and each receiver's, may send.
    public init(rate: SharingRate, logger: Logger) {
        pace = SharePace(rate: rate)
        self.logger = logger
    }

    /// Offers the file at `path` as `identity` (replacing an offer of the same fingerprint).
    /// The caller tells the room (`share`); this only makes the file servable.
    public func offer(path: String, identity: MediaIdentity) {
        offers[identity.fingerprint] = Offer(path: path, identity: identity)
        logger.debug("film offered", metadata: ["cowatch.stream.file": "\(identity.name)"])
    }

    /// Withdraws the offer of `fingerprint` (nil: every offer); its streams close at once.
    public func withdraw(fingerprint: String?) {
        if let fingerprint {
            offers[fingerprint] = nil
        } else {
            offers = [:]
        }
        for (serial, stream) in streams where fingerprint == nil || stream.fingerprint == fingerprint {
            close(serial)
        }
    }

    /// Who may read our files: nil, anyone (the default); else only these names. A receiver not
    /// allowed gets every read refused (`not-permitted`), in streams already open too.
    public func allow(_ receivers: Set<String>?) {
        allowed = receivers
    }

    /// Serves stream `stream` of the file `fingerprint` to `receiver`, as the room server asked
    /// (`stream_wanted`), on a new connection to `endpoint`. Returns at once; the stream runs
    /// until the receiver or the server ends it, its offer is withdrawn, or `stop`. Not served
    /// (logged): a stream of that number already served, or `maxStreams` streams already. A
    /// fingerprint not offered is still served, every read refused (`not-found`), so the receiver
    /// learns it at once.
    public func serve(stream: Int, fingerprint: String, for receiver: String, endpoint: TransferClient.Endpoint) {
        var streamLogger = logger
        streamLogger[metadataKey: "cowatch.stream.number"] = "\(stream)"
        streamLogger[metadataKey: "cowatch.stream.to"] = "\(receiver)"
        let logger = streamLogger
        guard !streams.values.contains(where: { $0.number == stream }) else {
            logger.debug("stream already served")
            return
        }
        guard streams.count < Self.maxStreams else {
            logger.debug("stream not served: already serving \(Self.maxStreams)")
            return
        }
        nextSerial += 1
        let serial = nextSerial
        streams[serial] = Stream(number: stream, receiver: receiver, fingerprint: fingerprint)
        streams[serial]?.task = Task {
            await ServedStream.run(stream, serial: serial, receiver: receiver, endpoint: endpoint, sharing: self, logger: logger)
            self.ended(serial)
        }
    }

    /// The streams served now.
    public func status() -> [SharingStatus] {
        let now = SystemClock.monotonicSeconds()
        return streams.values.sorted { $0.number < $1.number }.map {
            SharingStatus(receiver: $0.receiver, fingerprint: $0.fingerprint, bytesSent: $0.sent, bytesPerSecond: $0.meter.rate(now: now))
        }
    }

    /// Closes every stream and waits until their tasks are done. The offers stay.
    public func stop() async {
        let tasks = streams.values.compactMap(\.task)
        for serial in Array(streams.keys) { close(serial) }
        for task in tasks { await task.value }
    }

    // MARK: For the streams' loops

    /// The stream's connection is up (TLS done, nothing sent yet): kept to close it. False when
    /// the stream was closed meanwhile.
    func linked(_ serial: Int, channel: any Channel) -> Bool {
        guard streams[serial] != nil else { return false }
        streams[serial]?.channel = channel
        return true
    }

    /// What a read of stream `serial` may be served from now, or the refusal.
    func permit(_ serial: Int) -> Result<ServedStream.ServedFile, CowatchError> {
        guard let stream = streams[serial] else { return .failure(CowatchError(.notFound, "the stream was closed")) }
        if let allowed, !allowed.contains(stream.receiver) {
            return .failure(CowatchError(.notPermitted, "this member does not share films with \(stream.receiver)"))
        }
        guard let offer = offers[stream.fingerprint] else { return .failure(CowatchError(.notFound, "this file is not shared now")) }
        return .success(.init(path: offer.path, size: offer.identity.size))
    }

    /// `bytes` are about to go on stream `serial`: counted; returns the seconds to wait first.
    func paced(_ bytes: Int, serial: Int) -> Double {
        guard let receiver = streams[serial]?.receiver else { return 0 }
        let now = SystemClock.monotonicSeconds()
        streams[serial]?.sent += bytes
        streams[serial]?.meter.add(bytes, now: now)
        return pace.delay(for: bytes, to: receiver, now: now)
    }

    private func ended(_ serial: Int) {
        streams[serial] = nil
    }

    private func close(_ serial: Int) {
        guard let stream = streams.removeValue(forKey: serial) else { return }
        stream.task?.cancel()
        stream.channel?.close(promise: nil)
        logger.debug(
            "stream closed", metadata: ["cowatch.stream.number": "\(stream.number)", "cowatch.stream.sent": "\(stream.sent)"])
    }
}
