/// File names of attachments: what a peer sends is a name, never a path.
///
/// A safe name is 1–`maxBytes` bytes of UTF-8, has no `/`, `\`, NUL or other control characters,
/// does not start with `.` (no `..`, no hidden files) and does not end in a space or dot. Both
/// sides check it: the uploader's daemon sanitises, the server and every receiver refuse
/// anything else as a `protocol-violation`.
///
/// Threading: pure functions.
public enum AttachmentName {
    public static let maxBytes = 255

    /// True when `name` can be used as a file name as is.
    public static func isSafe(_ name: String) -> Bool {
        guard (1...maxBytes).contains(name.utf8.count), let first = name.first, first != ".",
            let last = name.last, last != " ", last != "."
        else { return false }
        return !name.unicodeScalars.contains(where: isForbidden)
    }

    /// A safe name made from `raw` (a path's last component, forbidden characters replaced by
    /// `_`, cut to `maxBytes` keeping the extension); nil when nothing usable is left.
    public static func sanitised(_ raw: String) -> String? {
        let base = raw.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var scalars = String.UnicodeScalarView()
        for scalar in base.unicodeScalars { scalars.append(isForbidden(scalar) ? "_" : scalar) }
        var name = String(scalars)
        while name.hasPrefix(".") { name.removeFirst() }
        while name.hasSuffix(".") || name.hasSuffix(" ") { name.removeLast() }
        if name.utf8.count > maxBytes {
            let dot = name.lastIndex(of: ".")
            let ext = dot.map { String(name[$0...]) } ?? ""
            let keep = ext.utf8.count <= 16 ? ext : ""
            var stem = ""
            for character in name.dropLast(keep.count) {
                if stem.utf8.count + character.utf8.count + keep.utf8.count > maxBytes { break }
                stem.append(character)
            }
            name = stem + keep
        }
        return isSafe(name) ? name : nil
    }

    static func isForbidden(_ scalar: Unicode.Scalar) -> Bool {
        // Bidirectional overrides would make "evil\u{202E}txt.srt" read as something else.
        scalar == "/" || scalar == "\\" || ControlCharacters.isUnfitForDisplay(scalar)
    }
}
