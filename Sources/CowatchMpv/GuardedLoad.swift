import CowatchCore

/// `loadfile URL replace` with mpv's own safety on for media from the network (issue 22, item 8).
///
/// A network URL is loaded with the file-local options `access-references=no` (mpv follows no
/// reference inside what it opens: no playlist expansion, no EDL segments, no ordered chapters
/// or reference files pointing elsewhere) and `load-unsafe-playlists=no` (whatever the user set,
/// a list from the network never names a local file). A room's media is one film: a URL that
/// turns out to be a list of other URLs fails to load, and the daemon says so, instead of the
/// player fetching whatever the list names. Local paths (this viewer's own files) load as mpv
/// would load them.
///
/// mpv takes file-local options as `loadfile`'s third argument up to 0.37 and as its fourth
/// (after an index) since 0.38; each form is refused by the other mpv, so the first that is
/// accepted is the right one, never a misread one.
///
/// Threading: as `MediaPlayer.commandReturning` (any thread). Errors: mpv's refusal of the load.
extension MediaPlayer {
    /// The file-local options a network URL is loaded with.
    public static var networkLoadOptions: String { "access-references=no,load-unsafe-playlists=no" }

    public func loadGuarded(_ url: String) throws(MpvError) -> MpvNode {
        guard OpenPolicy.networkScheme(of: url) != nil else { return try commandReturning(["loadfile", url, "replace"]) }
        do {
            return try commandReturning(["loadfile", url, "replace", Self.networkLoadOptions])
        } catch {
            return try commandReturning(["loadfile", url, "replace", "-1", Self.networkLoadOptions])
        }
    }
}
