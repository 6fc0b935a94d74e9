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
        /// Seconds the group waits for a stalled participant (buffering, a slow seek) or, under
        /// `playWhenReady`, an unready one, before carrying on without it. Default 5 s.
        public var waitTimeout: Double = 5
        /// Seconds the group waits for everyone to load media switched to with `open`. Default 15 s.
        public var openTimeout: Double = 15
        /// Seconds a participant the group stopped waiting for is not waited for again: a viewer on
        /// a link too slow for the media would otherwise pause everyone over and over. Default 30 s.
        public var giveUpCooldown: Double = 30
        /// A participant that stalls the playing group this many times within `stallWindow` seconds
        /// is given up on at once (cooldown as above): short repeated stalls never exceed the
        /// wait bound, yet would stutter the whole film. Defaults 3 and 60 s.
        public var maxStallHolds = 3
        public var stallWindow: Double = 60
        /// Seconds an ended room is remembered, so a participant reconnecting into it hears it
        /// ended instead of bringing it back. Default 30 s.
        public var endedRoomMemory: Double = 30
        /// Seconds into a hold before "waiting for …" is announced (stalls announce at once). Default 1 s.
        public var announceDelay: Double = 1
        /// Room policy "play when everyone is ready": a play waits (bounded by `waitTimeout`)
        /// until every participant that is waited for says it is ready. Default false.
        public var playWhenReady = false
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
        var status = ParticipantStatus()
        /// Until then the group does not wait for this participant (it waited in vain before).
        var givenUpUntil = -Double.infinity
        /// When this participant's stalls made the group hold, recently.
        var stallHolds: [Double] = []
    }

    /// The group holds (paused, `holding`) until everyone it waits for is there, or `deadline`.
    struct Hold {
        var seq: Int
        var deadline: Double
        /// Who reported `ready` (landed on the held position) for `seq`.
        var landed: Set<ConnectionID> = []
        /// Under the play-when-ready policy, a play or open also waits for readiness.
        var needsReadiness = false
        /// When to say "waiting for …" if someone is still missing; nil once said.
        var announceAt: Double?
        /// When the hold began: landing takes a moment and is only worth announcing later.
        var since: Double
    }

    struct Room {
        var timeline: GroupTimeline
        var activity: Activity
        var members: [ConnectionID]
        var hold: Hold?
        var nextParticipantsBroadcast: Double
        /// The first media report for the current activity: everyone else's is compared with it.
        var mediaReference: (name: String, info: MediaInfo)?
        /// Who was already named as having a different file, for this activity (named once).
        var mismatchesAnnounced: Set<String> = []
    }

    public let configuration: Configuration
    private var connections: [ConnectionID: Connection] = [:]
    private var rooms: [String: Room] = [:]
    /// Recently ended rooms: who ended them, and until when that is remembered.
    private var endedRooms: [String: (by: String, until: Double)] = [:]

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// What every participant is told about the room's rules.
    public var policy: RoomPolicy {
        RoomPolicy(playWhenReady: configuration.playWhenReady, waitTimeout: configuration.waitTimeout)
    }

    // MARK: Connections

    public mutating func connected(_ id: ConnectionID, now: Double) {
        connections[id] = Connection(tokens: configuration.floodBurst, lastRefill: now)
    }

    public mutating func disconnected(_ id: ConnectionID, now: Double) -> [Output] {
        guard let connection = connections.removeValue(forKey: id) else { return [] }
        guard let roomName = connection.room, let name = connection.name, var room = rooms[roomName] else { return [] }
        room.members.removeAll { $0 == id }
        room.hold?.landed.remove(id)
        if room.members.isEmpty {
            rooms[roomName] = nil
            return []
        }
        rooms[roomName] = room
        var outputs = broadcast(.notice(Notice(actor: name, action: .leave)), in: roomName)
        outputs += resumeIfNobodyMissing(roomName, now: now)
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
        case .action, .ready, .report, .status, .media, .end:
            guard let roomName = connection.room, let name = connection.name else {
                return refuse(id, CowatchError(.protocolViolation, "say hello first"), now: now)
            }
            switch message {
            case .action(let action): return apply(action, by: name, from: id, in: roomName, now: now)
            case .ready(let seq): return landed(seq: seq, from: id, in: roomName, now: now)
            case .report(let drift, let rtt):
                connections[id]?.drift = drift
                connections[id]?.rtt = rtt
                return []
            case .status(let status): return statusChanged(status, of: id, named: name, in: roomName, now: now)
            case .media(let activity, let info): return mediaReported(info, activity: activity, by: name, in: roomName)
            case .end: return end(roomName, by: name, now: now)
            default: return []
            }
        }
    }

    /// Sends an error, closes the connection, and tells its room it left.
    private mutating func refuse(_ id: ConnectionID, _ error: CowatchError, now: Double) -> [Output] {
        [.send(id, .error(code: error.code.rawValue, message: error.message))] + disconnected(id, now: now) + [.close(id)]
    }

    // MARK: Joining and ending

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
        // A new room starts at the beginning, paused, with the joiner's media as its activity;
        // unless the joiner was in this room before (the server restarted): then it carries on
        // from where that participant's group was.
        endedRooms = endedRooms.filter { $0.value.until > now }
        if rooms[hello.room] == nil, hello.resume != nil, let ended = endedRooms[hello.room] {
            // A participant that lost its link just before the end: it would otherwise restart the
            // room from its `resume`. Tell it the activity ended.
            connections[id] = nil
            return [.send(id, .ended(by: ended.by)), .close(id)]
        }
        var outputs: [Output] = []
        if hello.resume != nil, let previous = rooms[hello.room]?.members.first(where: { connections[$0]?.name == hello.name }) {
            // The same participant reconnecting (its hello says where its group was) while its old
            // connection still looks alive (a half-open TCP link): the new one replaces it.
            outputs += disconnected(previous, now: now) + [.close(previous)]
        }
        let start = hello.resume.map {
            GroupTimeline(seq: 0, position: $0.position, reference: now, rate: $0.rate, playing: $0.playing)
        } ?? .initial(at: now)
        var room = rooms[hello.room] ?? Room(
            timeline: start, activity: hello.activity ?? Activity(url: "unknown"), members: [], hold: nil,
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
        connections[id]?.status = hello.status
        // Joining never touches the timeline: the newcomer aligns to it, nobody else moves.
        let welcome = ServerMessage.welcome(.init(
            name: hello.name, room: hello.room, timeline: room.timeline, participants: participants(in: hello.room),
            activity: room.activity, policy: policy))
        return outputs + [.send(id, welcome)] + broadcast(.notice(Notice(actor: hello.name, action: .join)), in: hello.room)
    }

    /// Ends the activity for everyone: all hear who ended it, then every connection is closed and
    /// the room forgotten.
    private mutating func end(_ roomName: String, by name: String, now: Double) -> [Output] {
        guard let room = rooms.removeValue(forKey: roomName) else { return [] }
        endedRooms[roomName] = (name, now + configuration.endedRoomMemory)
        var outputs: [Output] = []
        for member in room.members {
            connections[member] = nil
            outputs.append(.send(member, .ended(by: name)))
            outputs.append(.close(member))
        }
        return outputs
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
        let previousHold = room.hold
        room.hold = nil
        var activity: Activity?
        let timeline: GroupTimeline
        let notice: Notice
        switch action.kind {
        case .pause:
            let position = action.position ?? old.position(at: now)
            timeline = GroupTimeline(seq: seq, position: position, reference: now, rate: old.rate, playing: false)
            notice = Notice(actor: name, action: .pause, position: position)
        case .play:
            // Pressing play says "I am ready", as in Syncplay.
            connections[id]?.status.ready = true
            // If a hold is on, play starts from the held position.
            let position = old.position(at: at)
            notice = Notice(actor: name, action: .play, position: position)
            let hold = Hold(
                seq: seq, deadline: previousHold?.deadline ?? now + configuration.waitTimeout,
                needsReadiness: configuration.playWhenReady, announceAt: now, since: now)
            if !missing(in: room, hold: hold, now: now).isEmpty {
                // Someone is stalled or not ready: hold at the position until they are, bounded.
                timeline = GroupTimeline(seq: seq, position: position, reference: now, rate: old.rate, playing: false, holding: true)
                room.hold = hold
            } else {
                timeline = GroupTimeline(seq: seq, position: position, reference: at, rate: old.rate, playing: true)
            }
        case .seek:
            let target = action.position ?? 0
            let wasPlaying = old.playing || old.holding
            timeline = GroupTimeline(
                seq: seq, position: target, reference: now, rate: old.rate, playing: false, holding: wasPlaying)
            notice = Notice(actor: name, action: .seek, position: target, from: action.from ?? old.position(at: now), to: target)
            if wasPlaying {
                // A seek during a longer hold (an open) keeps that hold's bound and readiness.
                room.hold = Hold(
                    seq: seq, deadline: max(now + configuration.seekReadyTimeout, previousHold?.deadline ?? 0),
                    needsReadiness: previousHold?.needsReadiness ?? false, announceAt: now + configuration.announceDelay,
                    since: now)
            }
        case .speed:
            let rate = action.rate ?? old.rate
            if old.playing {
                timeline = GroupTimeline(seq: seq, position: old.position(at: at), reference: at, rate: rate, playing: true)
            } else {
                timeline = GroupTimeline(
                    seq: seq, position: old.position, reference: now, rate: rate, playing: false, holding: old.holding)
                if old.holding, var hold = previousHold {
                    hold.seq = seq
                    hold.landed = []
                    room.hold = hold
                }
            }
            notice = Notice(actor: name, action: .speed, rate: rate)
        case .open:
            // New media for everyone: all load it, the group holds at its start until everyone
            // has (bounded by openTimeout), then plays.
            var opened = action.activity ?? room.activity
            opened.id = room.activity.id + 1
            opened.openedBy = name
            activity = opened
            room.activity = opened
            room.mediaReference = nil
            room.mismatchesAnnounced = []
            // New media, new chances: wait for everyone again.
            for member in room.members { connections[member]?.givenUpUntil = -.infinity }
            timeline = GroupTimeline(seq: seq, position: 0, reference: now, rate: old.rate, playing: false, holding: true)
            room.hold = Hold(
                seq: seq, deadline: now + configuration.openTimeout, needsReadiness: configuration.playWhenReady,
                announceAt: now + configuration.announceDelay, since: now)
            notice = Notice(actor: name, action: .open, title: opened.displayTitle)
        }
        room.timeline = timeline
        rooms[roomName] = room
        var outputs: [Output] = room.members.map { member in
            .send(member, .applied(timeline: timeline, notice: notice, actionID: member == id ? action.id : nil, activity: activity))
        }
        outputs += announceIfDue(roomName, now: now)
        return outputs
    }

    // MARK: Holding for participants (bounded)

    /// Who the group waits for: everyone, minus "don't wait for me" and those it recently gave up on.
    private func waitedFor(in room: Room, now: Double) -> [ConnectionID] {
        room.members.filter { id in
            guard let connection = connections[id] else { return false }
            return connection.status.waitForMe && now >= connection.givenUpUntil
        }
    }

    /// Why a hold misses someone who is neither stalled nor unready: not on the held position yet.
    static let landing = "getting there"

    /// Waited-for participants a hold still misses, each with why.
    private func missing(in room: Room, hold: Hold, now: Double) -> [(id: ConnectionID, why: String)] {
        waitedFor(in: room, now: now).compactMap { id in
            guard let connection = connections[id] else { return nil }
            if let stall = connection.status.stall { return (id, stall.rawValue) }
            if hold.needsReadiness && !connection.status.ready { return (id, "not ready") }
            // A hold that is not the timeline's own (a play that did not need one) needs no landing.
            if room.timeline.holding && room.timeline.seq == hold.seq && !hold.landed.contains(id) { return (id, Self.landing) }
            return nil
        }
    }

    private mutating func landed(seq: Int, from id: ConnectionID, in roomName: String, now: Double) -> [Output] {
        guard rooms[roomName]?.hold?.seq == seq else { return [] }
        rooms[roomName]?.hold?.landed.insert(id)
        return resumeIfNobodyMissing(roomName, now: now)
    }

    private mutating func statusChanged(
        _ status: ParticipantStatus, of id: ConnectionID, named name: String, in roomName: String, now: Double
    ) -> [Output] {
        guard let old = connections[id]?.status, let room = rooms[roomName] else { return [] }
        connections[id]?.status = status
        var outputs: [Output] = []
        if status.ready != old.ready {
            outputs += broadcast(.notice(Notice(actor: name, action: status.ready ? .ready : .unready)), in: roomName)
        }
        let waited = waitedFor(in: room, now: now).contains(id)
        // Loading (a late joiner, or one still opening switched media) does not stop a group that
        // already plays: the loader catches up when ready. Holds for `open` and play wait for it.
        if let stall = status.stall, stall != .loading, old.stall == nil, waited, room.timeline.playing, room.hold == nil {
            let recent = (connections[id]?.stallHolds ?? []).filter { now - $0 < configuration.stallWindow }
            if recent.count >= configuration.maxStallHolds {
                // It keeps stalling: stop holding everyone for it (it catches up on its own).
                connections[id]?.stallHolds = []
                connections[id]?.givenUpUntil = now + configuration.giveUpCooldown
                let notice = Notice(actor: name, action: .continued, others: [name], detail: "keeps stalling")
                return outputs + broadcast(.notice(notice), in: roomName)
            }
            connections[id]?.stallHolds = recent + [now]
            // A participant that cannot keep up while the group plays: hold everyone where the
            // group is, say who we wait for, and give it `waitTimeout` to come back.
            var held = room
            let playing = room.timeline
            held.timeline = GroupTimeline(
                seq: playing.seq + 1, position: playing.position(at: now), reference: now, rate: playing.rate,
                playing: false, holding: true)
            held.hold = Hold(seq: held.timeline.seq, deadline: now + configuration.waitTimeout, since: now)
            rooms[roomName] = held
            let notice = Notice(actor: name, action: .waiting, others: [name], detail: stall.rawValue)
            return outputs + broadcast(.applied(timeline: held.timeline, notice: notice, actionID: nil), in: roomName)
        }
        return outputs + resumeIfNobodyMissing(roomName, now: now)
    }

    private mutating func resumeIfNobodyMissing(_ roomName: String, now: Double) -> [Output] {
        guard let room = rooms[roomName], let hold = room.hold, missing(in: room, hold: hold, now: now).isEmpty else {
            return []
        }
        return resume(roomName, now: now)
    }

    /// Ends a hold: everyone plays from the held position at a scheduled instant.
    private mutating func resume(_ roomName: String, now: Double) -> [Output] {
        guard var room = rooms[roomName], room.hold != nil else { return [] }
        let old = room.timeline
        room.hold = nil
        room.timeline = GroupTimeline(
            seq: old.seq + 1, position: old.position, reference: now + lead(in: roomName), rate: old.rate, playing: true)
        rooms[roomName] = room
        return broadcast(.applied(timeline: room.timeline, notice: nil, actionID: nil), in: roomName)
    }

    /// Says "waiting for …" once per hold, when its announcement is due and someone is missing.
    private mutating func announceIfDue(_ roomName: String, now: Double) -> [Output] {
        guard let room = rooms[roomName], let hold = room.hold, let due = hold.announceAt, now >= due else { return [] }
        rooms[roomName]?.hold?.announceAt = nil
        // Landing takes a moment after any action: only name it once it is late.
        let landingIsLate = now - hold.since >= configuration.announceDelay
        let missing = missing(in: room, hold: hold, now: now).filter { landingIsLate || $0.why != Self.landing }
        guard let notice = notice(.waiting, about: missing) else { return [] }
        return broadcast(.notice(notice), in: roomName)
    }

    /// The hold waited long enough: carry on without whoever is still missing; they catch up on
    /// their own, and are not waited for again for `giveUpCooldown`.
    private mutating func giveUp(_ roomName: String, now: Double) -> [Output] {
        guard let room = rooms[roomName], let hold = room.hold else { return [] }
        let missing = missing(in: room, hold: hold, now: now)
        for entry in missing { connections[entry.id]?.givenUpUntil = now + configuration.giveUpCooldown }
        let outputs = notice(.continued, about: missing).map { broadcast(.notice($0), in: roomName) } ?? []
        return outputs + resume(roomName, now: now)
    }

    /// "waiting for bob and carol (buffering, not ready)" and its "continuing without" twin; nil
    /// when nobody is missing.
    private func notice(_ action: NoticeAction, about missing: [(id: ConnectionID, why: String)]) -> Notice? {
        let names = missing.compactMap { connections[$0.id]?.name }
        guard let actor = names.first else { return nil }
        let reasons = distinctInOrder(missing.map(\.why))
        return Notice(actor: actor, action: action, others: names, detail: reasons.joined(separator: ", "))
    }

    // MARK: Media

    /// Compares a participant's media with the first report for the activity; a difference is
    /// announced to everyone, naming who differs. Playback goes on either way.
    private mutating func mediaReported(_ info: MediaInfo, activity: Int, by name: String, in roomName: String) -> [Output] {
        guard let room = rooms[roomName], room.activity.id == activity else { return [] }
        guard let reference = room.mediaReference else {
            rooms[roomName]?.mediaReference = (name, info)
            return []
        }
        guard reference.name != name else {
            rooms[roomName]?.mediaReference = (name, info)
            return []
        }
        let differences = info.differences(from: reference.info)
        guard !differences.isEmpty, !room.mismatchesAnnounced.contains(name) else { return [] }
        rooms[roomName]?.mismatchesAnnounced.insert(name)
        return broadcast(.notice(Notice(
            actor: name, action: .mismatch, others: [reference.name], detail: differences.joined(separator: ", "))),
            in: roomName)
    }

    // MARK: Time

    /// Runs deadlines: holds that waited long enough, due announcements, participant lists.
    public mutating func tick(now: Double) -> [Output] {
        var outputs: [Output] = []
        for name in Array(rooms.keys) {
            outputs += announceIfDue(name, now: now)
            if let hold = rooms[name]?.hold, now >= hold.deadline {
                outputs += giveUp(name, now: now)
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
        rooms.values.flatMap { room in
            [room.hold?.deadline, room.hold?.announceAt, room.nextParticipantsBroadcast].compactMap { $0 }
        }.min()
    }

    // MARK: Views

    private func participants(in roomName: String) -> [ParticipantInfo] {
        guard let room = rooms[roomName] else { return [] }
        return room.members.compactMap { id in
            guard let connection = connections[id], let name = connection.name else { return nil }
            let landed = room.hold?.landed.contains(id) == true
            return ParticipantInfo(
                name: name, state: landed ? "landed" : "joined", drift: connection.drift, rtt: connection.rtt,
                status: connection.status)
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

    /// The current activity of a room.
    public func activity(of roomName: String) -> Activity? { rooms[roomName]?.activity }
}

/// The distinct reasons, in first-seen order.
private func distinctInOrder(_ reasons: [String]) -> [String] {
    var seen: Set<String> = []
    return reasons.filter { seen.insert($0).inserted }
}
