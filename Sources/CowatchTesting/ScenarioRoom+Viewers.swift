import CowatchCore

/// What scenarios say often, in the words of the people in the room, built on `ScenarioRoom`'s
/// few requirements. Threading and errors as there; the waits throw `ScenarioFailure` naming
/// what the room showed when their deadline passed.
extension ScenarioRoom {
    /// The index of the viewer called `name`; throws `ScenarioFailure` when there is none.
    public func viewer(named name: String) throws(ScenarioFailure) -> Int {
        guard let index = names.firstIndex(of: name) else { throw ScenarioFailure("no viewer \(name) in \(names)") }
        return index
    }

    public var viewers: Range<Int> { names.indices }

    public func play(by viewer: Int) async throws { try await perform(.play, by: viewer) }
    public func pause(by viewer: Int) async throws { try await perform(.pause, by: viewer) }
    public func seek(to seconds: Double, by viewer: Int) async throws {
        try await perform(.seek(seconds: seconds, mode: .absolute), by: viewer)
    }
    public func setSpeed(_ rate: Double, by viewer: Int) async throws { try await perform(.speed(rate), by: viewer) }
    /// `cowatch leave`: the viewer stops following the room and keeps its player.
    public func leave(_ viewer: Int) async throws { try await perform(.leave, by: viewer) }
    /// `cowatch join`: the viewer joins the room again.
    public func join(_ viewer: Int) async throws { try await perform(.join, by: viewer) }

    /// The players of `viewers` (default: everyone), read one after another.
    public func players(_ viewers: [Int]? = nil) async throws -> [PlayerSnapshot] {
        var snapshots: [PlayerSnapshot] = []
        for viewer in viewers ?? Array(self.viewers) { snapshots.append(try await player(viewer)) }
        return snapshots
    }

    /// How many notices each viewer has received so far: a mark to look for new ones after.
    public func noticeMarks() async throws -> [Int] {
        var marks: [Int] = []
        for viewer in viewers { marks.append(try await notices(viewer).count) }
        return marks
    }

    /// Lets time pass until each of `hearers` (default: everyone) has received, after `marks`,
    /// a notice of `action` by viewer `actor`; returns those notices, in `hearers`' order.
    /// Throws `ScenarioFailure` naming who had not heard within `seconds`.
    public func waitForNotice(
        _ action: NoticeAction, by actor: Int, after marks: [Int], heardBy hearers: [Int]? = nil, within seconds: Double
    ) async throws -> [Notice] {
        let hearers = hearers ?? Array(viewers)
        let name = names[actor]
        var found: [Int: Notice] = [:]
        _ = try await wait(upTo: seconds) {
            for hearer in hearers where found[hearer] == nil {
                let heard = try await notices(hearer).dropFirst(marks[hearer])
                found[hearer] = heard.first { $0.action == action && $0.actor == name }
            }
            return found.count == hearers.count
        }
        let deaf = hearers.filter { found[$0] == nil }.map { names[$0] }
        try ScenarioFailure.check(deaf.isEmpty, "\(deaf) heard no \(action.rawValue) by \(name) within \(seconds) s")
        return hearers.compactMap { found[$0] }
    }

    /// Lets time pass until the players of `viewers` (default: everyone) satisfy `condition`;
    /// returns the snapshots that did. Throws `ScenarioFailure` with `expectation` and the last
    /// snapshots when `seconds` pass first.
    public func waitForPlayers(
        _ viewers: [Int]? = nil, within seconds: Double, _ expectation: String,
        until condition: ([PlayerSnapshot]) -> Bool
    ) async throws -> [PlayerSnapshot] {
        var last: [PlayerSnapshot] = []
        let held = try await wait(upTo: seconds) {
            last = try await players(viewers)
            return condition(last)
        }
        let shown = zip(viewers ?? Array(self.viewers), last).map { "\(names[$0]) \($1)" }
        try ScenarioFailure.check(held, "not within \(seconds) s: \(expectation); players: \(shown)")
        return last
    }
}

extension [PlayerSnapshot] {
    /// How far apart these players are, each carried to the instant of the last reading (nil when
    /// one has no position).
    public var spread: Double? {
        guard let instant = last?.at else { return nil }
        let positions = compactMap { $0.position(at: instant) }
        guard positions.count == count, let low = positions.min(), let high = positions.max() else { return nil }
        return high - low
    }

    public var allPaused: Bool { allSatisfy(\.paused) }
    public var allPlaying: Bool { allSatisfy { !$0.paused } }
}
