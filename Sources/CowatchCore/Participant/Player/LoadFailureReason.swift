/// Says why mpv could not open something, from the log lines it wrote while trying.
///
/// mpv's `end-file` error is generic ("loading failed", "unrecognized file format"); the log
/// says more, but its last line is often not the cause: a 404 is followed by youtube-dl's hook
/// failing on the same URL, and an output that cannot start is reported while loading though
/// the file is fine. So: an audio or video output that failed is blamed, not the media; else
/// the first error of the stream or demuxer layers (an HTTP status, a missing file), before
/// hooks and scripts; else the first error of any kind; else mpv's generic reason.
///
/// Threading: a value type; one owner.
public struct LoadFailureReason: Sendable {
    /// Lines kept per load (mpv writes a handful when a load fails).
    public static let capacity = 32

    public struct Line: Sendable, Hashable {
        public var level: String
        public var prefix: String
        public var text: String
        public init(level: String, prefix: String, text: String) {
            self.level = level
            self.prefix = prefix
            self.text = text
        }
    }

    private var lines: [Line] = []

    public init() {}

    /// A new load starts: the lines of the last one no longer explain anything.
    public mutating func reset() { lines = [] }

    /// A log line from mpv (levels warn, error, fatal).
    public mutating func logged(_ line: Line) {
        guard lines.count < Self.capacity else { return }
        lines.append(line)
    }

    /// The error for a failed load of `url`, `mpvReason` being `end-file`'s own reason and
    /// `failedOutput` "audio" or "video" when its code says an output failed to start.
    public func explain(url: String, mpvReason: String?, failedOutput: String? = nil) -> CowatchError {
        // An HTTP status is the cause whatever level mpv's ffmpeg layer gave it.
        let errors = lines.filter { $0.level == "error" || $0.level == "fatal" || $0.text.contains("HTTP error") }
        let outputLine = errors.first(where: Self.isOutputFailure)
        if failedOutput != nil || outputLine != nil {
            let which = failedOutput
                ?? (outputLine.map { $0.prefix.hasPrefix("ao") || $0.text.contains("audio") } == true ? "audio" : "video")
            let option = which == "audio" ? "--ao" : "--vo"
            let detail = outputLine.map { ": " + ($0.text.hasSuffix(".") ? String($0.text.dropLast()) : $0.text) } ?? ""
            return CowatchError(
                .playerError, "the player's \(which) output could not start (\(option))\(detail); the media is not the cause")
        }
        let cause = errors.first(where: Self.isMediaLayer) ?? errors.first(where: { !Self.isHook($0) })
            ?? errors.first
        let generic = mpvReason ?? "loading failed"
        guard let cause else { return CowatchError(.mediaUnavailable, "cannot open \(url): \(generic)") }
        return CowatchError(.mediaUnavailable, "cannot open \(url): \(cause.text) (\(generic))")
    }

    private static func isOutputFailure(_ line: Line) -> Bool {
        line.text.contains("video_out") || line.text.contains("audio output")
            || line.text.contains("--vo") || line.text.contains("--ao")
            || ((line.prefix == "vo" || line.prefix.hasPrefix("vo/") || line.prefix == "ao" || line.prefix.hasPrefix("ao/"))
                && line.text.lowercased().contains("fail"))
    }

    private static func isMediaLayer(_ line: Line) -> Bool {
        line.prefix == "stream" || line.prefix.hasPrefix("ffmpeg") || line.prefix == "demux"
            || line.prefix.hasPrefix("lavf") || line.text.contains("HTTP error")
    }

    private static func isHook(_ line: Line) -> Bool {
        line.prefix.contains("ytdl") || line.prefix.contains("lua") || line.prefix.contains("script")
    }
}
