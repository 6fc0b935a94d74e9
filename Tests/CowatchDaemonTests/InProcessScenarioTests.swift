import CowatchTesting
import Testing

/// The room scenarios of `RoomScenarios`, in this process: a real room server on loopback and
/// three daemons on simulated players, on a manual clock (time moves only as the scenario lets
/// it pass). `RealProcessScenarioTests` runs the same scenarios on real processes.
@Suite("Room scenarios in process, on a manual clock")
struct InProcessScenarioTests {
    @Test("anyone's pause pauses everyone, on the pauser's frame, and everyone hears who paused")
    func anyonesPause() async throws {
        try await Self.run(room: "pause") { try await RoomScenarios.anyonesPausePausesEveryone(in: $0) }
    }

    @Test("a seek by one moves all, paused and playing")
    func seekMovesAll() async throws {
        try await Self.run(room: "seek") { try await RoomScenarios.aSeekByOneMovesAll(in: $0) }
    }

    @Test("a leave and a join: the rest carry on, the one who comes back lands on the group's place")
    func leaveAndJoin() async throws {
        try await Self.run(room: "leave") { try await RoomScenarios.aLeaveAndAJoin(in: $0) }
    }

    @Test("a speed change by one is everyone's, together")
    func speedForEveryone() async throws {
        try await Self.run(room: "speed") { try await RoomScenarios.aSpeedChangeIsEveryones(in: $0) }
    }

    /// Runs `scenario` in a new room of alice, bob and carol, and stops the room however it ends.
    private static func run(room name: String, _ scenario: (InProcessScenarioRoom) async throws -> Void) async throws {
        let room = try await InProcessScenarioRoom(names: ["alice", "bob", "carol"], room: name)
        do {
            try await scenario(room)
        } catch {
            await room.stop()
            throw error
        }
        await room.stop()
    }
}
