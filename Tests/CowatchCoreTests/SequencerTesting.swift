@testable import CowatchCore

/// Helpers shared by the sequencer's test suites.
protocol SequencerTesting {}

extension SequencerTesting {
    typealias Output = RoomSequencer.Output

    /// A sequencer with `names` joined to room "r" on connections 1…n at time 0; outputs discarded.
    /// The first is the room's creator (its owner). These participants never go silent, so the
    /// idle timeout is off (`ServerAdmissionTests` covers it).
    func room(_ names: [String], configuration: RoomSequencer.Configuration = .init()) -> RoomSequencer {
        var configuration = configuration
        configuration.admission.idleTimeout = 1e9
        var sequencer = RoomSequencer(configuration: configuration)
        for (index, name) in names.enumerated() {
            _ = sequencer.enter(.hello(.init(room: "r", name: name, activity: Activity(url: "/films/night.mkv"))), from: index + 1, now: 0)
        }
        return sequencer
    }

    func messages(_ outputs: [Output], to id: Int) -> [ServerMessage] {
        outputs.compactMap { output -> ServerMessage? in
            switch output {
            case .send(id, let message), .sendMessage(id, let message, _): message
            default: nil
            }
        }
    }

    func applied(_ outputs: [Output], to id: Int) -> [GroupTimeline] {
        messages(outputs, to: id).compactMap { if case .applied(let timeline, _, _, _) = $0 { timeline } else { nil } }
    }
}

extension RoomSequencer {
    /// Connects `id` (if new) and runs the whole handshake for `hello` without a secret:
    /// the outputs after the challenge (welcome or refusal, notices).
    mutating func enter(_ hello: ClientMessage, from id: Int, now: Double, auth: ClientMessage.Auth = .init()) -> [Output] {
        if admission.address(of: id) == nil { _ = connected(id, now: now) }
        let greeting = received(hello, from: id, now: now)
        guard case .send(id, .challenge) = greeting.first else { return greeting }
        return received(.auth(auth), from: id, now: now)
    }

    /// Decodes a line as the shell does, and hands it over.
    mutating func receivedLine(_ line: [UInt8], from id: Int, now: Double) -> [Output] {
        do {
            return received(try ClientMessage.decode(line: line), from: id, now: now)
        } catch {
            return rejected(id, error, now: now)
        }
    }
}
