import CowatchCore
import CowatchMpv
import CowatchNet
import Foundation
import Logging

/// The daemon's membership of a room: runs the `RoomCoordinator` against the real player and the
/// real server connection, and the `GroupSessionMachine` for its lifecycle (reconnect after the
/// server goes away, leave, join, end).
///
/// Threading: an actor. `run()` is its loop; `PlayerController` hands it every player event
/// (`playerEvent`, synchronous: it never awaits, and this actor never awaits the controller);
/// the request methods (in `RoomSession+Requests.swift`) serve control-socket commands.
actor RoomSession {
    /// The player, through the room's seam: typed commands and reads, no mpv strings.
    let player: any RoomPlayer
    /// The player's subtitle tracks (the journal's attachments; RoomSession+Journal.swift).
    let subtitles: SubtitleTracks
    let configuration: DaemonConfiguration
    let room: RoomSettings
    let events: EventHub
    let logger: Logger
    /// The daemon's one clock (the controller's): every instant this session reads or waits for.
    let clock: any MonotonicClock

    // The room. `machine` is the one source of where this daemon stands (waiting, joined,
    // invalidated); `isJoined` and `view` are read from it, never kept beside it.
    var coordinator: RoomCoordinator
    var machine: GroupSessionMachine
    /// Loads media; knows what the player has (the room's, after an `open`).
    let media: MediaLoader
    /// What the rest of the daemon (the controller, outside this actor) sees of the room:
    /// written only by `publishSession()` and `perform`, from `machine` and the group timeline.
    nonisolated let view = Locked(RoomView())
    /// The connection while one is up (not a state: `isJoined` says whether to use it).
    var link: RoomLink?
    var publishedSession: SessionState?
    /// `join` and `leave` on their way to the loop.
    let mailbox = LoopMailbox()
    /// Callers of `waitForSession`, woken on every session change to look again.
    var sessionWatchers: [Reply<Void>] = []
    /// A server silent this long (frozen, a half-open link), or a handshake not done in it, is
    /// left and reconnected to.
    static let silenceLimit = 15.0
    /// The host printed its invite link (once, at its first join; on a terminal only, never a journal).
    var invitePrinted = false
    /// Hosting with `--map-port`: what the port mapper found (nil until it says).
    var reachability: Reachability?
    /// Hosting: what the router said of an IPv6 firewall pinhole (nil when none was asked).
    var reachabilityIPv6: Reachability?
    /// Why the last attempt to reach the server failed, said out loud once per cause (retries of
    /// the same one stay quiet); cleared once in the room. Also `room.last_error` in `get_status`.
    var connectFailure: CowatchError?
    /// Our requests waiting for the server's answer, by request id (RoomSession+Pending.swift).
    let pending = PendingRequests()
    /// Who the reliable messages still waited for reached (from their acknowledgement).
    var deliveries: [Int: [String]] = [:]
    /// The room's recent chat as we have it (the history the server sent at our join, then
    /// every line), for `get_chat`: events are not replayed to a client that connects later.
    var chatLog: [ChatLine] = []
    /// The last refusal that left this daemon out of the room (for `join`'s answer).
    var lastRefusal: CowatchError?
    /// The room's attachments and the subtitles added to the player (RoomSession+Journal.swift).
    var journal = DaemonJournal()
    /// Subtitle attachments to fetch and add to the player, in order (bounded).
    nonisolated let subtitleQueue = AsyncStream.makeStream(of: Attachment.self, bufferingPolicy: .bufferingNewest(64))
    /// Where the next connection goes: our server, or the cluster server it redirected us to
    /// (see RoomSession+Cluster.swift).
    var route: ClusterRoute
    /// In a Syncplay room: the managed room made here (reconnects go there) and `manage` for the
    /// link that is up (RoomSession+Syncplay.swift).
    let syncplayControl = SyncplayLinkControl()

    /// Roles given or taken (op/deop notices) since the last participant list, which arrives
    /// only once a second: an operator's switch right after its op is judged by its new role.
    var recentRoles: [String: Role] = [:]
    /// The switch (activity id) whose media is being tried before it is loaded (RoomSession+Open.swift).
    var checkingSwitch: Int?

    /// The player, as the session sees it: what media it has relative to the room's (loading,
    /// refused, offered, failed), the seek fence, stalls, echoes of our orders and the person's
    /// seek gestures. A pure machine in the core; RoomSession+Player.swift feeds it and carries
    /// out its actions.
    var playerSide: PlayerSide
    /// How many player events this session has taken in: a test on a manual clock waits for it
    /// to catch up with its player before it moves time on.
    var playerEventsSeen = 0

    /// The notices on mpv's OSD, stacked.
    var osd = OSDStack()
    /// Tries media before our own `open` switches the room to it (nil: no check).
    let probe: MediaProbe?
    /// Finds local files by identity in `--media-dir` folders (nil: none given).
    let mediaIndex: MediaDirectoryIndexer?
    /// Our own copies of the playlist's entries (RoomSession+Playlist.swift).
    var playlistFiles = PlaylistFiles()
    /// Seeding a new room's playlist with our media (RoomSession+PlaylistSeed.swift).
    var playlistSeeding = PlaylistSeeding()
    /// Film streams: the one we play from, the files we offer (RoomSession+Stream.swift).
    var streams = DaemonStreams()
    /// Serves our offered files to members who stream them.
    let sharing: FilmSharing

    /// True when the server has welcomed this session and it has not ended.
    var isJoined: Bool { machine.state == .joined }

    init(
        player: any RoomPlayer, subtitles: SubtitleTracks, configuration: DaemonConfiguration, room: RoomSettings,
        media: MediaLoader,
        events: EventHub, logger: Logger, probe: MediaProbe? = nil, mediaIndex: MediaDirectoryIndexer? = nil
    ) {
        self.clock = media.clock
        self.mediaIndex = mediaIndex
        self.player = player
        self.subtitles = subtitles
        self.probe = probe
        self.configuration = configuration
        self.room = room
        self.media = media
        self.events = events
        self.logger = logger
        self.machine = GroupSessionMachine(configuration: .init(onEnd: configuration.onEnd))
        self.route = ClusterRoute(origin: Endpoint(host: room.serverHost, port: room.serverPort))
        self.sharing = FilmSharing(rate: configuration.streams.sharingRate, logger: logger)
        self.playerSide = PlayerSide(
            configuration: .init(name: configuration.name, openPolicy: room.openPolicy, openTimeout: configuration.openTimeout))
        self.coordinator = RoomCoordinator(
            name: configuration.name, room: room.room, activity: Activity(url: Activity.ownMediaURL(configuration.media)),
            secret: room.secret?.text)
    }

    /// What `run()` ended with, besides cancellation.
    enum Outcome: Sendable {
        /// The activity ended and on-end is quit.
        case quit
        /// The server refused us for good (name taken, wrong version, …).
        case stop(CowatchError)
    }

    // MARK: Loop

    /// Connects, joins and keeps the player on the group timeline until cancelled, the activity
    /// ends (with on-end quit), or the server refuses us for good.
    func run() async -> Outcome? {
        probeTracks()
        await startLoopbackIfNeeded()
        if let receivers = configuration.streams.receivers { await sharing.allow(receivers) }
        // Hashed beside joining, never before it: the hash runs on a nice-19 thread, which a
        // loaded machine may leave waiting for seconds.
        Task { [weak self] in await self?.rememberOwnMedia() }
        var coordinatorConfiguration = RoomCoordinator.Configuration()
        coordinatorConfiguration.drift = room.drift
        if !playerSide.hasAudio {
            // Frame instants are noisier than audio-pts: leave errors within that noise alone.
            coordinatorConfiguration.drift.deadband = max(coordinatorConfiguration.drift.deadband, 0.001)
            // And a start has no random audio offset to remove quickly: a short time constant would
            // only chase that noise (measured: steady frames 3× further apart after it).
            coordinatorConfiguration.drift.startCorrectionTime = coordinatorConfiguration.drift.correctionTime
        }
        let hasVideo = player.hasVideo
        let activity = Activity(
            url: Activity.ownMediaURL(configuration.media),
            title: (configuration.title ?? player.mediaTitle).map(Activity.clampedTitle),
            type: configuration.activityType ?? (hasVideo ? .watch : .listen), fallbackURL: configuration.fallbackURL)
        playerSide.waitForMeSetting = configuration.waitForMe
        coordinator = RoomCoordinator(
            name: configuration.name, room: room.room, activity: activity,
            status: ParticipantStatus(ready: configuration.readyAtStart, waitForMe: configuration.waitForMe),
            secret: room.secret?.text, token: room.hostToken?.text, configuration: coordinatorConfiguration)
        publishSession()

        var next = GroupSessionMachine.Next.connect(at: clock.now())
        while !Task.isCancelled {
            switch next {
            case .stop(let error):
                publishError(error)
                return .stop(error)
            case .quit:
                return .quit
            case .stayOut:
                // Out of the room on purpose: wait for `join`.
                guard await mailbox.take(.join, until: .infinity, on: clock) else { continue }
                next = .connect(at: clock.now())
                continue
            case .connect(let at):
                // Backing off; `join` retries at once.
                if at > clock.now() {
                    _ = await mailbox.take(.join, until: at, on: clock)
                } else {
                    _ = mailbox.takeNow(.join)  // connecting now anyway
                }
            }
            guard !Task.isCancelled else { break }
            guard machine.connecting() else {
                next = .stayOut
                continue
            }
            publishSession()
            let outcome = await connectOnce()
            link = nil
            var end = connectionEnd(outcome)
            // Asked to leave and the link dropped before the bye: that is still a leave, and
            // leaving wins over a redirect.
            if mailbox.takeNow(.leave) {
                end = .left
                route.connectionEnded()
            } else if let follow = followRedirect(outcome, &end) {
                next = follow
                continue
            }
            playerSide.forgetSeeks()
            if end == .lost, isJoined {
                publishError(CowatchError(.ioError, "lost the room server; reconnecting"))
            }
            next = machine.connectionEnded(end, now: clock.now())
            if case .refused(let refusal) = end {
                lastRefusal = refusal
                if next == .stayOut { reportStayingOut(refusal) }
            }
            if machine.state.reason != .serverGone {
                // A new session starts from the room's timeline, not from where this one was; the
                // player leaves any drift nudge behind.
                perform(coordinator.reset(playerSpeed: player.speed))
            }
            publishSession()
            let gone = CowatchError(.notInRoom, "the room connection ended before the server answered")
            pending.connectionEnded(gone)
        }
        return nil
    }

    /// One connection, from connect to close; says how it ended.
    private func connectOnce() async -> LinkOutcome {
        if let syncplay = room.syncplay { return await connectToSyncplay(syncplay) }
        do {
            // The invite's other addresses, unless a cluster server sent us elsewhere.
            let alternates = route.target.host == room.serverHost && route.target.port == room.serverPort ? room.alternates : []
            let logger = logger
            let outcome = try await RoomConnection.connect(
                host: route.target.host, port: route.target.port, alternates: alternates, security: try linkSecurity(),
                logger: logger, now: { [clock] in clock.now() },
                onReached: { [target = route.target] endpoint in
                    let reached = Invite.authority(host: endpoint.host, port: endpoint.port)
                    if endpoint == target {
                        logger.info("reached the room server at \(reached)")
                    } else {
                        logger.warning("reached the room server at \(reached) (the invite's other address \(Invite.authority(host: target.host, port: target.port)) did not answer first)")
                    }
                }
            ) { inbound, send, fingerprint in
                await self.session(inbound: inbound, send: send, fingerprint: fingerprint)
            }
            return outcome
        } catch {
            return .lost(error)
        }
    }

    /// One connection to a Syncplay server's room, which `SyncplayLink` presents as a room server.
    private func connectToSyncplay(_ syncplay: SyncplayRoomSettings) async -> LinkOutcome {
        // The shared playlist's names: our own media under its name, else a file of that name in
        // our media directories.
        let index = mediaIndex
        var own = MediaFingerprint.localPath(of: configuration.media) ?? ""
        if !own.isEmpty && !own.hasPrefix("/") { own = FileManager.default.currentDirectoryPath + "/" + own }
        let ownMedia = own
        let settings = SyncplayLink.Settings(
            host: syncplay.address.host, port: syncplay.address.port, client: syncplay.client(name: configuration.name),
            extraTrustRoots: syncplay.extraTrustRoots, control: syncplayControl,
            identify: { name in
                if !ownMedia.isEmpty, (ownMedia as NSString).lastPathComponent == name,
                    let identity = try? await MediaDirectoryIndexer.identity(ofFile: ownMedia)
                {
                    return identity
                }
                return await index?.identity(named: name)
            })
        do {
            return try await SyncplayLink.connect(settings: settings, logger: logger, clock: clock) { inbound, send, fingerprint in
                await self.session(inbound: inbound, send: send, fingerprint: fingerprint)
            }
        } catch {
            return .lost(error)
        }
    }

    /// What the session machine hears of a connection's outcome; says out loud what the person
    /// must know (a server that cannot be reached, the server's own words when it keeps us out).
    private func connectionEnd(_ outcome: LinkOutcome) -> GroupSessionMachine.ConnectionEnd {
        switch outcome {
        case .left:
            return .left
        case .ended(let by):
            return .ended(by: by)
        case .redirected:
            return .lost  // followed by the loop (`followRedirect`)
        case .refused(let failure) where failure.code != .serverBusy && failure.code != .serverFull:
            return .refused(failure)
        case .refused(let failure):
            // Busy (caps, a room that opens when its host is in): try again with the backoff. The
            // server's own words (an address locked out after a flood, …) are what `join` answers
            // when it gives up waiting, never a bare timeout.
            if !isJoined {
                lastRefusal = failure
                reportConnectFailure(failure)
            }
            return .lost
        case .lost(let error as CowatchError)
        where error.code == .certificateMismatch || error.code == .unsafePath || error.code == .keyNotPinned:
            // Someone may be in the middle, or our own files are unsafe: retrying cannot help.
            return .refused(error)
        case .lost(let error):
            if !isJoined { reportConnectFailure(error) }
            logger.debug("room connection ended", metadata: ["cowatch.room.error": "\(error)"])
            return .lost
        }
    }

    /// A server that cannot be reached (nothing listens, the wrong port, a plaintext or foreign
    /// server, a handshake that never finishes) is said at once, at the default log level and
    /// as an error event — once per cause, while the daemon keeps retrying.
    private func reportConnectFailure(_ error: any Error) {
        let failure = (error as? CowatchError)
            ?? CowatchError(.ioError, "cannot reach the room server at \(room.serverHost):\(room.serverPort): \(error)")
        guard failure.message != connectFailure?.message else { return }
        connectFailure = failure
        logger.warning("\(failure.message) (\(failure.code.rawValue)); still trying")
        publishError(failure)
    }

    /// Publishes the session state: the `view` others read, a `session` event on change, and
    /// wakes whoever waits for a change.
    func publishSession() {
        let state = machine.state
        view.withLock { view in
            view.joined = state == .joined
            if case .invalidated(let reason) = state { view.following = reason == .serverGone } else { view.following = true }
        }
        let watchers = sessionWatchers
        sessionWatchers = []
        for watcher in watchers { watcher.resume(()) }
        guard state != publishedSession else { return }
        publishedSession = state
        events.publish(.session(state))
    }

    /// TLS pinned to the invite's key, or to what `known_hosts` remembers (trusting the first
    /// key seen); plaintext with `--no-tls`.
    private func linkSecurity() throws(CowatchError) -> RoomConnection.Security {
        guard room.tls else { return .plaintext }
        if let pinned = route.pinned {
            // A redirect: the cluster's one key, as the redirecting server proved it.
            guard let expected = CertificateFingerprint(text: pinned) else {
                throw CowatchError(.certificateMismatch, "a redirect without a usable certificate key; not following it")
            }
            return .tls(expected: expected, knownHosts: nil)
        }
        let path = try KnownHosts.defaultPath(environment: ProcessInfo.processInfo.environment)
        let knownHosts = KnownHosts(path: path)
        if room.fingerprint == nil, room.secret != nil, !room.trustFirstKey,
            try knownHosts.lookup(host: route.target.host, port: route.target.port) == nil
        {
            // Issue 22, item 13: a proof (or a new room's verifier) sent over a link pinned to the
            // first key seen lets whoever answered first guess the secret offline.
            throw CowatchError(
                .keyNotPinned,
                "not proving room \(room.room)'s secret to \(Invite.authority(host: route.target.host, port: route.target.port)): nothing pins that server's key (the invite has no fp=, no --server-key, no known_hosts entry), and whoever sits in the middle of a first connection could keep the proof and guess the secret offline. Join with the host's invite link (cowatch invite), or --server-key sha256:… from the host, or, having compared the key, --trust-first-key")
        }
        return .tls(expected: room.fingerprint, knownHosts: knownHosts)
    }

    private func session(
        inbound: AsyncThrowingStream<RoomConnection.Arrival, any Error>, send: @escaping RoomConnection.Send, fingerprint: String
    ) async -> LinkOutcome {
        link = RoomLink(send: send, fingerprint: fingerprint, now: clock.now())
        adoptKeptToken(fingerprint: fingerprint)
        perform(coordinator.connected(now: clock.now(), fingerprint: fingerprint))
        // Two loops; whichever ends first (the link drops, the server refuses, or we leave) ends both.
        return await withTaskGroup(of: LinkOutcome.self) { group in
            group.addTask { await self.tickLoop() }
            group.addTask {
                // `leave` ends the connection at once, with a bye.
                guard await self.mailbox.take(.leave, until: .infinity, on: self.clock) else { return .lost(CancellationError()) }
                await self.sayBye()
                return .left
            }
            group.addTask {
                do {
                    for try await arrival in inbound {
                        if let outcome = await self.received(arrival.message, at: arrival.at) { return outcome }
                    }
                    return .lost(CowatchError(.ioError, "the room server closed the connection"))
                } catch {
                    return .lost(error)
                }
            }
            defer { group.cancelAll() }
            return await group.next() ?? .lost(CancellationError())
        }
    }

    /// `at`: when the message's bytes were read from the socket (a clock probe's t4).
    /// Nil while the connection goes on; else how it ends.
    private func received(_ message: ServerMessage, at: Double) -> LinkOutcome? {
        link?.lastHeardAt = clock.now()
        if let outcome = clusterReceived(message) { return outcome }
        let actions = coordinator.received(message, now: at)
        guard case .applied(let timeline, _, _, _) = message, isJoined else {
            perform(actions)
            return link?.outcome
        }
        if !timeline.playing { playerSide.pauseOrderArrived(at: at) }
        // A new timeline (a pause, a seek, a speed) is carried out now, not at the next tick:
        // every player then follows within the message's own delivery, not up to a tick later.
        // Its notice is said after: showing it on the OSD is a command to the player, which
        // would otherwise come before the pause.
        let isNotice: (RoomCoordinator.Action) -> Bool = { if case .notice = $0 { true } else { false } }
        perform(actions.filter { !isNotice($0) })
        reconcileNow()
        perform(actions.filter(isNotice))
        if timeline.playing { countDown(toStartOf: timeline.seq) }
        return link?.outcome
    }

    private func sayBye() {
        link?.send(.bye)
    }

    /// The session's clock: wakes every tick interval, or just in time for a scheduled start or
    /// speed change, and runs `tick` on the actor.
    private nonisolated func tickLoop() async -> LinkOutcome {
        let interval = room.tickInterval
        do {
            while true {
                if let outcome = try await tickOnce(interval: interval) { return outcome }
            }
        } catch {
            return .lost(error)  // cancelled: the other loop ended the connection
        }
    }

    /// Sleeps until the next tick is due and runs it; nil while the connection goes on.
    private nonisolated func tickOnce(interval: Double) async throws -> LinkOutcome? {
        let now = clock.now()
        var wokeFor: Double?
        if let transition = await nextTransition(), transition < now + interval {
            wokeFor = transition
            // Wake a little before a scheduled start or speed change: `tick` reads the player
            // and decides then, and waits out the rest precisely before carrying it out.
            let early = transition - Self.transitionPreparation
            if early > now { try await clock.sleep(until: early) }
        } else {
            try await clock.sleep(until: now + interval)
        }
        return await tick(wokeFor: wokeFor)
    }

    private func nextTransition() -> Double? {
        coordinator.nextTransition(afterLocal: clock.now())
    }

    /// Seconds before a scheduled transition at which the tick loop wakes to prepare it.
    ///
    /// On two loaded cores the hop onto this actor and the player reads (mpv's core lock, taken
    /// too by a player busy after a seek) took up to 1.8 ms; done after the instant, they made a
    /// player start that late. Done before it, only the command itself is left for the instant.
    static let transitionPreparation = 0.003

    /// - Parameter wokeFor: the scheduled instant this tick was woken for, if any: the player is
    ///   read now and the coordinator decides as at that instant (a paused player stands still;
    ///   a playing one moves at its speed), then the decision waits for it — the actor blocked at
    ///   most `transitionPreparation`, mostly asleep (`MonotonicClock.waitPrecisely`). An unpause so
    ///   ordered is timed against it (`PlayerSide.startLateness`).
    /// - Returns: nil while the connection goes on; else how it ends (we leave, or the server
    ///   went silent).
    private func tick(wokeFor: Double? = nil) -> LinkOutcome? {
        playerSide.transitionInstant = wokeFor
        defer { playerSide.transitionInstant = nil }
        let now = clock.now()
        guard let link else { return nil }
        if !isJoined, now - link.connectedAt > Self.silenceLimit {
            return .lost(CowatchError(.ioError, "the room server did not let us in within \(Int(Self.silenceLimit)) s"))
        }
        if now - link.lastHeardAt > Self.silenceLimit {
            // No welcome, no time replies, no participant lists: the server is gone or frozen.
            return .lost(CowatchError(.ioError, "the room server said nothing for \(Int(Self.silenceLimit)) s"))
        }
        playerTick(now: now)
        updateStatus(now: now)
        reportStreamIfDue(now: now)
        let current = sample()
        guard let instant = wokeFor, instant > clock.now() else {
            perform(coordinator.tick(now: now, sample: current))
            return nil
        }
        carryOut(transitionAt: instant, sample: current)
        return nil
    }

    /// Decides as at the scheduled `instant` (the player read as `sample`, moved on to it), waits
    /// for the instant precisely, and carries the decision out.
    private func carryOut(transitionAt instant: Double, sample current: RoomCoordinator.PlayerSample?) {
        let actions = coordinator.tick(now: instant, sample: current.map { Self.carried($0, to: instant) })
        clock.waitPrecisely(until: instant)
        perform(actions)
    }

    /// The drift step of `tick`, at once: the coordinator compares the player with the group's
    /// timeline and orders what differs. A change due sooner than the tick loop could prepare it
    /// (a pause the room scheduled a few milliseconds ahead) is carried out on its instant here.
    private func reconcileNow() {
        let now = clock.now()
        guard let transition = coordinator.nextTransition(afterLocal: now), transition <= now + Self.transitionPreparation else {
            perform(coordinator.tick(now: now, sample: sample()))
            return
        }
        playerSide.transitionInstant = transition
        defer { playerSide.transitionInstant = nil }
        carryOut(transitionAt: transition, sample: sample())
    }

    /// A player sample as it will read at `instant`: a player that moves, moved on at its speed.
    static func carried(_ sample: RoomCoordinator.PlayerSample, to instant: Double) -> RoomCoordinator.PlayerSample {
        var carried = sample
        if !sample.paused && !sample.seeking && !sample.stalled {
            carried.position += (instant - sample.at) * sample.speed
        }
        carried.at = instant
        return carried
    }

    // MARK: Carrying out actions

    func perform(_ actions: [RoomCoordinator.Action]) {
        if let rate = coordinator.timelines?.current.rate { view.withLock { $0.groupRate = rate } }
        for action in actions {
            switch action {
            case .send(let message):
                link?.send(message)
            case .player(let command):
                apply(command)
            case .notice(let notice):
                if notice.action == .op || notice.action == .deop {
                    for name in notice.others ?? [] { recentRoles[name] = notice.action == .op ? .operator : .member }
                }
                publish(notice)
                // The room says our copy differs: a member's copy that does not may replace it.
                if notice.action == .mismatch, notice.actor == configuration.name { sharesChanged() }
            case .actionApplied(let id):
                pending.resolve(id, nil)
            case .actionRefused(let id, let error):
                pending.resolve(id, error)
                showRefusal(error)
            case .refused(let error):
                showRefusal(error)
            case .joined(let welcome):
                machine.welcomed()
                keepToken(fingerprint: link?.fingerprint ?? "")
                // The server sends the room's attachments again after each welcome.
                journal.attachments = []
                lastRefusal = nil
                connectFailure = nil
                publishSession()
                logger.debug("joined room", metadata: ["cowatch.room.name": "\(welcome.room)"])
                announceInvite()
                reofferAfterWelcome()
                if room.secret != nil, welcome.proof == nil {
                    logger.warning("room \(welcome.room) has no secret: anyone who knows its name may join it")
                }
            case .activity(let activity):
                activityChanged(activity)
            case .playlist(let state, let change):
                playlistChanged(state, change: change)
            case .ended(let by):
                link?.outcome = .ended(by: by)
                publish(Notice(actor: by, action: .end))
            case .participants:
                recentRoles = [:]
            case .chat(let line):
                chatLog.append(line)
                if chatLog.count > 50 { chatLog.removeFirst(chatLog.count - 50) }
                events.publish(.chat(line))
                if !line.history { showOnScreen("<\(line.from)> \(line.text)", milliseconds: 8000) }
            case .message(let message):
                // The payload is JSON text from a peer: parsed (bounded by the wire's line limit),
                // or passed on as a string when it is not JSON.
                let payload = (try? JSONValue.parse(Array(message.payload.utf8))) ?? .string(message.payload)
                events.publish(.message(ReceivedMessage(
                    participant: message.from ?? "?", topic: message.topic, payload: payload, reliable: message.reliable)))
            case .messageDelivered(let id, let names):
                if pending.isWaiting(id) { deliveries[id] = names }
                pending.resolve(id, nil)
            case .attachmentAdded(let attachment, let history):
                attachmentAdded(attachment, history: history)
            case .attachmentRemoved(let id, let by):
                attachmentRemoved(id, by: by)
            case .shares:
                sharesChanged()
            case .streamWanted(let stream, let fingerprint, let receiver):
                streamWanted(stream: stream, fingerprint: fingerprint, for: receiver)
            case .failed(let error):
                link?.outcome = .refused(error)
                if error.code == .kicked {
                    // "alice removed you from room movie-night": the session becomes removed(kicked).
                    logger.warning("\(error.message)")
                    showOnScreen(error.message)
                }
            }
        }
    }

    // MARK: Reporting

    func publish(_ notice: Notice) {
        events.publish(.notice(notice))
        showOnScreen(notice.text)
    }

    /// Shows a sentence on mpv's OSD (unless `--no-osd`) for `milliseconds`, below the notices
    /// still showing (the last few stack rather than replace each other).
    func showOnScreen(_ text: String, milliseconds: Int = 4000, replacing key: String? = nil) {
        guard configuration.osd else { return }
        let shown = osd.push(text, seconds: Double(milliseconds) / 1000, replacing: key, now: clock.now())
        // Shown as sent: nothing in a chat line or a name is expanded (`RoomPlayer.showText`).
        try? player.showText(shown.text, milliseconds: shown.milliseconds)
        // A paused player may have dropped that redraw (see `OSDStack.redraw`): draw once more.
        let generation = osd.generation
        Task { [weak self, clock] in
            try? await clock.sleep(seconds: Double(Self.osdRedrawDelayMilliseconds) / 1000)
            await self?.redrawOSDIfPaused(generation)
        }
    }

    /// Long enough for the video output to finish the frame it was drawing when the text came.
    static let osdRedrawDelayMilliseconds = 150

    private func redrawOSDIfPaused(_ generation: Int) {
        guard osd.generation == generation, player.paused == true,
            let again = osd.redraw(now: clock.now())
        else { return }
        try? player.showText(again.text, milliseconds: again.milliseconds)
    }

    /// A request of ours the server did not carry out (`not-permitted`, `rate-limited`,
    /// `expired`, …): an error event, and on the OSD "not permitted: in this managed room only
    /// the owner and operators may pause".
    func showRefusal(_ error: CowatchError) {
        publishError(error)
        showOnScreen(error.code.rawValue.replacingOccurrences(of: "-", with: " ") + ": " + error.message)
    }

    /// The server left us out of the room, still running (a taken name on a rejoin): say so
    /// in the log and as an error event; `join` may try again.
    private func reportStayingOut(_ refusal: CowatchError) {
        guard refusal.code != .kicked else { return }  // already said when it arrived
        let advice = RefusalAdvice.line(for: refusal, room: room.room, name: configuration.name, syncplay: room.syncplay != nil)
        logger.warning("\(advice) (\(refusal.code.rawValue): \(refusal.message))")
        publishError(CowatchError(refusal.code, advice))
        showOnScreen(advice)
    }

    func publishError(_ error: CowatchError) {
        events.publish(.error(error))
    }
}
