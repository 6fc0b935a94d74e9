/// Control characters: what no text from a peer may carry (it could drive a terminal, mpv's
/// OSD or a log reader), and invisibles that make one line read as another.
public enum ControlCharacters {
    /// C0 (U+0000–U+001F), DEL (U+007F) and C1 (U+0080–U+009F).
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7f...0x9f).contains(scalar.value)
    }

    /// True when `text` has none.
    public static func isClean(_ text: String) -> Bool {
        !text.unicodeScalars.contains(where: isControl)
    }

    /// Invisible characters that change how text around them reads, so that one person's line
    /// can pass for another's ("<alice> …" inside bob's chat line, a name read backwards):
    /// bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), the
    /// direction marks (U+200E, U+200F, U+061C), zero-width space and invisible operators (U+200B,
    /// U+2060–U+2064), the byte-order mark (U+FEFF) and the line and paragraph separators (U+2028,
    /// U+2029). The zero-width joiners (U+200C, U+200D) stay: emoji and many scripts need them.
    public static func isDeceptive(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C, 0x200B, 0x2060...0x2064, 0xFEFF, 0x2028, 0x2029:
            true
        default:
            false
        }
    }

    /// What text shown to people (chat, titles, notices) must not carry: controls and deceptive
    /// invisibles.
    public static func isUnfitForDisplay(_ scalar: Unicode.Scalar) -> Bool {
        isControl(scalar) || isDeceptive(scalar)
    }
}
