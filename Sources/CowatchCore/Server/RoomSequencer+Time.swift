/// Deadlines and read-only views of the server's state.
extension RoomSequencer {
    /// Runs deadlines: handshakes and silent connections that timed out, held-back refusals,
    /// holds that waited long enough, announcements, participant lists, forgotten rooms.
    public mutating func tick(now: Double) -> [Output] {
        var outputs: [Output] = []
        for expiry in admission.tick(now: now) {
            if case .refuse(let id, let error) = expiry { outputs += refuse(id, error, now: now) }
        }
        while let due = roomDeadlines.popDue(now) {
            // Stale entries (the room's deadline moved, or the room is gone) are skipped.
            guard scheduledDeadline[due.key] == due.time, var room = rooms[due.key] else { continue }
            scheduledDeadline[due.key] = nil
            outputs += room.playback.tick(now: now).map(Self.output)
            store(room, as: due.key)
        }
        if let due = streams.nextDeadline, due <= now { outputs += expireStreams(now: now) }
        while let top = roomDeadlines.first, scheduledDeadline[top.key] != top.time { roomDeadlines.popFirst() }
        if now >= nextDormantExpiry {
            let before = records.count
            records = records.filter { entry in
                guard let since = entry.value.dormantSince else { return true }
                return now - since < configuration.dormantRoomMemory
            }
            nextDormantExpiry = records.values.compactMap(\.dormantSince).min().map { $0 + configuration.dormantRoomMemory } ?? .infinity
            if records.count != before { outputs.append(.saveRecords) }
        }
        if now >= nextHousekeeping {
            nextHousekeeping = now + 1
            for (room, entries) in kicked {
                let live = entries.filter { $0.value > now }
                kicked[room] = live.isEmpty ? nil : live
            }
        }
        return outputs
    }

    /// When `tick` must run next (cheap: the earliest of a few heaps' tops).
    public func nextDeadline() -> Double? {
        let roomDeadline = roomDeadlines.first?.time
        let dormant = nextDormantExpiry.isFinite ? nextDormantExpiry : nil
        return [admission.nextDeadline(), roomDeadline, dormant, streams.nextDeadline].compactMap { $0 }.min()
    }

    /// Rooms and their participants (for logs and tests).
    public func snapshot() -> [String: [ParticipantInfo]] {
        rooms.mapValues { $0.playback.participants() }
    }

    /// The current timeline of a room.
    public func timeline(of roomName: String) -> GroupTimeline? { rooms[roomName]?.playback.timeline }

    /// The current activity of a room.
    public func activity(of roomName: String) -> Activity? { rooms[roomName]?.playback.activity }

    /// Connections open now (joined or in their handshake).
    public var connectionCount: Int { admission.connectionCount }
}
