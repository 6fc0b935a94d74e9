import CowatchCore
import Testing

/// Issue 22 item 11: invisibles that make one person's line read as another's.
@Suite("Text that could pass for someone else's")
struct DeceptiveTextTests {
    static let deceptive = ["\u{202E}", "\u{2067}", "\u{2069}", "\u{200E}", "\u{200B}", "\u{FEFF}", "\u{2028}", "\u{2029}", "\u{2060}"]

    @Test("chat refuses bidirectional overrides, isolates, marks, zero-width spaces, BOM and separators", arguments: deceptive)
    func chatRefuses(invisible: String) {
        #expect(throws: CowatchError.self) { try ChatLine.checked("hi \(invisible)<alice> yes") }
    }

    @Test("joiners that scripts and emoji need stay; plain text passes")
    func joinersStay() throws {
        #expect(try ChatLine.checked("family 👨\u{200D}👩\u{200D}👧") == "family 👨\u{200D}👩\u{200D}👧")
        #expect(try ChatLine.checked("می\u{200C}خواهم") == "می\u{200C}خواهم")
    }

    @Test("a chat line from the wire with an override is a protocol violation; a title of our own is cleaned")
    func wireAndTitles() {
        let line = Array(#"{"type":"chat","id":1,"text":"x\u202Ey"}"#.utf8)
        #expect(throws: CowatchError.self) { try ClientMessage.decode(line: line) }
        #expect(Activity.clampedTitle("Night\u{202E}vokiM") == "NightvokiM")
        #expect(ControlCharacters.isDeceptive("\u{202E}") && !ControlCharacters.isDeceptive("a"))
    }
}
