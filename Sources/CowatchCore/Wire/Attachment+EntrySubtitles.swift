/// Subtitles for one entry of the room's playlist: an attachment whose metadata says
/// `{"kind": "entry-subtitles", "entry": ID}`, where ID is the entry's id (the server's, stable
/// across moves). Each player adds them when that entry plays, and only then.
///
/// A kind of its own rather than `subtitles` plus a field: a daemon that predates it reads the
/// kind as "not subtitles" and lists the attachment without loading it, instead of showing one
/// episode's subtitles over every other (the room's features need not change for it).
extension Attachment {
    /// `meta.kind` of subtitles for one playlist entry.
    public static let entrySubtitlesKind = "entry-subtitles"

    /// The playlist entry these subtitles are for; nil for any other attachment, or a peer's
    /// `entry` that is no entry id (not a whole number from 1 to 2^53).
    public var subtitlesEntry: PlaylistEntry.ID? {
        guard meta?["kind"]?.stringValue == Self.entrySubtitlesKind, let number = meta?["entry"]?.numberValue,
            number >= 1, number <= 9_007_199_254_740_992, number.rounded() == number
        else { return nil }
        return PlaylistEntry.ID(number)
    }

    /// The metadata that makes an attachment subtitles for `entry`: `meta` (an uploader's own
    /// object, or nil) with its `kind` and `entry` set.
    public static func entrySubtitlesMeta(_ entry: PlaylistEntry.ID, adding meta: JSONValue?) -> JSONValue {
        var fields = meta?.objectValue ?? [:]
        fields["kind"] = .string(entrySubtitlesKind)
        fields["entry"] = .number(Double(entry))
        return .object(fields)
    }
}
