/// `end`, `op`/`deop` and `kick`: requests the server answers once, to us alone.
///
/// Threading: part of `RoomCoordinator` (a value type; one owner).
extension RoomCoordinator {
    /// The local user asks the server to end the activity, give or take a role, or remove someone:
    /// returns the message to send and the id its answer carries — `actionApplied(id:)` once
    /// carried out (for `end`: also when someone else's end came first), `actionRefused(id:_:)`
    /// when refused. With a server that speaks `request-ids` the message carries the id; with an
    /// older one, answers are matched in order (`RoomRequestTracker`).
    ///
    /// Refused at once, as `actionRefused` among the returned actions, before the welcome
    /// (`not-in-room`) and while `RoomRequestTracker.capacity` requests wait (`rate-limited`).
    public mutating func ask(_ kind: RoomRequestTracker.Kind) -> (id: Int, actions: [Action]) {
        let id = takeActionID()
        guard welcomed else {
            return (id, [.actionRefused(id: id, CowatchError(.notInRoom, "the room connection is being set up; try again in a moment"))])
        }
        guard !requests.isFull else {
            return (id, [.actionRefused(id: id, CowatchError(
                .rateLimited, "\(RoomRequestTracker.capacity) requests already wait for the room server's answer"))])
        }
        let message = requests.sent(kind, id: id, named: features.contains(WireFeature.requestIDs))
        return (id, [.send(message)])
    }
}
