import CowatchCore
import Logging

/// The room server's part in a cluster: decides each hello's room (serve it here, claim it, or
/// send the daemon to its owner) and keeps this server's leases (renew, release, evict), on
/// `RoomLeases` and `RoomPlacement` with the `RoomDirectory` in Redis.
///
/// Hooked into `RoomHub` in two places: each connection's lines pass `admit` until its hello
/// has been placed, and `run` keeps the leases while the server runs.
///
/// Threading: an actor. A directory that cannot be reached refuses new hellos with
/// `server-busy` (daemons retry) and lets rooms already here run until their lease is out.
actor ClusterGate {
    let configuration: ClusterConfiguration
    private let directory: RoomDirectory
    private var leases: RoomLeases
    private let logger: Logger
    /// The records last shared with the directory, per room held here, and when.
    private var shared: [String: (record: RoomSequencer.RoomRecord, at: Double)] = [:]
    /// Seconds the directory keeps a room's record after its last change: as long as an empty
    /// room's secret and roles are remembered (`RoomSequencer.Configuration.dormantRoomMemory`).
    private let recordMemory: Double

    init(configuration: ClusterConfiguration, logger: Logger) {
        self.configuration = configuration
        self.directory = RoomDirectory(
            redis: RedisClient(
                host: configuration.redis.host, port: configuration.redis.port, requestTimeout: configuration.requestTimeout,
                logger: logger),
            me: configuration.advertise)
        self.leases = RoomLeases(configuration: configuration.leases)
        self.logger = logger
        self.recordMemory = RoomSequencer.Configuration().dormantRoomMemory
    }

    /// One (decoded) line of a connection whose hello is not placed yet: true when it was a hello to serve
    /// here, false when it was not a hello (the hub handles it as usual), nil when the connection
    /// was sent elsewhere or refused (the hub already has the answer and closes it).
    func admit(_ message: ClientMessage, from id: Int, hub: RoomHub) async -> Bool? {
        guard case .hello(let hello) = message else { return false }
        guard let refusal = await place(hello, hub: hub) else { return true }
        await hub.clusterRefuse(id, refusal)
        return nil
    }

    /// Nil to serve the hello here, else the answer that sends it away.
    private func place(_ hello: ClientMessage.Hello, hub: RoomHub) async -> ServerMessage? {
        let sentAt = SystemClock.monotonicSeconds()
        if leases.holds(hello.room, now: sentAt) { return nil }
        let owner: String
        do {
            owner = try await directory.place(hello.room, lease: configuration.leases.lease)
        } catch {
            logger.warning("room directory unavailable", metadata: ["cowatch.cluster.error": "\(error.message)"])
            return .error(code: CowatchError.Code.serverBusy.rawValue, message: "the cluster's room directory is unreachable; try again")
        }
        switch RoomPlacement.decide(owner: owner, me: configuration.advertise) {
        case .serve:
            leases.claimed(hello.room, sentAt: sentAt)
            logger.debug("room placed here", metadata: ["cowatch.cluster.room": "\(hello.room)"])
            await adoptRecord(of: hello.room, hub: hub)
            return nil
        case .redirect(let target):
            let live = await hub.clusterRoomsInUse().contains(hello.room)
            await perform(leases.ownedElsewhere(hello.room, live: live), hub: hub)
            let address = RoomPlacement.text(of: target)
            logger.debug("room is elsewhere", metadata: ["cowatch.cluster.room": "\(hello.room)", "cowatch.cluster.owner": "\(address)"])
            guard hello.features.contains(WireFeature.cluster) else {
                return .error(
                    code: CowatchError.Code.roomElsewhere.rawValue,
                    message: "room \(hello.room) is hosted by \(address), another server of this cluster; join it there (this client cannot follow redirects: update it)")
            }
            return .redirect(room: hello.room, to: target)
        case .claim:
            // `place` always claims an absent key; an empty answer is the directory's fault.
            return .error(code: CowatchError.Code.serverBusy.rawValue, message: "the cluster's room directory did not answer a claim; try again")
        case .unavailable(let error):
            return .error(code: error.code.rawValue, message: error.message)
        }
    }

    /// A room that comes here (new, or moved from a server that died) takes the record the
    /// directory keeps of it — its secret's verifier and roles — unless it lives here already.
    private func adoptRecord(of room: String, hub: RoomHub) async {
        guard await !hub.clusterLiveRooms().contains(room) else { return }
        do {
            guard let text = try await directory.record(of: room) else { return }
            guard let value = try? JSONValue.parse(Array(text.utf8)),
                let record = RoomSequencer.RoomRecord(directoryJSON: value)
            else {
                logger.warning("ignoring a malformed room record in the directory", metadata: ["cowatch.cluster.room": "\(room)"])
                return
            }
            await hub.clusterAdopt(record, for: room)
        } catch {
            logger.warning("cannot read a room's record", metadata: ["cowatch.cluster.room": "\(room)", "cowatch.cluster.error": "\(error.message)"])
        }
    }

    /// After a renewal: the room's record goes to the directory when it changed, and again every
    /// minute so it outlives the room by `recordMemory`.
    private func shareRecord(of room: String, hub: RoomHub) async {
        let now = SystemClock.monotonicSeconds()
        guard let record = await hub.clusterRecord(of: room) else { return }
        if let last = shared[room], last.record == record, now - last.at < 60 { return }
        let text = String(decoding: record.directoryJSON.encoded(), as: UTF8.self)
        do {
            try await directory.saveRecord(room, text, ttl: recordMemory)
            shared[room] = (record, now)
        } catch {
            logger.warning("cannot share a room's record", metadata: ["cowatch.cluster.room": "\(room)", "cowatch.cluster.error": "\(error.message)"])
        }
    }

    /// Keeps the leases until cancelled: renews live rooms, releases empty ones, evicts rooms
    /// this server no longer owns. Releases every room it holds when it stops.
    func run(hub: RoomHub) async {
        while !Task.isCancelled {
            let now = SystemClock.monotonicSeconds()
            let wait = min(0.5, max(0.02, (leases.nextDeadline() ?? now + 0.5) - now))
            do { try await Task.sleep(for: .seconds(wait)) } catch { break }
            let live = await hub.clusterRoomsInUse()
            await perform(leases.tick(now: SystemClock.monotonicSeconds(), live: live), hub: hub)
        }
        // A graceful stop hands the rooms on at once instead of after their leases.
        for room in leases.rooms {
            _ = try? await directory.release(room)
        }
    }

    private func perform(_ actions: [RoomLeases.Action], hub: RoomHub) async {
        for action in actions {
            switch action {
            case .renew(let room):
                let sentAt = SystemClock.monotonicSeconds()
                var held: Bool?
                do {
                    let owner = try await directory.place(room, lease: configuration.leases.lease)
                    held = RoomPlacement.decide(owner: owner, me: configuration.advertise) == .serve
                } catch {
                    logger.warning("cannot renew a room's lease", metadata: ["cowatch.cluster.room": "\(room)", "cowatch.cluster.error": "\(error.message)"])
                }
                let live = await hub.clusterRoomsInUse().contains(room)
                await perform(leases.renewed(room, held: held, sentAt: sentAt, live: live), hub: hub)
                if held == true, live { await shareRecord(of: room, hub: hub) }
            case .release(let room):
                shared[room] = nil
                _ = try? await directory.release(room)
                logger.debug("room released", metadata: ["cowatch.cluster.room": "\(room)"])
                if leases.holds(room, now: SystemClock.monotonicSeconds()) {
                    // A hello claimed it again while the release was on its way, and the release
                    // may have deleted that claim: claim it once more (or give it up).
                    await perform([.renew(room)], hub: hub)
                }
            case .evict(let room):
                shared[room] = nil
                logger.warning("room no longer hosted here; its participants reconnect", metadata: ["cowatch.cluster.room": "\(room)"])
                await hub.clusterEvict(room)
            }
        }
    }
}

extension RoomHub {
    /// Rooms with members here.
    func clusterLiveRooms() -> Set<String> { sequencer.liveRooms }

    /// Rooms with members here or a hello in its handshake: what the leases must keep.
    func clusterRoomsInUse() -> Set<String> { sequencer.roomsInUse }

    /// The directory's record of a room that came here.
    func clusterAdopt(_ record: RoomSequencer.RoomRecord, for room: String) {
        sequencer.adopt(record, for: room, now: SystemClock.monotonicSeconds())
    }

    /// The record of a room that lives here, to share.
    func clusterRecord(of room: String) -> RoomSequencer.RoomRecord? { sequencer.directoryRecord(of: room) }

    /// Answers a connection with `message` and closes it.
    func clusterRefuse(_ id: Int, _ message: ServerMessage) {
        perform([.send(id, message), .close(id)])
    }

    /// Closes every connection of `room` (it is another server's now); they reconnect and are
    /// sent on.
    func clusterEvict(_ room: String) {
        for id in sequencer.connections(in: room) {
            perform([
                .send(id, .error(code: CowatchError.Code.serverBusy.rawValue, message: "room \(room) moved to another server of the cluster; reconnect")),
                .close(id),
            ])
        }
    }
}
