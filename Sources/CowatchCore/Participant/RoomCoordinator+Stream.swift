/// Film streams as a participant sees them (`stream` feature): the room's offers, our own
/// offers and their withdrawal. Which offer to read the room's media from is `StreamChoice`'s.
///
/// Threading: part of `RoomCoordinator` (a value type; one owner).
extension RoomCoordinator {
    /// The server speaks the stream feature on this connection.
    public var speaksStream: Bool { features.contains(WireFeature.stream) }

    /// Offers `file` to the room (as the media of activity `activity`, when it is what we
    /// play). Errors: `not-in-room` before the welcome, `unsupported` when the server has no
    /// streams (an older server). The server's refusals (caps, a managed room) arrive later as
    /// `refused`.
    public func share(_ file: MediaIdentity, activity: Int?) throws(CowatchError) -> [Action] {
        guard welcomed, isJoined else { throw CowatchError(.notInRoom, "not in the room yet; try again in a moment") }
        guard speaksStream else { throw CowatchError(.unsupported, "the room server cannot relay films (an older server)") }
        return [.send(.share(file, activity: activity))]
    }

    /// Tells the room how the stream we play fares (nil: we play none now); nothing before the
    /// welcome or to a server without streams (it is telemetry: the next one says it again).
    public func streamStatus(_ report: StreamReport?) -> [Action] {
        guard welcomed, isJoined, speaksStream else { return [] }
        return [.send(.streamStatus(report))]
    }

    /// Whether the room said that our copy of the current activity's media differs from the
    /// room's (a `mismatch` notice naming us).
    public var ownCopyDiffers: Bool { copiesDiffering.contains(name) }

    /// Withdraws our offer of `fingerprint`, or all of ours (nil). Errors as for `share`.
    public func unshare(fingerprint: String?) throws(CowatchError) -> [Action] {
        guard welcomed, isJoined else { throw CowatchError(.notInRoom, "not in the room yet; try again in a moment") }
        guard speaksStream else { throw CowatchError(.unsupported, "the room server cannot relay films (an older server)") }
        return [.send(.unshare(fingerprint: fingerprint))]
    }
}

/// Which offer a participant that lacks the room's media reads it from.
///
/// Threading: pure functions.
public enum StreamChoice {
    /// The offer of the file for the room's `activity`: one whose identity is `entry`'s (the
    /// playlist entry the activity plays), else one offered as that activity's media; never our
    /// own. The first sharer in the room's order wins, so everyone asks the same one.
    public static func offer(
        for activity: Int, entry: MediaIdentity?, among offers: [SharedMedia], me: String
    ) -> SharedMedia? {
        let others = offers.filter { $0.by != me }
        if let entry, let match = others.first(where: { $0.file.matches(entry) }) { return match }
        return others.first { $0.activity == activity }
    }

    /// The offer a member whose own copy differs from the room's (`mismatch`) reads the room's
    /// media from instead: one of `activity` by a sharer the room did not name as differing
    /// (`differing`), whose file is not ours (`own`: our copy's identity, when known).
    public static func replacement(
        for activity: Int, among offers: [SharedMedia], me: String, differing: Set<String>, own: MediaIdentity?
    ) -> SharedMedia? {
        offers.first { offer in
            offer.by != me && offer.activity == activity && !differing.contains(offer.by) && !(own.map(offer.file.matches) ?? false)
        }
    }
}
