@testable import CowatchCore

/// Helpers shared by the sequencer's test suites.
protocol SequencerTesting {}

extension SequencerTesting {
    typealias Output = RoomSequencer.Output

    /// A sequencer with `names` joined to room "r" on connections 1…n at time 0; outputs discarded.
    func room(_ names: [String], configuration: RoomSequencer.Configuration = .init()) -> RoomSequencer {
        var sequencer = RoomSequencer(configuration: configuration)
        for (index, name) in names.enumerated() {
            sequencer.connected(index + 1, now: 0)
            _ = sequencer.received(.hello(.init(room: "r", name: name, activity: Activity(url: "/films/night.mkv"))), from: index + 1, now: 0)
        }
        return sequencer
    }

    func messages(_ outputs: [Output], to id: Int) -> [ServerMessage] {
        outputs.compactMap { if case .send(id, let message) = $0 { message } else { nil } }
    }

    func applied(_ outputs: [Output], to id: Int) -> [GroupTimeline] {
        messages(outputs, to: id).compactMap { if case .applied(let timeline, _, _, _) = $0 { timeline } else { nil } }
    }
}
