import CowatchCore
import Testing

@Suite("Did you mean")
struct SuggestionTests {
    @Test("the closest candidate within two edits; none when nothing is close or the word is exact")
    func closest() {
        let commands = ["pause", "play", "participants", "seek", "status", "speed"]
        #expect(Suggestion.closest(to: "paus", among: commands) == "pause")
        #expect(Suggestion.closest(to: "staus", among: commands) == "status")
        #expect(Suggestion.closest(to: "xyzzy", among: commands) == nil)
        #expect(Suggestion.closest(to: "pause", among: commands) == nil)
        #expect(Suggestion.closest(to: "--room-secret", among: ["--room", "--room-secret-file"], maxDistance: 5) == "--room-secret-file")
        #expect(Suggestion.distance("kitten", "sitting") == 3)
        #expect(Suggestion.distance("", "abc") == 3)
    }
}

@Suite("Did you mean: commands")
struct CommandSuggestionTests {
    @Test("a swapped pair counts one edit; a prefix of one command names it; short words guess nothing")
    func nearest() {
        let commands = ["pause", "play", "participants", "seek", "status", "speed"]
        #expect(Suggestion.nearest("apuse", among: commands) == ["pause"])
        #expect(Suggestion.nearest("partic", among: commands) == ["participants"])
        #expect(Suggestion.nearest("p", among: commands).isEmpty)
    }
}
