/// Control characters: what no text from a peer may carry (it could drive a terminal, mpv's
/// OSD or a log reader).
public enum ControlCharacters {
    /// C0 (U+0000–U+001F), DEL (U+007F) and C1 (U+0080–U+009F).
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value)
    }

    /// True when `text` has none.
    public static func isClean(_ text: String) -> Bool {
        !text.unicodeScalars.contains(where: isControl)
    }
}
