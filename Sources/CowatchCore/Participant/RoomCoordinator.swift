/// One participant's side of the room: clock sync, the group timeline, turning local intents into
/// group actions, and reconciling the player with the timeline.
///
/// A state machine in the style of our other cores: every event method returns `Action`s for the
/// shell (the daemon) to carry out, and time is a parameter (`now`, local monotonic seconds), so
/// it is tested with a manual clock and a simulated player.
///
/// Threading: a value type; one owner (the daemon's room actor) calls it.
public struct RoomCoordinator: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// Drift correction thresholds and gains.
        public var drift: DriftController.Configuration
        /// Clock estimation (probe schedule, window).
        public var clock: ReferenceClockEstimator.Configuration
        /// Seconds between `report` messages to the server. Default 1 s.
        public var reportInterval: Double
        /// Seconds a local action may wait for the server's answer before reconciling resumes. Default 3 s.
        public var actionTimeout: Double
        /// Seconds: a held (paused) player closer than this to the group's position is not re-seeked. Default 0.002 s.
        public var snapTolerance: Double
        /// Seconds: a held player within this of the target counts as landed (ready). Default 0.05 s.
        public var readyTolerance: Double
        /// Seconds this player is assumed to take to start after an unpause until it has measured
        /// its own starts (`UnpauseLead`). Default 0: a guess wrong by 10 ms costs more than none
        /// (mpv with `ao=null` starts within 1 ms).
        public var unpauseLatencyPrior: Double

        public init(
            drift: DriftController.Configuration = .init(), clock: ReferenceClockEstimator.Configuration = .init(),
            reportInterval: Double = 1, actionTimeout: Double = 3, snapTolerance: Double = 0.002,
            readyTolerance: Double = 0.05, unpauseLatencyPrior: Double = 0
        ) {
            self.drift = drift
            self.clock = clock
            self.reportInterval = reportInterval
            self.actionTimeout = actionTimeout
            self.snapTolerance = snapTolerance
            self.readyTolerance = readyTolerance
            self.unpauseLatencyPrior = unpauseLatencyPrior
        }
    }

    /// What the player looks like right now.
    public struct PlayerSample: Sendable, Equatable {
        /// The fine media position (audio-pts with audio, the frame clock without), at local time `at`.
        public var position: Double
        public var at: Double
        public var paused: Bool
        public var speed: Double
        /// A seek is in flight (issued, not yet landed).
        public var seeking: Bool
        /// The player cannot follow now (loading media, or paused for cache): leave it alone.
        public var stalled: Bool

        public init(position: Double, at: Double, paused: Bool, speed: Double, seeking: Bool, stalled: Bool = false) {
            self.position = position
            self.at = at
            self.paused = paused
            self.speed = speed
            self.seeking = seeking
            self.stalled = stalled
        }
    }

    public enum PlayerCommand: Sendable, Equatable {
        case setPaused(Bool)
        case seek(to: Double)
        case setSpeed(Double)
    }

    public enum Action: Sendable, Equatable {
        case send(ClientMessage)
        case player(PlayerCommand)
        /// Show and publish: who did what.
        case notice(Notice)
        /// The server applied our action `id`, or carried out our end, role or kick `id`.
        case actionApplied(id: Int)
        /// We are in the room.
        case joined(ServerMessage.Welcome)
        case participants([ParticipantInfo])
        /// The room's activity is (now) this: load its media if it is not what the player has.
        case activity(Activity)
        /// Someone ended the activity for everyone; the server closes the connection next.
        case ended(by: String)
        /// The server refused or failed; the session is over.
        case failed(CowatchError)
        /// The server did not carry out our action, chat line, message, detach, end, role or
        /// kick `id` (`not-permitted`, `rate-limited`, `expired`, …); the session goes on.
        case actionRefused(id: Int, CowatchError)
        /// The server refused something none of our waiting requests matches; the session goes on.
        case refused(CowatchError)
        /// A chat line (ours included: its `id` confirms our request).
        case chat(ChatLine)
        /// A messenger message for us (each delivered once, though a reconnect may resend it).
        case message(RoomMessage)
        /// Our reliable message `id` reached these participants.
        case messageDelivered(id: Int, to: [String])
        /// (journal) An attachment is in the room (`history`: it was there before we joined).
        case attachmentAdded(Attachment, history: Bool)
        /// (journal) `by` removed attachment `id` for everyone.
        case attachmentRemoved(id: String, by: String)
        /// (playlist) The room's playlist is now this; `change` says what changed and who did it.
        case playlist(PlaylistState, change: PlaylistChange?)
        /// (stream) The room's offered films are now these.
        case shares([SharedMedia])
        /// (stream) `receiver` asks for our offered file `fingerprint`: serve it on a
        /// connection of its own naming `stream`.
        case streamWanted(stream: Int, fingerprint: String, for: String)
    }

    public let configuration: Configuration
    public let name: String
    public let room: String
    public private(set) var estimator: ReferenceClockEstimator
    public private(set) var drift: DriftController
    /// This player's unpause latency, learned from its starts: scheduled starts are ordered that
    /// much early (pre-roll).
    public private(set) var unpauseLead: UnpauseLead
    public private(set) var timelines: TimelinePair?
    public private(set) var participants: [ParticipantInfo] = []
    /// The last measured error against the timeline (positive: ahead), seconds.
    public private(set) var lastError: Double?
    /// The activity: what we came with, then what the room says.
    public private(set) var activity: Activity
    /// The room's rules, from the welcome.
    public private(set) var policy = RoomPolicy()
    /// Who the room said plays a copy of the current activity's media that differs from the
    /// room's first report of it (`mismatch` notices name them), until the activity changes.
    public private(set) var copiesDiffering: Set<String> = []
    /// What we say about ourselves (stall, readiness, "wait for me").
    public private(set) var status: ParticipantStatus
    /// Our role in the room, from the welcome (and role notices).
    public private(set) var role: Role = .member
    /// The room secret, if this participant has one. Never logged.
    private let secret: String?
    /// Proves us on a reconnect (from the last welcome). A secret.
    public private(set) var token: String?
    /// This connection's handshake: our nonce, the certificate fingerprint we verified, and
    /// whether we proved a secret (then the welcome must prove it back).
    private var clientNonce = ""
    private var fingerprint = ""
    /// The server certificate's fingerprint verified on the current link (`sha256:…`), nil without TLS.
    public var serverFingerprint: String? { fingerprint.isEmpty ? nil : fingerprint }
    private var provedSecret: RoomVerifier?
    /// Keys derived from the secret, per salt (scrypt is slow; the salt rarely changes).
    private var derivedKeys: [String: RoomVerifier] = [:]

    private var outstandingProbes: [Int: Double] = [:]
    private var nextProbeID = 0
    private var lastProbeSent: Double?
    private var nextActionID = 0
    private var pendingActions: [Int: Double] = [:]
    /// The room's playlist as the server last sent it (`playlist` feature); nil before any.
    public internal(set) var playlist: PlaylistState?
    /// Our playlist edits the server has not answered yet.
    var pendingEdits: Set<Int> = []
    /// Our end, role and kick requests awaiting the server's answer (RoomCoordinator+Requests.swift).
    var requests = RoomRequestTracker()
    /// The optional features the server agreed to (from its challenge).
    public internal(set) var features: Set<String> = []
    /// (stream) The room's offered films, as the server last said.
    public internal(set) var shares: [SharedMedia] = []
    /// Chat and message ids: from a random base per run, so a receiver's duplicate check never
    /// mistakes a restarted daemon's new messages for old ones.
    var nextRequestID = Int.random(in: 1...(1 << 41)) << 10
    /// Chat lines and reliable messages awaiting the server's confirmation.
    var pendingRequests: [Int: Double] = [:]
    /// Reliable messages not yet acknowledged, in order; `sent` false until written on this
    /// connection (a reconnect clears it, so they go again).
    var unacknowledged: [(message: RoomMessage, sent: Bool)] = []
    /// The newest unreliable message per topic not yet sent (newest wins).
    var latestUnreliable: [String: RoomMessage] = [:]
    /// Our own pace for messages, under the server's budgets and flood guard.
    var messagePace = MessagePace()
    /// After a reconnect: the others we were with, awaited (until a deadline) before our queued
    /// messages go, so a server restart that brings everyone back in turn loses nobody's copy.
    var awaitedPeers: (names: Set<String>, until: Double?)?
    /// Messages delivered lately (by sender session and id), to drop a copy a sender's reconnect resent.
    var seenMessages: [String] = []
    var seenMessageSet: Set<String> = []
    /// Where the player stood when last paused (its last paused sample not seeking), for timing
    /// a start.
    private var pausedPosition: Double?
    private var snappedSeq: Int?
    /// Snaps made for `snappedSeq`, when the last one was, and the error the player settled at
    /// (after a snap landed, or when none was needed). A paused player that moves away from where
    /// it settled (a frame shown late, under load) is snapped again; one that settled on a frame
    /// next to the target (media whose frames do not fall on it) is left alone. At most
    /// `maxSnaps` per timeline, `snapRetry` apart, so it can never loop.
    private var snaps = 0
    private var lastSnapAt = -Double.infinity
    private var settledError: Double?
    static let snapRetry = 0.3
    static let maxSnaps = 3
    private var readySentSeq: Int?
    private var lastReportAt: Double = -.infinity

    /// Takes a session token kept from an earlier run (`SessionTokenFile`), unless we hold one
    /// already: the next hello presents it, so the server gives back our name and role.
    public mutating func adoptToken(_ saved: String) {
        if token == nil { token = saved }
    }

    /// - Parameter token: a session token to start with (the host of an embedded server gets one
    ///   from it, to own its room).
    public init(
        name: String, room: String, activity: Activity, status: ParticipantStatus = .init(), secret: String? = nil,
        token: String? = nil, configuration: Configuration = .init()
    ) {
        self.secret = secret
        self.token = token
        self.name = name
        self.room = room
        self.activity = activity
        self.status = status
        self.configuration = configuration
        self.estimator = ReferenceClockEstimator(configuration: configuration.clock)
        self.drift = DriftController(configuration: configuration.drift)
        self.unpauseLead = UnpauseLead(prior: configuration.unpauseLatencyPrior)
    }

    public var isJoined: Bool { timelines != nil }

    /// The last `resume` sent and when (local time), for attempts that follow before a welcome.
    private var lastResume: (ClientMessage.Hello.Resume, Double)?

    /// Connection is up: say hello and start the clock burst. `fingerprint`: the server
    /// certificate's fingerprint as verified by TLS (`sha256:…`), empty without TLS.
    public mutating func connected(now: Double, fingerprint: String = "") -> [Action] {
        if isJoined { awaitedPeers = (Set(participants.map(\.name)).subtracting([name]), nil) }
        // If we were in the room before, say where the group was, in case the server lost it.
        var resume: ClientMessage.Hello.Resume?
        if let timelines, let reference = referenceTime(atLocal: now) {
            let expected = timelines.expected(at: reference)
            let ruling = timelines.ruling(at: reference)
            resume = .init(position: max(0, expected.position), playing: ruling.playing || ruling.holding, rate: ruling.rate)
            lastResume = resume.map { ($0, now) }
        } else if timelines != nil, let (saved, at) = lastResume {
            // A further attempt before any welcome (a redirect, a server that refused us): the
            // clock estimate is gone, so carry the last resume forward on our own clock.
            resume = saved
            if saved.playing { resume?.position = saved.position + max(0, now - at) * saved.rate }
        }
        estimator.reset()
        outstandingProbes = [:]
        lastProbeSent = nil
        // Answers to the last connection's requests cannot come on this one.
        requests.reset()
        clientNonce = RoomSecret.nonce()
        self.fingerprint = fingerprint
        provedSecret = nil
        challenges = 0
        welcomed = false
        helloStatus = status
        var actions: [Action] = [
            .send(.hello(.init(
                features: WireFeature.all, room: room, name: name, nonce: clientNonce, token: token, activity: activity,
                status: status, resume: resume)))
        ]
        actions += probeIfDue(now: now)
        return actions
    }

    // MARK: Server messages

    public mutating func received(_ message: ServerMessage, now: Double) -> [Action] {
        switch message {
        case .timeReply(let id, let t1, let t2, let t3):
            guard outstandingProbes.removeValue(forKey: id) == t1 else { return [] }
            estimator.add(ClockSample(t1: t1, t2: t2, t3: t3, t4: now))
            return []
        case .challenge(let challenge):
            features = Set(challenge.features)
            return answer(challenge)
        case .welcome(let welcome):
            if let proved = provedSecret {
                // We proved the secret; the server must prove it too, or it is not the room's server.
                let expected = RoomSecret.proof(
                    key: proved.key, side: .server, room: room, name: name, clientNonce: clientNonce,
                    serverNonce: serverNonce, fingerprint: fingerprint)
                guard let proof = welcome.proof, RoomSecret.matches(proof, expected) else {
                    return [.failed(CowatchError(.authFailed, "the server could not prove it knows the room secret"))]
                }
            }
            token = welcome.token
            role = welcome.role
            welcomed = true
            lastResume = nil
            timelines = TimelinePair(welcome.timeline)
            participants = welcome.participants
            if welcome.activity.id != activity.id { copiesDiffering = [] }
            activity = welcome.activity
            policy = welcome.policy
            snappedSeq = nil
            readySentSeq = nil
            // Reliable messages the last connection did not see acknowledged go again, in order,
            // once the others are back (or the grace is over).
            for index in unacknowledged.indices { unacknowledged[index].sent = false }
            if awaitedPeers != nil { awaitedPeers?.until = now + Self.peersReturnGrace }
            // What changed while the handshake ran went nowhere (nothing goes before a welcome).
            var caughtUp: [Action] = []
            if status != helloStatus { caughtUp.append(.send(.status(status))) }
            if let (id, info) = withheldMedia, id == activity.id { caughtUp.append(.send(.media(activity: id, info))) }
            withheldMedia = nil
            return [.joined(welcome), .participants(welcome.participants), .activity(welcome.activity)] + caughtUp
                + flushMessages(now: now)
        case .applied(let timeline, let notice, let actionID, let newActivity):
            var actions: [Action] = []
            if let newActivity, newActivity.id != activity.id {
                activity = newActivity
                copiesDiffering = []
                actions.append(.activity(newActivity))
            }
            if var pair = timelines {
                let reference = estimator.estimate(atLocal: now)?.reference(atLocal: now) ?? timeline.reference
                if pair.advance(to: timeline, at: reference) { timelines = pair }
            } else {
                timelines = TimelinePair(timeline)
            }
            if let notice {
                if notice.actor == name, let actionID {
                    pendingActions[actionID] = nil
                    actions.append(.actionApplied(id: actionID))
                }
                actions.append(.notice(notice))
            }
            drift.reset()
            return actions
        case .notice(let notice):
            if notice.action == .mismatch { copiesDiffering.insert(notice.actor) }
            if notice.others?.contains(name) == true, notice.action == .op || notice.action == .deop, role != .owner {
                role = notice.action == .op ? .operator : .member
            }
            // From a server without `request-ids`, our own op, deop or kick is answered by its notice.
            return [.notice(notice)] + (requests.noticed(notice, me: name).map { [.actionApplied(id: $0)] } ?? [])
        case .participants(let list):
            participants = list
            return [.participants(list)] + (isJoined && awaitedPeers != nil ? flushMessages(now: now) : [])
        case .ended(let by):
            return [.ended(by: by)] + requests.ended().map { .actionApplied(id: $0) }
        case .error(let code, let message):
            return [.failed(CowatchError(CowatchError.Code(rawValue: code), message))]
        case .refused(let actionID, let code, let message):
            let error = CowatchError(CowatchError.Code(rawValue: code), message)
            if let actionID, pendingActions.removeValue(forKey: actionID) != nil {
                return [.actionRefused(id: actionID, error)]
            }
            if let actionID, pendingEdits.remove(actionID) != nil {
                return [.actionRefused(id: actionID, error)]
            }
            if let actionID, let refused = requestRefused(actionID) {
                return [.actionRefused(id: refused, error)]
            }
            if let refused = requests.refused(actionID) {
                return [.actionRefused(id: refused, error)]
            }
            return [.refused(error)]
        case .done(let id):
            return requests.done(id).map { [.actionApplied(id: $0)] } ?? []
        case .chat(let line):
            return chatReceived(line)
        case .message(let message):
            return messageReceived(message)
        case .messageAck(let id, let delivered):
            return messageAcknowledged(id, delivered: delivered)
        case .attachmentAdded(let attachment, let history):
            return [.attachmentAdded(attachment, history: history)]
        case .attachmentRemoved(let id, let by, let requestID):
            return attachmentRemoved(id, by: by, requestID: requestID)
        case .transferReady, .transferDone:
            // Transfer-connection answers, never on the room connection: ignored.
            return []
        case .redirect:
            // Before any challenge: the daemon's connection loop follows it (ClusterRoute).
            return []
        case .playlist(let state, let change, let requestID):
            return playlistReceived(state, change: change, requestID: requestID)
        case .playlistAvailability(let availability, let version):
            return playlistAvailabilityReceived(availability, version: version)
        case .shares(let offers):
            shares = offers
            return [.shares(offers)]
        case .streamWanted(let stream, let fingerprint, let receiver):
            return [.streamWanted(stream: stream, fingerprint: fingerprint, for: receiver)]
        case .streamReady:
            // Stream-connection answers, never on the room connection: ignored.
            return []
        case .unsupported:
            // The server does not know something we sent: nothing to undo.
            return []
        case .unknown(let type):
            return [.send(.unsupported(type: type))]
        }
    }

    private var serverNonce = ""
    /// Challenges on this connection: a server asks a few times at most, and only before the welcome.
    private var challenges = 0
    /// This connection got its welcome (challenges after it are refused). Until then — a
    /// reconnect's handshake, whose time replies already come back — nothing but hello, auth and
    /// probes go on it: a server takes a room message from a connection it has not joined for a
    /// protocol violation.
    private(set) var welcomed = false
    /// The status the last hello carried, and media loaded during a handshake: sent after the welcome.
    private var helloStatus: ParticipantStatus?
    private var withheldMedia: (Int, MediaInfo)?

    /// Answers the server's challenge: prove the room secret, or give a new room its verifier.
    private mutating func answer(_ challenge: ServerMessage.Challenge) -> [Action] {
        challenges += 1
        guard challenges <= 3, !welcomed else {
            return [.failed(CowatchError(.protocolViolation, "the server challenged again and again"))]
        }
        serverNonce = challenge.nonce
        switch challenge.access {
        case .open:
            provedSecret = nil
            if secret != nil {
                // We expect a guarded room: an open one of that name may be a stranger's.
                return [.failed(CowatchError(
                    .authFailed,
                    "room \(room) on this server has no secret, but you gave one: someone else may have taken the name; not joining"))]
            }
            return [.send(.auth(.init()))]
        case .new:
            guard let secret else {
                provedSecret = nil
                return [.send(.auth(.init()))]
            }
            guard let verifier = try? RoomSecret.verifier(secret: secret) else {
                return [.failed(CowatchError(.invalidConfiguration, "the room secret cannot be used"))]
            }
            derivedKeys = [verifier.salt: verifier]
            provedSecret = verifier
            return [.send(.auth(.init(create: verifier)))]
        case .secret(let salt):
            guard let secret else {
                return [.failed(CowatchError(
                    .authFailed, "room \(room) needs its secret: join with the invite link, or give --room-secret-file"))]
            }
            let verifier: RoomVerifier
            if let known = derivedKeys[salt] {
                verifier = known
            } else {
                guard let derived = try? RoomSecret.verifier(secret: secret, salt: salt) else {
                    return [.failed(CowatchError(.invalidConfiguration, "the room secret cannot be used"))]
                }
                derivedKeys = [salt: derived]  // one salt at a time: a server cannot make us keep many
                verifier = derived
            }
            provedSecret = verifier
            let proof = RoomSecret.proof(
                key: verifier.key, side: .client, room: room, name: name, clientNonce: clientNonce,
                serverNonce: challenge.nonce, fingerprint: fingerprint)
            return [.send(.auth(.init(proof: proof)))]
        }
    }

    // MARK: Local intents

    /// The local user (control socket or mpv window) wants `kind`. `position` is this player's
    /// position now (for pause: the frame it stopped on); returns the message to send and the id
    /// the server will echo.
    public mutating func request(
        _ kind: ActionKind, position: Double?, from: Double? = nil, rate: Double? = nil, activity: Activity? = nil,
        now: Double
    ) -> (id: Int, actions: [Action]) {
        let id = takeActionID()
        guard welcomed else {
            // Between a hello and its welcome the server would take it for a protocol violation.
            return (id, [.actionRefused(id: id, CowatchError(.notInRoom, "the room connection is being set up; try again in a moment"))])
        }
        pendingActions[id] = now
        // The server counts a play as "I am ready" (as Syncplay does); agree, without a message.
        if kind == .play { status.ready = true }
        // The server drops the action if it arrives after we stopped waiting for it.
        let deadline = referenceTime(atLocal: now).map { $0 + configuration.actionTimeout }
        let request = ClientMessage.ActionRequest(
            id: id, kind: kind, position: position.map { max(0, $0) }, from: from.map { max(0, $0) }, rate: rate,
            activity: activity, deadline: deadline)
        return (id, [.send(.action(request))])
    }

    /// Whether our own pause should wait for the room's order instead of pausing this player at
    /// once: yes when the link's round trip is at most `pauseWithRoomWithin`, so the order comes
    /// back before a person could tell, and every player (ours too) pauses on the same message.
    /// Pausing first would put ours a round trip and a server pass ahead of the rest (3–5 ms on
    /// loopback). On a slow link a person would see the film run on for the round trip: ours
    /// pauses at once and the others follow the order (each seeks to the frame ours stopped on).
    public func pausesWithRoom(atLocal now: Double) -> Bool {
        guard let roundTrip = estimator.estimate(atLocal: now)?.roundTrip else { return false }
        return roundTrip <= Self.pauseWithRoomWithin
    }

    /// The longest round trip at which our own pause waits for the room's order (30 ms: under a
    /// frame at 25 fps, and too short for a person to see).
    public static let pauseWithRoomWithin = 0.03

    /// Our stall, readiness or "wait for me" changed: remember it (for the next hello) and tell
    /// the room if we are in it.
    public mutating func setStatus(_ new: ParticipantStatus) -> [Action] {
        guard new != status else { return [] }
        status = new
        return isJoined && welcomed ? [.send(.status(new))] : []
    }

    /// The player has loaded the current activity's media: tell the room what our copy looks like
    /// (once welcomed back, if the link is between a hello and its welcome).
    public mutating func mediaLoaded(_ info: MediaInfo) -> [Action] {
        guard isJoined else { return [] }
        guard welcomed else {
            withheldMedia = (activity.id, info)
            return []
        }
        return [.send(.media(activity: activity.id, info))]
    }

    /// After leaving or an end: forget the room, keep the activity and status for a later join.
    /// A player left at a drift nudge's speed (0.989×) goes back to the group's rate: returns that
    /// speed change when `playerSpeed` (the player's now) differs.
    @discardableResult
    public mutating func reset(playerSpeed: Double? = nil) -> [Action] {
        let rate = timelines?.current.rate ?? 1
        defer { resetState() }
        guard let playerSpeed, abs(playerSpeed - rate) > 1e-9 else { return [] }
        return [.player(.setSpeed(rate))]
    }

    /// The next id for an action, an end, a role or a kick: counts up from 1 and starts again
    /// after `wireMaxRequestID` (the most a server takes for the latter).
    mutating func takeActionID() -> Int {
        nextActionID = nextActionID >= wireMaxRequestID ? 1 : nextActionID + 1
        return nextActionID
    }

    private mutating func resetState() {
        requests.reset()
        timelines = nil
        lastResume = nil
        participants = []
        pendingActions = [:]
        pendingEdits = []
        playlist = nil
        lastError = nil
    }

    /// True while one of our actions awaits the server: the player shows the user's intent, and
    /// reconciling it back to the old timeline would flicker.
    public func hasPendingAction(now: Double) -> Bool {
        pendingActions.values.contains { now - $0 < configuration.actionTimeout }
    }

    // MARK: The loop

    /// Reference time now, if the clock is estimated.
    public func referenceTime(atLocal now: Double) -> Double? {
        estimator.estimate(atLocal: now)?.reference(atLocal: now)
    }

    /// The group's expected position at local time `now`.
    public func expectedPosition(atLocal now: Double) -> Double? {
        guard let timelines, let reference = referenceTime(atLocal: now) else { return nil }
        return timelines.expected(at: reference).position
    }

    /// Local time at which the timeline next changes by itself (a scheduled play or speed change),
    /// so the shell can wake exactly then; for a start, first the player's unpause latency
    /// earlier (pre-roll: `tick` unpauses then).
    public func nextTransition(afterLocal now: Double) -> Double? {
        guard let timelines, let estimate = estimator.estimate(atLocal: now) else { return nil }
        let at = estimate.local(atReference: timelines.current.reference)
        let isStart = timelines.current.playing && !timelines.previous.playing
        return [isStart ? at + startShift() - unpauseLead.lead : at, at].filter { $0 > now }.min()
    }

    /// Seconds after the group's start instant at which this player should start moving.
    ///
    /// A paused player resumes from where it shows it is, and that is not always the start
    /// position: with AAC audio, mpv paused after an exact seek to X reports (and resumes from)
    /// X + 21 ms, one audio frame on, however often it is snapped back. Unpaused on the instant,
    /// every player would start that far ahead and the drift controller would spend half a
    /// second at −4 % pulling the whole room back, spreading the players apart meanwhile. So a
    /// player paused a little ahead waits until the timeline reaches it, one a little behind
    /// starts that much early, and all move in step from their first frame. Zero for anything
    /// but a start, or past `maxStartShift` (no paused frame's offset).
    func startShift() -> Double {
        guard let timelines, let paused = pausedPosition, timelines.current.playing, !timelines.previous.playing,
            timelines.current.rate > 0
        else { return 0 }
        let shift = (paused - timelines.current.position) / timelines.current.rate
        return abs(shift) <= Self.maxStartShift ? shift : 0
    }

    /// Seconds a start or speed change may be ordered before its instant (float rounding at the
    /// instant itself).
    static let transitionSlack = 0.000_1

    /// A frame at 20 fps: more than that is no paused frame's offset.
    static let maxStartShift = 0.05

    /// Runs periodically (and at transitions): clock probes, reports, and reconciling the player.
    public mutating func tick(now: Double, sample: PlayerSample?) -> [Action] {
        var actions = probeIfDue(now: now)
        if isJoined { actions += flushMessages(now: now) }
        outstandingProbes = outstandingProbes.filter { now - $0.value < 5 }
        pendingActions = pendingActions.filter { now - $0.value < configuration.actionTimeout }
        if let sample {
            unpauseLead.observe(
                position: sample.position, at: sample.at, speed: sample.speed, paused: sample.paused,
                seeking: sample.seeking || sample.stalled)
            // Kept once it plays: a start ordered early must still read as due on the next tick.
            if sample.paused && !sample.seeking && !sample.stalled { pausedPosition = sample.position }
        }
        guard let sample, let timelines, let estimate = estimator.estimate(atLocal: now) else { return actions }

        let reference = estimate.reference(atLocal: sample.at)
        // Evaluated on the very instant `nextTransition` named (the shell decides for it ahead),
        // rounding must not put a change a tick later: a tenth of a millisecond of slack.
        let slack = Self.transitionSlack
        let ruling = timelines.ruling(at: reference + slack)
        let expected = timelines.expected(at: reference, slack: slack)
        // A start is due within this player's unpause latency (shifted by where it is paused):
        // order it now, so its time starts advancing on its instant rather than that much after.
        let startDue = timelines.expected(
            at: estimate.reference(atLocal: sample.at + unpauseLead.lead - startShift()), slack: slack
        ).playing

        if !sample.seeking && !sample.stalled && !hasPendingAction(now: now) {
            if startDue && !expected.playing {
                if sample.paused { actions += unpause(sample, now: now) }
            } else if !startDue && expected.playing && sample.paused {
                // Paused a little ahead of the start position: it waits for the timeline.
            } else {
                actions += reconcile(sample: sample, ruling: ruling, expected: expected, now: now)
            }
        }
        if welcomed, now - lastReportAt >= configuration.reportInterval {
            lastReportAt = now
            actions.append(.send(.report(drift: lastError, rtt: estimate.roundTrip)))
        }
        return actions
    }

    private mutating func reconcile(
        sample: PlayerSample, ruling: GroupTimeline, expected: (position: Double, playing: Bool, rate: Double), now: Double
    ) -> [Action] {
        var actions: [Action] = []
        let error = sample.position - expected.position
        // Drift is what playing players measure; a paused one shows a whole frame, up to a
        // frame off the group's instant, and that is no drift to report ("drift 21 ms" before
        // anything plays).
        // An error past the seek threshold is not drift either: it is the place a joiner (or a
        // player after a seek) has not reached yet, and the seek below removes it ("drift
        // -134227 ms" right after a join).
        lastError = expected.playing && abs(error) <= drift.configuration.seekThreshold ? error : nil
        if !expected.playing {
            if !sample.paused { actions.append(.player(.setPaused(true))) }
            if abs(sample.speed - ruling.rate) > 1e-9 { actions.append(.player(.setSpeed(ruling.rate))) }
            if snappedSeq != ruling.seq {
                snappedSeq = ruling.seq
                snaps = 0
                lastSnapAt = -.infinity
                settledError = nil
            }
            let tolerance = configuration.snapTolerance
            if let settled = settledError {
                if abs(error) > tolerance, abs(error - settled) > tolerance, snaps < Self.maxSnaps,
                    now - lastSnapAt >= Self.snapRetry
                {
                    snaps += 1
                    lastSnapAt = now
                    settledError = nil
                    actions.append(.player(.seek(to: expected.position)))
                    return actions
                }
            } else if snaps == 0 && abs(error) > tolerance {
                snaps += 1
                lastSnapAt = now
                actions.append(.player(.seek(to: expected.position)))
                return actions
            } else {
                settledError = error  // first look, or the first look after a snap landed
            }
            if welcomed && ruling.holding && readySentSeq != ruling.seq && abs(error) <= configuration.readyTolerance {
                readySentSeq = ruling.seq
                actions.append(.send(.ready(seq: ruling.seq)))
            }
            return actions
        }
        snappedSeq = nil
        switch drift.update(error: error, expected: expected.position, rate: expected.rate, now: now) {
        case .seek(let target):
            actions.append(.player(.seek(to: target)))
        case .speed(let speed):
            if abs(sample.speed - speed) > 1e-9 { actions.append(.player(.setSpeed(speed))) }
        }
        if sample.paused { actions += unpause(sample, now: now) }
        return actions
    }

    /// The player's audio output delays what it plays by `seconds` (measured at a speed change by
    /// the shell): how short a start's correction may be (`DriftController.startConstant`).
    public mutating func outputDelayMeasured(_ seconds: Double) {
        drift.outputDelayMeasured(seconds)
    }

    /// Unpauses the player, and times how long it takes to start.
    private mutating func unpause(_ sample: PlayerSample, now: Double) -> [Action] {
        unpauseLead.unpaused(at: now, position: sample.position)
        drift.started(at: now)
        return [.player(.setPaused(false))]
    }

    private mutating func probeIfDue(now: Double) -> [Action] {
        if let last = lastProbeSent, now < estimator.nextProbe(after: last) { return [] }
        lastProbeSent = now
        nextProbeID += 1
        outstandingProbes[nextProbeID] = now
        return [.send(.timeRequest(id: nextProbeID, t1: now))]
    }
}
