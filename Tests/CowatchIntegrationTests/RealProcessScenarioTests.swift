import CowatchTestSupport
import CowatchTesting
import Testing

/// The room scenarios of `RoomScenarios` on real processes: a `cowatch-server` and three
/// `cowatchd`s with headless libmpv on a generated film, in real time. `InProcessScenarioTests`
/// runs the same scenarios in process on a manual clock.
@Suite("Room scenarios on real processes", .serialized, .realProcesses)
struct RealProcessScenarioTests {
    @Test("anyone's pause pauses everyone, on the pauser's frame, and everyone hears who paused")
    func anyonesPause() async throws {
        try await Self.run(room: "scenario-pause") { try await RoomScenarios.anyonesPausePausesEveryone(in: $0) }
    }

    @Test("a seek by one moves all, paused and playing")
    func seekMovesAll() async throws {
        try await Self.run(room: "scenario-seek") { try await RoomScenarios.aSeekByOneMovesAll(in: $0) }
    }

    @Test("a leave and a join: the rest carry on, the one who comes back lands on the group's place")
    func leaveAndJoin() async throws {
        try await Self.run(room: "scenario-leave") { try await RoomScenarios.aLeaveAndAJoin(in: $0) }
    }

    @Test("a speed change by one is everyone's, together")
    func speedForEveryone() async throws {
        try await Self.run(room: "scenario-speed") { try await RoomScenarios.aSpeedChangeIsEveryones(in: $0) }
    }

    /// Runs `scenario` in a new room of alice, bob and carol on the film with audio, and stops
    /// the processes however it ends.
    private static func run(room name: String, _ scenario: (ProcessScenarioRoom) async throws -> Void) async throws {
        let room = try await ProcessScenarioRoom(names: ["alice", "bob", "carol"], media: try await TestMedia.file(.audioVideo), room: name)
        do {
            try await scenario(room)
        } catch {
            await room.stop()
            throw error
        }
        await room.stop()
    }
}
