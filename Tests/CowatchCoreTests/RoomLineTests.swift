import Testing

@testable import CowatchCore

@Suite("The room line")
struct RoomLineTests {
    @Test("who is here, who is not ready, whom the group waits for, who is not waited for")
    func line() {
        let participants = [
            ParticipantInfo(name: "alice", state: "joined", status: .init(ready: true), role: .owner),
            ParticipantInfo(name: "bob", state: "joined", status: .init(stall: .buffering, ready: true)),
            ParticipantInfo(name: "carol", state: "joined", status: .init(ready: false, waitForMe: false), role: .operator),
        ]
        #expect(
            RoomLine.text(room: "movie", participants: participants, policy: RoomPolicy(playWhenReady: true))
                == "movie · 3 here: alice (owner), bob, carol (operator) · not ready: carol · waiting for bob (buffering) · not waited for: carol")
        // Readiness matters only when the room plays when everyone is ready.
        #expect(!RoomLine.text(room: "movie", participants: participants, policy: RoomPolicy()).contains("not ready"))
    }

    @Test("a crowd is cut short")
    func crowd() {
        let many = (1...20).map { ParticipantInfo(name: "p\($0)", state: "joined") }
        let text = RoomLine.text(room: "big", participants: many, policy: RoomPolicy())
        #expect(text.hasSuffix("p12 and 8 more"))
        #expect(text.hasPrefix("big · 20 here: p1, p2"))
    }
}
