import CowatchCore

/// Following a cluster's redirects (see `ClusterRoute`): a server that does not host our room
/// answers the hello with `redirect`; the next connection goes there at once, pinned to the
/// certificate key the redirecting server proved, for a few hops at most. Any other end of a
/// connection sends the next attempt back to our own server, which knows where the room is now.
extension RoomSession {
    /// Called for every server message before the coordinator sees it: how the connection ends
    /// when it is a redirect (followed when it comes in place, the link dropped otherwise).
    func clusterReceived(_ message: ServerMessage) -> LinkOutcome? {
        switch message {
        case .redirect(let name, let target):
            guard name == room.room, !isJoined else {
                return .lost(CowatchError(.protocolViolation, "the server redirected us out of place"))
            }
            return .redirected(target)
        case .welcome:
            route.welcomed()
        default:
            break
        }
        return nil
    }

    /// After a connection: `.connect(now)` when it ended in a redirect to follow (the session
    /// machine is not told: we are still on our way in); nil otherwise, with the route back at
    /// our own server. Too many redirects in a row count as a lost link (with its backoff).
    func followRedirect(_ outcome: LinkOutcome, _ end: inout GroupSessionMachine.ConnectionEnd) -> GroupSessionMachine.Next? {
        guard case .redirected(let target) = outcome else {
            route.connectionEnded()
            return nil
        }
        switch route.redirected(to: target, fingerprint: coordinator.serverFingerprint ?? "") {
        case .follow:
            logger.debug("following the cluster's redirect", metadata: ["cowatch.room.server": "\(RoomPlacement.text(of: target))"])
            return .connect(at: clock.now())
        case .giveUp(let error):
            logger.debug("\(error.message)")
            end = .lost
            return nil
        }
    }
}
