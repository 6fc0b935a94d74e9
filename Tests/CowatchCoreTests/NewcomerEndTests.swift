@testable import CowatchCore
import Testing

/// In an open room whose owner stepped out, ending it for everyone belongs to those who were
/// watching, not to someone who just came in.
@Suite("Ending an open room without its owner")
struct NewcomerEndTests: SequencerTesting {
    func evening() -> RoomSequencer {
        var configuration = RoomSequencer.Configuration()
        configuration.admission.idleTimeout = 1e9
        var sequencer = RoomSequencer(configuration: configuration)
        _ = sequencer.enter(.hello(.init(room: "r", name: "alice", activity: Activity(url: "night.mkv"))), from: 1, now: 0)
        _ = sequencer.enter(.hello(.init(room: "r", name: "bob", activity: Activity(url: "night.mkv"))), from: 2, now: 5)
        _ = sequencer.disconnected(1, now: 10)  // the owner steps out
        _ = sequencer.enter(.hello(.init(room: "r", name: "mallory", activity: Activity(url: "x.mkv"))), from: 3, now: 20)
        return sequencer
    }

    @Test("a newcomer's end is refused, saying who may; the room goes on")
    func newcomerRefused() {
        var sequencer = evening()
        let outputs = sequencer.received(.end(), from: 3, now: 21)
        guard case .refused(nil, let code, let text) = messages(outputs, to: 3).first else {
            Issue.record("not refused: \(outputs)")
            return
        }
        #expect(code == CowatchError.Code.notPermitted.rawValue)
        #expect(text.contains("joined after others"))
        #expect(messages(outputs, to: 2).isEmpty)
        #expect(!sequencer.snapshot().isEmpty)
    }

    @Test("whoever was watching first may end it")
    func earliestMayEnd() {
        var sequencer = evening()
        let outputs = sequencer.received(.end(), from: 2, now: 21)
        #expect(messages(outputs, to: 3) == [.ended(by: "bob")])
        #expect(sequencer.snapshot().isEmpty)
    }
}
