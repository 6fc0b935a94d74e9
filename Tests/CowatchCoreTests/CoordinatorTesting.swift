@testable import CowatchCore

extension RoomCoordinator {
    /// A coordinator named `name`, welcomed into room r (paused at 0) by a server that speaks
    /// `features`: the participant side's suites start from here.
    static func welcomed(name: String, activity: Activity, features: [String] = WireFeature.all) -> RoomCoordinator {
        var coordinator = RoomCoordinator(name: name, room: "r", activity: activity)
        _ = coordinator.connected(now: 0)
        _ = coordinator.received(.challenge(.init(features: features, nonce: String(repeating: "1", count: 64), access: .open)), now: 0)
        let timeline = GroupTimeline(seq: 1, position: 0, reference: 0, rate: 1, playing: false)
        _ = coordinator.received(.welcome(.init(name: name, room: "r", timeline: timeline, participants: [], activity: activity)), now: 0)
        return coordinator
    }
}
