import CowatchCore
import CowatchNet

/// Film streams' settings (issue 25): `--share`, `--accept-stream`, `--share-rate`,
/// `--share-to`, `--stream-cache` (file keys `share`, `accept-stream`, `share-rate`, `share-to`,
/// `stream-cache`; environment `COWATCH_SHARE`, `COWATCH_ACCEPT_STREAM`, `COWATCH_SHARE_RATE`,
/// `COWATCH_SHARE_TO`, `COWATCH_STREAM_CACHE`).
///
/// Threading: pure functions on values.
extension DaemonConfiguration {
    /// What this daemon does with film streams.
    public struct StreamSettings: Sendable, Equatable {
        /// Offer this daemon's own media to the room once joined (`--share`). Default false.
        public var shareOwnMedia = false
        /// Play the room's media from a member who shares it when this daemon lacks it
        /// (`--accept-stream yes|missing|no`). Default yes.
        public var acceptStreams = true
        /// Also play it streamed instead of our own copy when the room says that copy differs
        /// from the room's (another cut or encode) and a member whose copy does not differ shares
        /// it (`--accept-stream yes`; `missing` streams only what we lack). Default yes.
        public var replaceDifferingCopy = true
        /// Bytes a second all our streams together, and each one, may send (`--share-rate
        /// TOTAL[,EACH]`, sizes such as 5M; 0: unlimited). Default unlimited.
        public var totalRate: Double = 0
        public var receiverRate: Double = 0
        /// Only these members may stream from us (`--share-to NAME`, repeatable); nil: anyone.
        public var receivers: Set<String>?
        /// Bytes of a streamed film kept on disk under the state directory, beside what memory
        /// holds (`--stream-cache SIZE`; 0: memory only). Default 1 GiB.
        public var diskCacheBytes = 1 << 30

        public init() {}

        var sharingRate: SharingRate { SharingRate(total: totalRate, perReceiver: receiverRate) }
    }

    /// Reads the stream settings. Errors: `invalid-configuration` naming the key.
    static func loadStreams(flags: DaemonFlags, _ layered: LayeredConfig) throws -> StreamSettings {
        var settings = StreamSettings()
        settings.shareOwnMedia = try layered.bool("share") ?? false
        if let accept = try layered.string("accept-stream") {
            switch accept {
            case "yes", "on", "true": settings.acceptStreams = true
            case "missing": settings.replaceDifferingCopy = false
            case "no", "off", "false":
                settings.acceptStreams = false
                settings.replaceDifferingCopy = false
            default: throw CowatchError(.invalidConfiguration, "accept-stream takes yes, missing or no, not \(accept)")
            }
        }
        if let rate = try layered.string("share-rate") {
            let parts = rate.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard (1...2).contains(parts.count), let total = RoomJournal.parseSize(parts[0]),
                parts.count == 1 || RoomJournal.parseSize(parts[1]) != nil
            else {
                throw CowatchError(
                    .invalidConfiguration,
                    "share-rate takes bytes a second for all streams, and optionally for each, such as 5M or 5M,2M (0: unlimited), not \(rate)")
            }
            settings.totalRate = Double(total)
            settings.receiverRate = parts.count == 2 ? Double(RoomJournal.parseSize(parts[1]) ?? 0) : 0
        }
        if let cache = try layered.string("stream-cache") {
            guard let bytes = RoomJournal.parseSize(cache) else {
                throw CowatchError(.invalidConfiguration, "stream-cache takes a size such as 512M or 2G (0: memory only), not \(cache)")
            }
            settings.diskCacheBytes = bytes
        }
        // Flags, else the environment's comma-separated list, else the file's list.
        var names = flags.shareTo
        if names.isEmpty, let listed = try? layered.stringArray("share-to", in: 1), !listed.isEmpty {
            names = listed.flatMap { $0.split(separator: ",").map(String.init) }
        }
        if names.isEmpty { names = try layered.stringArray("share-to", in: 2) }
        if !names.isEmpty {
            settings.receivers = Set(try names.map { name throws(CowatchError) in try ParticipantName.validate(name) })
        }
        return settings
    }
}
