/// The room server's brain: rooms, participants, and the order of actions.
///
/// The server is the room's *sequencer* — every accepted action gets the next sequence number and
/// every participant receives the same `applied` messages in the same order, so concurrent actions
/// end in the same state everywhere — and its *reference clock*: `now` is the server's monotonic
/// clock, and every timeline is expressed in it.
///
/// A pure state machine: event methods return `Output`s (messages to send, connections to close)
/// for the network shell to carry out. Threading: a value type; one owner.
public struct RoomSequencer: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Seconds: the earliest a scheduled play or speed change takes effect. Default 0.12 s.
        public var minLead: Double = 0.12
        /// Lead = max(minLead, factor × the largest reported round trip + margin), capped at maxLead.
        public var leadRTTFactor: Double = 2
        public var leadMargin: Double = 0.03
        public var maxLead: Double = 2
        /// Seconds the group waits, after a seek while playing, for everyone to land. Default 2 s.
        public var seekReadyTimeout: Double = 2
        /// Seconds between participant-list broadcasts. Default 1 s.
        public var participantsInterval: Double = 1
        /// Token bucket per connection: burst and messages per second; beyond it, `flooding`.
        public var floodBurst: Double = 200
        public var floodRate: Double = 100
        public var maxRooms = 1000
        public var maxParticipantsPerRoom = 64

        public init() {}
    }

    public typealias ConnectionID = Int

    public enum Output: Sendable, Equatable {
        case send(ConnectionID, ServerMessage)
        case close(ConnectionID)
    }

    struct Connection {
        var name: String?
        var room: String?
        var tokens: Double
        var lastRefill: Double
        var drift: Double?
        var rtt: Double?
    }

    struct PendingResume {
        var seq: Int
        var deadline: Double
        var ready: Set<ConnectionID>
    }

    struct Room {
        var timeline: GroupTimeline
        var members: [ConnectionID]
        var pendingResume: PendingResume?
        var nextParticipantsBroadcast: Double
    }

    public let configuration: Configuration
    private var connections: [ConnectionID: Connection] = [:]
    private var rooms: [String: Room] = [:]

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    // MARK: Connections

    public mutating func connected(_ id: ConnectionID, now: Double) {
        connections[id] = Connection(tokens: configuration.floodBurst, lastRefill: now)
    }

    public mutating func disconnected(_ id: ConnectionID, now: Double) -> [Output] {
        guard let connection = connections.removeValue(forKey: id) else { return [] }
        guard let roomName = connection.room, let name = connection.name, var room = rooms[roomName] else { return [] }
        room.members.removeAll { $0 == id }
        room.pendingResume?.ready.remove(id)
        if room.members.isEmpty {
            rooms[roomName] = nil
            return []
        }
        rooms[roomName] = room
        var outputs = broadcast(.notice(Notice(actor: name, action: .leave)), in: roomName)
        outputs += resumeIfEveryoneReady(roomName, now: now)
        return outputs
    }

    /// Decodes and handles one line; a bad line closes that connection only.
    public mutating func received(line: [UInt8], from id: ConnectionID, now: Double) -> [Output] {
        guard connections[id] != nil else { return [] }  // already gone: nothing to answer
        do {
            return received(try ClientMessage.decode(line: line), from: id, now: now)
        } catch {
            return refuse(id, error, now: now)
        }
    }

    public mutating func received(_ message: ClientMessage, from id: ConnectionID, now: Double) -> [Output] {
        guard var connection = connections[id] else { return [] }
        // Flood control: a token bucket per connection.
        connection.tokens = min(
            configuration.floodBurst, connection.tokens + (now - connection.lastRefill) * configuration.floodRate)
        connection.lastRefill = now
        connection.tokens -= 1
        connections[id] = connection
        if connection.tokens < 0 {
            return refuse(id, CowatchError(.flooding, "more than \(Int(configuration.floodRate)) messages a second"), now: now)
        }

        switch message {
        case .timeRequest(let requestID, let t1):
            return [.send(id, .timeReply(id: requestID, t1: t1, t2: now, t3: now))]
        case .hello(let hello):
            return join(id, hello, now: now)
        case .bye:
            return disconnected(id, now: now) + [.close(id)]
        case .action, .ready, .report:
            guard let roomName = connection.room, let name = connection.name else {
                return refuse(id, CowatchError(.protocolViolation, "say hello first"), now: now)
            }
            switch message {
            case .action(let action): return apply(action, by: name, from: id, in: roomName, now: now)
            case .ready(let seq): return ready(seq: seq, from: id, in: roomName, now: now)
            case .report(let drift, let rtt):
                connections[id]?.drift = drift
                connections[id]?.rtt = rtt
                return []
            default: return []
            }
        }
    }

    /// Sends an error, closes the connection, and tells its room it left.
    private mutating func refuse(_ id: ConnectionID, _ error: CowatchError, now: Double) -> [Output] {
        [.send(id, .error(code: error.code.rawValue, message: error.message))] + disconnected(id, now: now) + [.close(id)]
    }

    // MARK: Joining

    private mutating func join(_ id: ConnectionID, _ hello: ClientMessage.Hello, now: Double) -> [Output] {
        if connections[id]?.room != nil {
            return refuse(id, CowatchError(.protocolViolation, "already joined"), now: now)
        }
        guard hello.protocolVersion == wireProtocolVersion else {
            return refuse(id, CowatchError(
                .unsupportedVersion,
                "this server speaks room protocol \(wireProtocolVersion), not \(hello.protocolVersion)"), now: now)
        }
        let scheme = hello.auth["scheme"]?.stringValue ?? "none"
        guard scheme == "none" else {
            return refuse(id, CowatchError(
                .authFailed, "room secrets (\(scheme)) are not supported by this server yet"),
                now: now)
        }
        // A new room starts at the beginning, paused; unless the joiner was in this room before
        // (the server restarted): then it carries on from where that participant's group was.
        let start = hello.resume.map {
            GroupTimeline(seq: 0, position: $0.position, reference: now, rate: $0.rate, playing: $0.playing)
        } ?? .initial(at: now)
        var room = rooms[hello.room] ?? Room(
            timeline: start, members: [], pendingResume: nil,
            nextParticipantsBroadcast: now + configuration.participantsInterval)
        if room.members.contains(where: { connections[$0]?.name == hello.name }) {
            return refuse(id, CowatchError(
                .nameTaken, "a participant named \(hello.name) is already in room \(hello.room)"), now: now)
        }
        if rooms[hello.room] == nil && rooms.count >= configuration.maxRooms
            || room.members.count >= configuration.maxParticipantsPerRoom
        {
            return refuse(id, CowatchError(.roomFull, "room \(hello.room) is full"), now: now)
        }
        room.members.append(id)
        rooms[hello.room] = room
        connections[id]?.name = hello.name
        connections[id]?.room = hello.room
        // Joining never touches the timeline: the newcomer aligns to it, nobody else moves.
        let welcome = ServerMessage.welcome(.init(
            name: hello.name, room: hello.room, timeline: room.timeline, participants: participants(in: hello.room)))
        return [.send(id, welcome)] + broadcast(.notice(Notice(actor: hello.name, action: .join)), in: hello.room)
    }

    // MARK: Actions

    private func lead(in roomName: String) -> Double {
        let worst = rooms[roomName]?.members.compactMap { connections[$0]?.rtt }.max() ?? 0
        return min(configuration.maxLead, max(configuration.minLead, configuration.leadRTTFactor * worst + configuration.leadMargin))
    }

    private mutating func apply(
        _ action: ClientMessage.ActionRequest, by name: String, from id: ConnectionID, in roomName: String, now: Double
    ) -> [Output] {
        guard var room = rooms[roomName] else { return [] }
        let old = room.timeline
        let seq = old.seq + 1
        let at = now + lead(in: roomName)
        room.pendingResume = nil
        let timeline: GroupTimeline
        let notice: Notice
        switch action.kind {
        case .pause:
            let position = action.position ?? old.position(at: now)
            timeline = GroupTimeline(seq: seq, position: position, reference: now, rate: old.rate, playing: false)
            notice = Notice(actor: name, action: .pause, position: position)
        case .play:
            // If a seek is holding the group, play starts from the held position.
            let position = old.position(at: at)
            timeline = GroupTimeline(seq: seq, position: position, reference: at, rate: old.rate, playing: true)
            notice = Notice(actor: name, action: .play, position: position)
        case .seek:
            let target = action.position ?? 0
            let wasPlaying = old.playing || old.holding
            timeline = GroupTimeline(
                seq: seq, position: target, reference: now, rate: old.rate, playing: false, holding: wasPlaying)
            notice = Notice(actor: name, action: .seek, position: target, from: action.from ?? old.position(at: now), to: target)
            if wasPlaying {
                room.pendingResume = PendingResume(seq: seq, deadline: now + configuration.seekReadyTimeout, ready: [])
            }
        case .speed:
            let rate = action.rate ?? old.rate
            if old.playing {
                timeline = GroupTimeline(seq: seq, position: old.position(at: at), reference: at, rate: rate, playing: true)
            } else {
                timeline = GroupTimeline(
                    seq: seq, position: old.position, reference: now, rate: rate, playing: false, holding: old.holding)
                if old.holding, let pending = rooms[roomName]?.pendingResume {
                    room.pendingResume = PendingResume(seq: seq, deadline: pending.deadline, ready: [])
                }
            }
            notice = Notice(actor: name, action: .speed, rate: rate)
        }
        room.timeline = timeline
        rooms[roomName] = room
        return room.members.map { member in
            .send(member, .applied(timeline: timeline, notice: notice, actionID: member == id ? action.id : nil))
        }
    }

    private mutating func ready(seq: Int, from id: ConnectionID, in roomName: String, now: Double) -> [Output] {
        guard var room = rooms[roomName], var pending = room.pendingResume, pending.seq == seq else { return [] }
        pending.ready.insert(id)
        room.pendingResume = pending
        rooms[roomName] = room
        return resumeIfEveryoneReady(roomName, now: now)
    }

    private mutating func resumeIfEveryoneReady(_ roomName: String, now: Double) -> [Output] {
        guard let room = rooms[roomName], let pending = room.pendingResume,
            Set(room.members).isSubset(of: pending.ready)
        else { return [] }
        return resume(roomName, now: now)
    }

    /// Ends a seek's hold: everyone plays from the target at a scheduled instant.
    private mutating func resume(_ roomName: String, now: Double) -> [Output] {
        guard var room = rooms[roomName], room.pendingResume != nil else { return [] }
        let old = room.timeline
        room.pendingResume = nil
        room.timeline = GroupTimeline(
            seq: old.seq + 1, position: old.position, reference: now + lead(in: roomName), rate: old.rate, playing: true)
        rooms[roomName] = room
        return broadcast(.applied(timeline: room.timeline, notice: nil, actionID: nil), in: roomName)
    }

    // MARK: Time

    /// Runs deadlines: seek holds that waited long enough, and participant-list broadcasts.
    public mutating func tick(now: Double) -> [Output] {
        var outputs: [Output] = []
        for name in Array(rooms.keys) {
            if let pending = rooms[name]?.pendingResume, now >= pending.deadline {
                outputs += resume(name, now: now)
            }
            if let due = rooms[name]?.nextParticipantsBroadcast, now >= due {
                rooms[name]?.nextParticipantsBroadcast = now + configuration.participantsInterval
                outputs += broadcast(.participants(participants(in: name)), in: name)
            }
        }
        return outputs
    }

    /// When `tick` must run next, if anything is scheduled.
    public func nextDeadline() -> Double? {
        rooms.values.flatMap { room in [room.pendingResume?.deadline, room.nextParticipantsBroadcast].compactMap { $0 } }.min()
    }

    // MARK: Views

    private func participants(in roomName: String) -> [ParticipantInfo] {
        guard let room = rooms[roomName] else { return [] }
        return room.members.compactMap { id in
            guard let connection = connections[id], let name = connection.name else { return nil }
            let ready = room.pendingResume?.ready.contains(id) == true
            return ParticipantInfo(name: name, state: ready ? "ready" : "joined", drift: connection.drift, rtt: connection.rtt)
        }
    }

    private func broadcast(_ message: ServerMessage, in roomName: String) -> [Output] {
        (rooms[roomName]?.members ?? []).map { .send($0, message) }
    }

    /// Rooms and their participants (for logs and tests).
    public func snapshot() -> [String: [ParticipantInfo]] {
        Dictionary(uniqueKeysWithValues: rooms.keys.map { ($0, participants(in: $0)) })
    }

    /// The current timeline of a room.
    public func timeline(of roomName: String) -> GroupTimeline? { rooms[roomName]?.timeline }
}
