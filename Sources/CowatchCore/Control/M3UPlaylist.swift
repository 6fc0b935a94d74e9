/// Media a daemon proposes for a new room's playlist (`cowatchd a.mkv b.mkv c.mkv`,
/// `cowatchd --playlist FILE.m3u`), and the M3U reader that yields them.
///
/// A seed is a `PlaylistCommand.Source` made absolute: a local file by its absolute path (the
/// daemon sends its identity, never the path) or a network URL of a scheme a room may open.
/// Pure: no file is read here (the daemon reads the playlist file, bounded, and hands over its
/// bytes); nothing checks that a file exists.
///
/// Threading: value types and static functions, safe anywhere.

/// One medium for a new room's playlist, with the title an M3U gave it.
public struct PlaylistSeed: Sendable, Hashable {
    public var source: PlaylistCommand.Source
    /// The title an `#EXTINF` line gave it (1–200 characters, nothing invisible); nil: none (the
    /// entry shows its file's name or the URL's last component).
    public var title: String?

    public init(source: PlaylistCommand.Source, title: String? = nil) {
        self.source = source
        self.title = title
    }

    /// `media` as mpv takes it: an absolute path, a path relative to `directory` (an absolute
    /// folder), a `file:///…` URL, or a network URL (http, https, …). `.` and `..` in a path are
    /// resolved by name.
    ///
    /// Errors: `invalid-configuration` for anything else (mpv's own sources such as `av://` or
    /// `dvd://`, a `file:` URL with a host, control characters, over `Source.maxBytes` bytes),
    /// saying which rule it breaks and never repeating the text.
    public init(media: String, relativeTo directory: String, title: String? = nil) throws(CowatchError) {
        guard !media.isEmpty, ControlCharacters.isClean(media) else {
            throw CowatchError(.invalidConfiguration, "a media path or URL is 1–\(PlaylistCommand.Source.maxBytes) bytes without control characters")
        }
        let text: String
        if RoomSequencer.isNetworkURL(media) {
            text = media
        } else if media.lowercased().hasPrefix("file:") {
            guard let path = MediaFingerprint.localPath(of: media), path.hasPrefix("/") else {
                throw CowatchError(.invalidConfiguration, "a file: URL names a file of this machine as file:///path")
            }
            text = Self.normalisedPath(path, relativeTo: directory)
        } else if media.contains("://") {
            throw CowatchError(
                .invalidConfiguration,
                "a room's playlist holds files and network URLs (http, https, …), not mpv's other sources (\(Self.scheme(of: media))://)")
        } else {
            text = Self.normalisedPath(media, relativeTo: directory)
        }
        let source: PlaylistCommand.Source
        do {
            source = try PlaylistCommand.Source(checking: text)
        } catch {
            throw CowatchError(.invalidConfiguration, error.message)
        }
        self.init(source: source, title: title)
    }

    /// `path` made absolute against `directory`, with `.`, `..` and repeated slashes resolved by
    /// name (links are left alone).
    public static func normalisedPath(_ path: String, relativeTo directory: String) -> String {
        let full = path.hasPrefix("/") ? path : directory + "/" + path
        var components: [Substring] = []
        for component in full.split(separator: "/") {
            switch component {
            case ".": continue
            case "..": _ = components.popLast()
            default: components.append(component)
            }
        }
        return "/" + components.joined(separator: "/")
    }

    /// The scheme of a `scheme://…` text, at most 16 characters of it (for messages).
    static func scheme(of text: String) -> String {
        String(text.prefix { $0 != ":" }.prefix(16))
    }
}

/// An M3U or M3U8 playlist read into seeds: one path or URL a line; lines starting with `#` are
/// comments (`#EXTM3U`, `#EXTVLCOPT`, …), except that an `#EXTINF:SECONDS,TITLE` line gives the
/// next entry its title (one that is empty, too long or holds control characters or invisibles is
/// left out, never an error). A relative path is relative to the playlist's own folder. A UTF-8
/// byte-order mark, CRLF or CR line ends, blank lines and blanks around a line are tolerated.
/// What `cowatch playlist save` writes reads back.
///
/// Bounded: at most `maxBytes` bytes and `maxEntries` entries (a room's playlist holds no more).
public enum M3UPlaylist {
    /// The largest playlist file read: 500 entries of 2 KiB each, with room for titles.
    public static let maxBytes = 1 << 20
    /// The most entries: a room's playlist holds no more.
    public static let maxEntries = PlaylistState.maxEntries

    /// The entries of the playlist whose bytes are `bytes`, in order; `directory` is the absolute
    /// folder the file is in.
    ///
    /// Errors (messages name the line, never repeat its text): `invalid-configuration` for a file
    /// over `maxBytes`, one that is not UTF-8 text or holds NUL bytes, an entry line with control
    /// characters or over `PlaylistCommand.Source.maxBytes` bytes, an entry that is neither a
    /// file nor a network URL (mpv's other sources), or a file with no entries; `playlist-full`
    /// for more than `maxEntries` entries.
    public static func parse(_ bytes: [UInt8], directory: String) throws(CowatchError) -> [PlaylistSeed] {
        guard bytes.count <= maxBytes else {
            throw CowatchError(.invalidConfiguration, "the file is larger than \(maxBytes / 1024) KiB: a room's playlist holds at most \(maxEntries) entries")
        }
        guard !bytes.contains(0) else {
            throw CowatchError(.invalidConfiguration, "the file holds NUL bytes: it is not a text playlist (an M3U: one path or URL a line)")
        }
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        let text = String(decoding: body, as: UTF8.self)
        guard text.utf8.elementsEqual(body) else {
            throw CowatchError(.invalidConfiguration, "the file is not UTF-8 text: save it as UTF-8 (an .m3u8)")
        }
        var seeds: [PlaylistSeed] = []
        var title: String?
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
        for (index, raw) in lines.enumerated() {
            let number = index + 1
            let entry = String(Self.trimmed(raw))
            if entry.isEmpty { continue }
            if entry.hasPrefix("#") {
                if entry.hasPrefix("#EXTINF:") { title = Self.title(ofExtinf: entry) }
                continue
            }
            guard entry.utf8.count <= PlaylistCommand.Source.maxBytes else {
                throw CowatchError(.invalidConfiguration, "line \(number) is longer than \(PlaylistCommand.Source.maxBytes) bytes")
            }
            guard ControlCharacters.isClean(entry) else {
                throw CowatchError(.invalidConfiguration, "line \(number) holds control characters")
            }
            guard seeds.count < maxEntries else {
                throw CowatchError(.playlistFull, "the file holds more than \(maxEntries) entries: a room's playlist holds at most \(maxEntries)")
            }
            do {
                seeds.append(try PlaylistSeed(media: entry, relativeTo: directory, title: title))
            } catch {
                throw CowatchError(error.code, "line \(number): \(error.message)")
            }
            title = nil
        }
        guard !seeds.isEmpty else {
            throw CowatchError(.invalidConfiguration, "the file holds no entries (an M3U: one path or URL a line; # starts a comment)")
        }
        return seeds
    }

    /// The title of `#EXTINF:SECONDS[ ATTRIBUTES],TITLE`: what follows the first comma, trimmed;
    /// nil when there is none, or when it could not be a playlist entry's title.
    static func title(ofExtinf line: String) -> String? {
        guard let comma = line.firstIndex(of: ",") else { return nil }
        let title = String(trimmed(line[line.index(after: comma)...]))
        guard !title.isEmpty, title.count <= PlaylistEntry.maxTitleCharacters, title.utf8.count <= PlaylistEntry.maxTitleBytes,
            !title.unicodeScalars.contains(where: ControlCharacters.isUnfitForDisplay)
        else { return nil }
        return title
    }

    /// `text` without the blanks (spaces and tabs) around it.
    static func trimmed(_ text: Substring) -> Substring {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !isBlank($0) }), let last = text.lastIndex(where: { !isBlank($0) }) else { return "" }
        return text[first...last]
    }
}
