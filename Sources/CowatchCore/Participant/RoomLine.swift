/// The room in one line, for the OSD and `cowatch osd`: who is here, who is not ready, whom the
/// group waits for. "movie-night · 3 here: alice (owner), bob, carol · not ready: carol ·
/// waiting for bob (buffering)".
///
/// Threading: pure functions.
public enum RoomLine {
    /// Names shown at most before "and N more": the OSD line must fit a screen.
    public static let maxNames = 12

    public static func text(room: String, participants: [ParticipantInfo], policy: RoomPolicy) -> String {
        var parts = ["\(room) · \(participants.count) here: " + names(participants.map(describe))]
        if policy.playWhenReady {
            let unready = participants.filter { !$0.status.ready }.map(\.name)
            if !unready.isEmpty { parts.append("not ready: " + names(unready)) }
        }
        let stalled = participants.compactMap { participant -> String? in
            guard participant.status.waitForMe, let stall = participant.status.stall else { return nil }
            return "\(participant.name) (\(stall.rawValue))"
        }
        if !stalled.isEmpty { parts.append("waiting for " + names(stalled)) }
        let unwaited = participants.filter { !$0.status.waitForMe }.map(\.name)
        if !unwaited.isEmpty { parts.append("not waited for: " + names(unwaited)) }
        return parts.joined(separator: " · ")
    }

    private static func describe(_ participant: ParticipantInfo) -> String {
        switch participant.role {
        case .owner: "\(participant.name) (owner)"
        case .operator: "\(participant.name) (operator)"
        case .member: participant.name
        }
    }

    private static func names(_ list: [String]) -> String {
        guard list.count > maxNames else { return list.joined(separator: ", ") }
        return list.prefix(maxNames).joined(separator: ", ") + " and \(list.count - maxNames) more"
    }
}
