/// What a subtitle attachment holds, judged by its first bytes before the player sees it.
///
/// mpv picks a demuxer by content (and by file name): a peer's "subtitles" that are really an
/// mpv EDL file, a playlist or an HLS manifest would make every player open whatever they name —
/// a URL on the sender's server, revealing each viewer's address. Only the text formats people
/// share subtitles in are let through, each recognised by its own header or first cue; the file
/// is then handed to the player under a name of our own with that format's extension.
///
/// Threading: pure functions.
public enum SubtitleContent {
    public enum Format: String, Sendable, Hashable {
        case srt, ass, vtt

        /// The extension the player's copy is saved under.
        public var fileExtension: String { rawValue }
    }

    /// How much of the file is read to decide.
    public static let headBytes = 4096

    /// The format of a file starting with `head`, or nil when it is none of SRT, ASS/SSA and
    /// WebVTT (or holds a reference mpv would follow: `# mpv EDL`, `#EXTM3U`, `edl://`).
    public static func format(of head: [UInt8]) -> Format? {
        let text = decodedHead(head)
        let lower = text.lowercased()
        for reference in ["# mpv edl", "#extm3u", "edl://", "[playlist]", "<?xml", "<mpd", "memory://", "file://"] where lower.contains(reference) {
            return nil
        }
        let lines = text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters() }.filter { !$0.isEmpty }
        guard let first = lines.first else { return nil }
        if first.lowercased().hasPrefix("[script info]") { return .ass }
        if first.hasPrefix("WEBVTT") { return .vtt }
        // SRT: a cue number, then "00:00:01,000 --> 00:00:04,000".
        if first.allSatisfy(\.isASCIIDigit), lines.count >= 2, isSRTTiming(lines[1]) { return .srt }
        return nil
    }

    static func isSRTTiming(_ line: Substring) -> Bool {
        let parts = line.components(separatedBy: "-->")
        guard parts.count == 2 else { return false }
        return parts.allSatisfy { part in
            let stamp = part.trimmingCharacters()
            return stamp.count >= 8 && stamp.prefix(8).enumerated().allSatisfy { index, character in
                index == 2 || index == 5 ? character == ":" : character.isASCIIDigit
            }
        }
    }

    /// The head as text: UTF-8 (a BOM dropped); UTF-16 with a BOM read as its ASCII subset.
    static func decodedHead(_ head: [UInt8]) -> String {
        var bytes = Array(head.prefix(headBytes))
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
            let little = bytes[0] == 0xFF
            let units = stride(from: 2, to: bytes.count - 1, by: 2).map { little ? bytes[$0] : bytes[$0 + 1] }
            bytes = units
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

extension Substring {
    fileprivate func trimmingCharacters() -> Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\u{FEFF}" }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else { return self[endIndex...] }
        return self[start...end]
    }

    fileprivate func components(separatedBy separator: String) -> [Substring] {
        var parts: [Substring] = []
        var rest = self[...]
        while let range = rest.firstRange(of: separator) {
            parts.append(rest[..<range.lowerBound])
            rest = rest[range.upperBound...]
        }
        parts.append(rest)
        return parts
    }
}
