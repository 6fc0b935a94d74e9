import CowatchCore
import Testing

@Suite("Leaving the room leaves no drift nudge behind")
struct LeaveSpeedTests {
    @Test("reset sets a nudged player back to the group's rate, and does nothing for one already there")
    func resetSpeed() {
        var coordinator = RoomCoordinator(name: "a", room: "r", activity: Activity(url: "a.mkv"))
        #expect(coordinator.reset(playerSpeed: 0.989) == [.player(.setSpeed(1))])
        #expect(coordinator.reset(playerSpeed: 1).isEmpty)
        #expect(coordinator.reset(playerSpeed: nil).isEmpty)
    }
}
