@testable import CowatchCore
import Testing

/// A late joiner's chat history keeps what the room's people said, whatever a burst of lines or
/// of cheap identities sends after it.
@Suite("Chat history: the noisiest lose their lines first")
struct ChatHistoryFairnessTests {
    @Test("ten bursting identities do not push two people's lines out of the 50 kept")
    func burstKeepsPeople() {
        var history: [ChatLine] = []
        for (from, text) in [("alice", "shall we start?"), ("bob", "yes, go"), ("alice", "playing")] {
            history.append(ChatLine(from: from, text: text))
            RoomSequencer.trimChatHistory(&history, to: 50)
        }
        for round in 0..<100 {
            for bot in 0..<10 {
                history.append(ChatLine(from: "bot\(bot)", text: "spam \(round)"))
                RoomSequencer.trimChatHistory(&history, to: 50)
            }
        }
        #expect(history.count == 50)
        #expect(history.filter { $0.from == "alice" }.map(\.text) == ["shall we start?", "playing"])
        #expect(history.filter { $0.from == "bob" }.count == 1)
        // The bots share what is left, and each keeps its newest lines.
        #expect(history.filter { $0.from == "bot0" }.last?.text == "spam 99")
    }

    @Test("one talkative person's oldest lines go first; order is kept")
    func orderKept() {
        var history = (0..<5).map { ChatLine(from: "ann", text: "\($0)") } + [ChatLine(from: "ben", text: "hi")]
        RoomSequencer.trimChatHistory(&history, to: 4)
        #expect(history.map(\.text) == ["2", "3", "4", "hi"])
    }
}
