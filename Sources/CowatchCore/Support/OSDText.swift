/// Text for mpv's OSD, shown as written.
///
/// mpv expands properties in the argument of `show-text` (and `expand-text`): `${pause}` becomes
/// the property's value, `$>` turns expansion off, `$}` is a literal brace inside `${…}`, and `$$`
/// is one literal `$`. Text that comes from other people (names, titles, URLs, reasons) must not
/// be expanded: it could read the player's properties onto the screen or garble the notice.
///
/// Threading: pure functions; any thread.
public enum OSDText {
    /// `text` with every `$` doubled, so that mpv's property expansion turns it back into
    /// exactly `text`. Escape once, right before the `show-text` command: escaping twice shows
    /// `$$`.
    public static func escaped(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "$")) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for character in text.unicodeScalars {
            if character == "$" { result.unicodeScalars.append("$") }
            result.unicodeScalars.append(character)
        }
        return result
    }
}
