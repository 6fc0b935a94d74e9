import CowatchCore
import Foundation

/// `--media-dir`: the folders whose films the room's playlist may name by identity.
extension DaemonConfiguration {
    /// The most folders `media-dir` may name.
    public static let maxMediaDirectories = 64

    /// The media folders: the flags' (`--media-dir`, repeatable) if any were given, else
    /// `COWATCH_MEDIA_DIRS` (colon-separated, as `PATH`: folder names often hold commas), else the
    /// config file's `media-dir` (a string or a list). A leading `~` is the home directory
    /// (`HOME`); a relative path is taken from the working directory, or, in the config file, from
    /// the file's folder. Trailing slashes go, duplicates and empty values are dropped. Whether a
    /// folder exists is not checked here: a missing one is a warning when it is scanned
    /// (`MediaDirectoryIndexer`), never a start-up error.
    ///
    /// Errors: `invalid-configuration` (a value of the wrong type, a path over 4096 bytes or with
    /// control characters, more than `maxMediaDirectories` folders).
    static func loadMediaDirectories(
        flags: DaemonFlags, environment: [String: String], layered: LayeredConfig, configFile: String
    ) throws(CowatchError) -> [String] {
        let workingDirectory = FileManager.default.currentDirectoryPath
        var texts = flags.mediaDirectories
        var base = workingDirectory
        if texts.isEmpty, let variable = environment["COWATCH_MEDIA_DIRS"] {
            texts = variable.split(separator: ":").map(String.init)
        }
        if texts.isEmpty {
            texts = try layered.stringArray("media-dir", in: 2)
            base = (configFile as NSString).deletingLastPathComponent
            if !base.hasPrefix("/") { base = workingDirectory + "/" + base }
        }
        var directories: [String] = []
        for text in texts where !text.isEmpty {
            guard text.utf8.count <= 4096, !text.unicodeScalars.contains(where: ControlCharacters.isControl) else {
                throw CowatchError(.invalidConfiguration, "media-dir must be a path of at most 4096 bytes without control characters")
            }
            let path = normalisedDirectory(text, home: environment["HOME"], base: base)
            if !directories.contains(path) { directories.append(path) }
            guard directories.count <= maxMediaDirectories else {
                throw CowatchError(.invalidConfiguration, "media-dir: at most \(maxMediaDirectories) folders")
            }
        }
        return directories
    }

    /// `~` and `~/…` from `home`, a relative path from `base`, `.`, `..` and repeated or trailing
    /// slashes resolved by name (links are left for the scan to follow).
    static func normalisedDirectory(_ text: String, home: String?, base: String) -> String {
        var path = text
        if let home, !home.isEmpty, path == "~" || path.hasPrefix("~/") {
            path = home + path.dropFirst()
        }
        if !path.hasPrefix("/") { path = base + "/" + path }
        var components: [Substring] = []
        for component in path.split(separator: "/") {
            switch component {
            case ".": continue
            case "..": _ = components.popLast()
            default: components.append(component)
            }
        }
        return "/" + components.joined(separator: "/")
    }
}
