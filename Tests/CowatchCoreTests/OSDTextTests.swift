import Testing

@testable import CowatchCore

@Suite("OSD text escaping")
struct OSDTextTests {
    @Test(
        "every $ is doubled once, nothing else changes",
        arguments: [
            ("", ""),
            ("bob paused at 0:01:33", "bob paused at 0:01:33"),
            ("Ca$h", "Ca$$h"),
            ("${pause}", "$${pause}"),
            ("$$", "$$$$"),
            ("$>${volume}", "$$>$${volume}"),
            ("$}", "$$}"),
            ("ends with $", "ends with $$"),
            ("Ünïcødé $ 🎬 $", "Ünïcødé $$ 🎬 $$"),
        ])
    func escapes(text: String, expected: String) {
        #expect(OSDText.escaped(text) == expected)
    }

    @Test("escaping is what mpv's expansion undoes: removing one $ of each pair gives the text back")
    func inverse() {
        let text = "a$b $$c ${time-pos} $> $} $"
        let escaped = OSDText.escaped(text)
        // mpv reads "$$" as "$": undo pairwise, left to right.
        var undone = ""
        var iterator = escaped.makeIterator()
        while let character = iterator.next() {
            if character == "$" {
                #expect(iterator.next() == "$", "an unpaired $ in \(escaped)")
            }
            undone.append(character)
        }
        #expect(undone == text)
    }
}
