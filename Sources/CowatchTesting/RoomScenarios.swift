import CowatchCore

/// Scenarios of a watch-together evening, written once against `ScenarioRoom` and run both in
/// process (simulated players, manual clock) and against real processes (libmpv). Each starts
/// from a joined room, paused or playing, on media at least 60 s long, and leaves it playing or
/// paused for the next one.
///
/// Threading: run on the one task that drives `room`.
/// Errors: `ScenarioFailure` at the first expectation the room does not meet; the room's own
/// errors (a refused command, a viewer that cannot be read) as they are.
public enum RoomScenarios {
    /// Anyone's pause pauses everyone, on the pauser's frame, and everyone hears who paused: each
    /// viewer in turn pauses while the next one had started the film. Needs two viewers or more.
    public static func anyonesPausePausesEveryone(in room: some ScenarioRoom, bounds: ScenarioBounds = ScenarioBounds()) async throws {
        try ScenarioFailure.check(room.names.count >= 2, "needs two viewers, has \(room.names)")
        for pauser in room.viewers {
            let starter = (pauser + 1) % room.names.count
            try await room.play(by: starter)
            _ = try await room.waitForPlayers(within: bounds.reaction, "everyone plays after \(room.names[starter]) played") {
                $0.allPlaying
            }
            try await room.pass(1)

            let marks = try await room.noticeMarks()
            try await room.pause(by: pauser)
            let notices = try await room.waitForNotice(.pause, by: pauser, after: marks, within: bounds.reaction)
            let frames = notices.compactMap(\.position)
            try ScenarioFailure.check(
                frames.count == notices.count && Set(frames).count == 1, "pause notices name one frame: \(frames)")
            let frame = frames[0]
            let players = try await room.waitForPlayers(
                within: bounds.reaction, "everyone paused within \(bounds.pausedSpread) s of each other"
            ) { $0.allPaused && ($0.spread ?? .infinity) <= bounds.pausedSpread }
            for (viewer, player) in zip(room.viewers, players) {
                let position = player.position ?? -1
                try ScenarioFailure.check(
                    abs(position - frame) <= bounds.frame,
                    "\(room.names[viewer]) paused at \(position), \(room.names[pauser])'s frame is \(frame)")
            }
        }
    }

    /// A seek by one moves everyone: paused, everyone lands on the target; playing, everyone plays
    /// on from it, together; everyone hears who seeked, from where to where.
    public static func aSeekByOneMovesAll(in room: some ScenarioRoom, bounds: ScenarioBounds = ScenarioBounds()) async throws {
        let seeker = room.names.count - 1
        if try await !room.players().allPaused {
            try await room.pause(by: 0)
            _ = try await room.waitForPlayers(within: bounds.reaction, "everyone paused") { $0.allPaused }
        }

        var marks = try await room.noticeMarks()
        try await room.seek(to: 40, by: seeker)
        let notices = try await room.waitForNotice(.seek, by: seeker, after: marks, within: bounds.reaction)
        try ScenarioFailure.check(
            notices.allSatisfy { $0.to == 40 && $0.from != nil },
            "seek notices say from somewhere to 40: \(notices.map { "\($0.from ?? -1) → \($0.to ?? -1)" })")
        _ = try await room.waitForPlayers(within: bounds.reaction, "everyone paused on 40") {
            $0.allPaused && $0.allSatisfy { abs(($0.position ?? -1) - 40) <= bounds.frame }
        }

        try await room.play(by: 0)
        _ = try await room.waitForPlayers(within: bounds.reaction, "everyone plays") { $0.allPlaying }
        try await room.pass(1)
        let mover = room.names.count / 2
        marks = try await room.noticeMarks()
        try await room.seek(to: 20, by: mover)
        _ = try await room.waitForNotice(.seek, by: mover, after: marks, within: bounds.reaction)
        let players = try await room.waitForPlayers(
            within: bounds.reaction, "everyone plays on from 20, within \(bounds.playingSpread) s of each other"
        ) { players in
            players.allPlaying && players.allSatisfy { ($0.position ?? -1) >= 20 && ($0.position ?? 99) < 20 + bounds.reaction }
                && (players.spread ?? .infinity) <= bounds.playingSpread
        }
        // Still together a moment later: the seek did not leave anyone drifting.
        try await room.pass(1)
        let later = try await room.players()
        try ScenarioFailure.check(
            later.allPlaying && (later.spread ?? .infinity) <= bounds.playingSpread,
            "together a second after the seek: \(later), a second before: \(players)")
    }

    /// A leave and a join: the one who leaves keeps its player and no longer follows, the rest
    /// carry on (and hear of it); when it joins again it lands on the group's place, and the rest
    /// do not move for it. Needs two viewers or more; the last one leaves.
    public static func aLeaveAndAJoin(in room: some ScenarioRoom, bounds: ScenarioBounds = ScenarioBounds()) async throws {
        try ScenarioFailure.check(room.names.count >= 2, "needs two viewers, has \(room.names)")
        let leaver = room.names.count - 1
        let rest = Array(room.viewers.dropLast())
        try await room.seek(to: 5, by: 0)
        try await room.play(by: 0)
        _ = try await room.waitForPlayers(within: bounds.reaction, "everyone plays") { $0.allPlaying }
        try await room.pass(1)

        var marks = try await room.noticeMarks()
        try await room.leave(leaver)
        _ = try await room.waitForNotice(.leave, by: leaver, after: marks, heardBy: rest, within: bounds.reaction)
        let before = try await room.players()
        try await room.pass(1)
        // The rest carry on together; the leaver's player plays on by itself.
        let after = try await room.players()
        for viewer in room.viewers {
            try ScenarioFailure.check(
                !after[viewer].paused && abs(playedOn(from: before[viewer], to: after[viewer])) <= bounds.playingSpread,
                "\(room.names[viewer]) played straight on for a second: \(before[viewer]) → \(after[viewer])")
        }
        try ScenarioFailure.check(
            (Array(after.prefix(rest.count)).spread ?? .infinity) <= bounds.playingSpread, "the rest together: \(after)")

        // The group moves while the leaver is away; it does not follow.
        try await room.seek(to: 50, by: 0)
        _ = try await room.waitForPlayers(rest, within: bounds.reaction, "the rest play on from 50") { players in
            players.allPlaying && players.allSatisfy { ($0.position ?? -1) >= 50 }
        }
        let away = try await room.player(leaver)
        try ScenarioFailure.check((away.position ?? 99) < 40, "\(room.names[leaver]) followed a seek while away: \(away)")

        marks = try await room.noticeMarks()
        let restBefore = try await room.players(rest)
        try await room.join(leaver)
        _ = try await room.waitForNotice(.join, by: leaver, after: marks, heardBy: rest, within: bounds.rejoin)
        let together = try await room.waitForPlayers(
            within: bounds.rejoin, "\(room.names[leaver]) back on the group's place, within \(bounds.playingSpread) s"
        ) { $0.allPlaying && ($0.spread ?? .infinity) <= bounds.playingSpread }
        // The rest did not move for the one who came back: they played straight on.
        for (viewer, snapshot) in zip(rest, restBefore) {
            let now = together[viewer]
            try ScenarioFailure.check(
                abs(playedOn(from: snapshot, to: now)) <= bounds.playingSpread,
                "\(room.names[viewer]) moved when \(room.names[leaver]) came back: \(snapshot) → \(now)")
        }
    }

    /// A speed change by one is everyone's: everyone hears the new rate, plays at it, and stays
    /// together; then back to normal speed. Needs two viewers or more.
    public static func aSpeedChangeIsEveryones(in room: some ScenarioRoom, bounds: ScenarioBounds = ScenarioBounds()) async throws {
        try ScenarioFailure.check(room.names.count >= 2, "needs two viewers, has \(room.names)")
        let changer = 1
        try await room.seek(to: 10, by: 0)
        try await room.play(by: 0)
        _ = try await room.waitForPlayers(within: bounds.reaction, "everyone plays") { $0.allPlaying }

        let marks = try await room.noticeMarks()
        try await room.setSpeed(1.5, by: changer)
        let notices = try await room.waitForNotice(.speed, by: changer, after: marks, within: bounds.reaction)
        try ScenarioFailure.check(notices.allSatisfy { $0.rate == 1.5 }, "speed notices say 1.5: \(notices.map(\.rate))")
        // The players' own rate carries drift corrections: within 5 % of the group's.
        let before = try await room.waitForPlayers(
            within: bounds.reaction, "everyone at 1.5×, within \(bounds.playingSpread) s of each other"
        ) { players in
            players.allPlaying && players.allSatisfy { abs($0.speed - 1.5) <= 1.5 * 0.051 }
                && (players.spread ?? .infinity) <= bounds.playingSpread
        }
        try await room.pass(1)
        let after = try await room.players()
        for viewer in room.viewers {
            let elapsed = after[viewer].at - before[viewer].at
            try ScenarioFailure.check(
                abs(playedOn(from: before[viewer], to: after[viewer], rate: 1.5)) <= bounds.playingSpread + 0.05 * elapsed,
                "\(room.names[viewer]) played on at 1.5×: \(before[viewer]) → \(after[viewer])")
        }
        try ScenarioFailure.check((after.spread ?? .infinity) <= bounds.playingSpread, "together at 1.5×: \(after)")

        try await room.setSpeed(1, by: 0)
        _ = try await room.waitForPlayers(within: bounds.reaction, "everyone back at 1×") { players in
            players.allSatisfy { abs($0.speed - 1) <= 0.051 }
        }
    }

    /// How far a player is from where playing straight on at `rate` from `before` would have
    /// brought it by `after` (0: it did; positive: ahead).
    private static func playedOn(from before: PlayerSnapshot, to after: PlayerSnapshot, rate: Double = 1) -> Double {
        guard let from = before.position, let to = after.position else { return .infinity }
        return to - (from + (after.at - before.at) * rate)
    }
}
