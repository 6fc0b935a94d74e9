import Configuration
import CowatchCore
import CowatchNet
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Several media and `--playlist FILE.m3u`: what seeds a new room's playlist.
///
/// `cowatchd a.mkv b.mkv c.mkv` plays `a.mkv` (the first is the media, as with one) and proposes
/// all three for the room's playlist; `--playlist FILE` (flag, `COWATCH_PLAYLIST`, or `playlist`
/// in the config file) adds the entries of an M3U after them, and when no media is given anywhere
/// its first entry is the media. The daemon proposes them only to a room whose list is empty
/// (`RoomSession+PlaylistSeed.swift`).
///
/// Threading: called once, at start-up (blocking reads of a small file and `open`s).
extension DaemonConfiguration {
    /// The seeds: the media given as arguments when there are two or more, or any with a
    /// playlist file; then the playlist file's entries. Paths are made absolute (arguments from
    /// the working directory, M3U lines from the M3U's folder). The playlist file is the flag's
    /// (relative to the working directory), else `COWATCH_PLAYLIST`'s (the same), else the config
    /// file's `playlist` (relative to the config file's folder); an empty value is none.
    ///
    /// Errors: `invalid-configuration` (a medium that cannot be an entry: mpv's own sources such
    /// as `av://`, control characters; a playlist file that is missing, unreadable, not a regular
    /// file, over `M3UPlaylist.maxBytes`, or malformed, naming the line; `playlist` of the wrong
    /// type); `playlist-full` (more than `M3UPlaylist.maxEntries` seeds in all).
    static func loadPlaylistSeeds(
        flags: DaemonFlags, environment: [String: String], layered: LayeredConfig, configFile: String
    ) throws(CowatchError) -> [PlaylistSeed] {
        let workingDirectory = FileManager.default.currentDirectoryPath
        let playlist = try playlistFile(flags: flags, environment: environment, layered: layered, configFile: configFile)
        guard flags.mediaList.count >= 2 || playlist != nil else { return [] }
        guard flags.mediaList.count <= M3UPlaylist.maxEntries else {
            throw CowatchError(.playlistFull, "\(flags.mediaList.count) media given: a room's playlist holds at most \(M3UPlaylist.maxEntries)")
        }
        var seeds: [PlaylistSeed] = []
        for (index, media) in flags.mediaList.enumerated() {
            do {
                seeds.append(try PlaylistSeed(media: media, relativeTo: workingDirectory))
            } catch {
                throw CowatchError(error.code, "media #\(index + 1)\(shown(media)) cannot go in a room's playlist: \(error.message)")
            }
        }
        if let playlist {
            let directory = (playlist as NSString).deletingLastPathComponent
            do {
                seeds += try M3UPlaylist.parse(try readPlaylistFile(playlist), directory: directory.isEmpty ? "/" : directory)
            } catch {
                throw CowatchError(error.code, "playlist \(playlist): \(error.message)")
            }
        }
        guard seeds.count <= M3UPlaylist.maxEntries else {
            throw CowatchError(
                .playlistFull, "\(seeds.count) media and playlist entries in all: a room's playlist holds at most \(M3UPlaylist.maxEntries)")
        }
        return seeds
    }

    /// The playlist file's absolute path, if one is given (see `loadPlaylistSeeds`).
    static func playlistFile(
        flags: DaemonFlags, environment: [String: String], layered: LayeredConfig, configFile: String
    ) throws(CowatchError) -> String? {
        let workingDirectory = FileManager.default.currentDirectoryPath
        var path: String?
        var base = workingDirectory
        if let flag = flags.playlist, !flag.isEmpty {
            path = flag
        } else if let variable = environment["COWATCH_PLAYLIST"], !variable.isEmpty {
            path = variable
        } else if let file = layered.sources.last {
            let key = ConfigKey(stringLiteral: "playlist")
            if let text = file.reader.string(forKey: key) {
                path = text.isEmpty ? nil : text
            } else if file.reader.stringArray(forKey: key) != nil || file.reader.double(forKey: key) != nil
                || file.reader.int(forKey: key) != nil || file.reader.bool(forKey: key) != nil
            {
                throw CowatchError(.invalidConfiguration, "playlist from \(file.name) must be a string: the path of an M3U file")
            }
            base = (configFile as NSString).deletingLastPathComponent
            if !base.hasPrefix("/") { base = workingDirectory + "/" + base }
        }
        guard let path else { return nil }
        guard path.utf8.count <= 4096, ControlCharacters.isClean(path) else {
            throw CowatchError(.invalidConfiguration, "playlist must be a path of at most 4096 bytes without control characters")
        }
        return PlaylistSeed.normalisedPath(path, relativeTo: base)
    }

    /// The bytes of the playlist file at `path`, at most `M3UPlaylist.maxBytes` and one more
    /// (the parser refuses a longer file). Never blocks on a FIFO or a device: only a regular
    /// file is read. Errors: `invalid-configuration` (missing, unreadable, not a regular file,
    /// larger than the bound).
    static func readPlaylistFile(_ path: String) throws(CowatchError) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard descriptor >= 0 else {
            if errno == ENOENT || errno == ENOTDIR { throw CowatchError(.invalidConfiguration, "the file does not exist") }
            throw CowatchError(.invalidConfiguration, "cannot open it: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw CowatchError(.invalidConfiguration, "it is not a regular file")
        }
        guard Int(status.st_size) <= M3UPlaylist.maxBytes else {
            throw CowatchError(
                .invalidConfiguration,
                "the file is larger than \(M3UPlaylist.maxBytes / 1024) KiB: a room's playlist holds at most \(M3UPlaylist.maxEntries) entries")
        }
        return try SecretFileRead.bytes(of: descriptor, limit: M3UPlaylist.maxBytes, what: "the file")
    }

    /// Keeps `seeds` in `configuration` (with the index of the one that is its media), after
    /// checking that seeds have a room to go to and that every file among them can be read now.
    /// Errors: `invalid-configuration` (seeds without `--host` or `--join`),
    /// `media-unavailable` (a file that is missing, unreadable or not a regular file, named).
    static func adoptPlaylistSeeds(_ seeds: [PlaylistSeed], into configuration: inout DaemonConfiguration) throws(CowatchError) {
        guard !seeds.isEmpty else { return }
        guard configuration.room != nil else {
            throw CowatchError(
                .invalidConfiguration,
                "several media (or --playlist) fill a room's shared playlist: give --host or --join too (alone, cowatchd plays one media)")
        }
        for seed in seeds {
            if case .file(let path) = seed.source { try checkReadable(path) }
        }
        configuration.playlistSeeds = seeds
        let own = try? PlaylistSeed(media: configuration.media, relativeTo: FileManager.default.currentDirectoryPath)
        configuration.playlistSeedCurrent = own.flatMap { own in seeds.firstIndex { $0.source == own.source } }
    }

    /// `path` is a regular file this user may read. Errors: `media-unavailable`, naming it.
    static func checkReadable(_ path: String) throws(CowatchError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard descriptor >= 0 else {
            let reason = errno == ENOENT || errno == ENOTDIR ? "no such file" : String(cString: strerror(errno))
            throw CowatchError(.mediaUnavailable, "cannot open \(path): \(reason)")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw CowatchError(.mediaUnavailable, "cannot open \(path): not a regular file")
        }
    }

    /// ` (TEXT)` for a message, when `text` is short and clean enough to repeat; else nothing.
    private static func shown(_ text: String) -> String {
        text.utf8.count <= 200 && ControlCharacters.isClean(text) ? " (\(text))" : ""
    }
}
