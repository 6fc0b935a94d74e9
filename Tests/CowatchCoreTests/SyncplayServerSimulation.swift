@testable import CowatchCore

/// Syncplay's server reduced to what places a room's positions, its rules as `server.py` and
/// `protocols.py` (1.6.9, 1.7) apply them — written from those rules, for the tests: the
/// `PingService` of each member (round trip of its answers, the 0.85 moving average, the forward
/// delay with the excess over the member's `clientRtt`), `Watcher.updateState` (the forward delay
/// added to a playing position, a pause change or `doSeek` forced on the room),
/// `forcePositionUpdate`, the room's position (its slowest member's, once a second), the `State`
/// each member gets every second and the `ignoringOnTheFly` counters — and `SyncplayClient`s
/// around it, each on a clock of its own, over links with given delays, as a discrete event
/// simulation on a true timeline (seconds).
struct SyncplayServerSimulation {
    /// A member's link and machine.
    struct Member {
        var client: SyncplayClient
        /// Its clock minus the true time.
        var clockOffset: Double
        var up: Double
        var down: Double
        /// How long the `k`-th server `State` waits before the daemon reads it (a busy daemon's
        /// queue; its answer leaves at once, stamped then), by `k` (0 = the first).
        var readDelay: (Int) -> Double
        var statesSent = 0

        func local(_ t: Double) -> Double { t + clockOffset }
    }

    /// The server's view of a member (`Watcher` with its `JSONCommandProtocol` and `PingService`).
    struct Watcher {
        var position: Double?
        var lastUpdatedOn: Double
        var rtt = 0.0
        var averageRtt = 0.0
        var forwardDelay = 0.0
        var clientStamp = 0.0
        var clientStampArrival: Double?
        var serverIgnoring = 0
        var clientIgnoring = 0
    }

    enum Event {
        case toServer(Int, SyncplayState)
        case toClient(Int, SyncplayState)
        case tick(Int)
    }

    /// The server's clock minus the true time.
    var serverOffset = 1_000_000.0
    private(set) var now = 0.0
    var members: [Member] = []
    var watchers: [Watcher] = []
    var paused = true
    var roomPosition = 0.0
    var roomUpdated = 0.0
    var setBy: Int?
    private var events: [(at: Double, order: Int, event: Event)] = []
    private var order = 0

    var serverNow: Double { now + serverOffset }

    /// A member joins now (its Hello answered; the server's first `State` goes at once).
    mutating func join(_ name: String, clockOffset: Double, up: Double, down: Double, readDelay: @escaping (Int) -> Double) {
        var client = SyncplayClient(configuration: .init(username: name, room: "r", askTLS: false))
        _ = client.connected(now: now + clockOffset)
        _ = client.received([.hello(SyncplayHello(username: name, room: "r", realVersion: "1.7.3"))], player: reading(client, now + clockOffset), now: now + clockOffset)
        members.append(Member(client: client, clockOffset: clockOffset, up: up, down: down, readDelay: readDelay))
        watchers.append(Watcher(lastUpdatedOn: serverNow))
        schedule(now, .tick(members.count - 1))
    }

    /// Member `index` paused, played or sought now.
    mutating func change(_ index: Int, paused: Bool, position: Double, seek: Bool = false) {
        let actions = members[index].client.localChange(paused: paused, position: position, seek: seek, now: members[index].local(now))
        send(index, actions)
    }

    /// Runs the events until true time `end`.
    mutating func run(until end: Double) {
        while let next = events.indices.min(by: { (events[$0].at, events[$0].order) < (events[$1].at, events[$1].order) }), events[next].at <= end {
            let (at, _, event) = events.remove(at: next)
            now = at
            switch event {
            case .toServer(let index, let state): serverReceived(index, state)
            case .toClient(let index, let state): clientReceived(index, state)
            case .tick(let index):
                sendState(index, position: roomPositionNow(), paused: paused, doSeek: false, forced: false)
                schedule(now + 1, .tick(index))
            }
        }
        now = end
    }

    /// Where member `index`'s timeline puts the room at true time `now`.
    func timelinePosition(_ index: Int) -> Double? {
        members[index].client.roomPosition(at: members[index].local(now))
    }

    // MARK: Members

    /// The ideal player: wherever its timeline is (paused at 0 before it has one).
    private func reading(_ client: SyncplayClient, _ local: Double) -> SyncplayClient.PlayerReading {
        SyncplayClient.PlayerReading(position: client.roomPosition(at: local) ?? 0, paused: client.timeline?.paused ?? true)
    }

    private mutating func clientReceived(_ index: Int, _ state: SyncplayState) {
        let local = members[index].local(now)
        let actions = members[index].client.received([.state(state)], player: reading(members[index].client, local), now: local)
        send(index, actions)
    }

    private mutating func send(_ index: Int, _ actions: [SyncplayClient.Action]) {
        for case .send(let commands) in actions {
            for case .state(let state) in commands { schedule(now + members[index].up, .toServer(index, state)) }
        }
    }

    // MARK: Server

    private mutating func serverReceived(_ index: Int, _ state: SyncplayState) {
        if let server = state.ignoring?.server, watchers[index].serverIgnoring == server { watchers[index].serverIgnoring = 0 }
        if let client = state.ignoring?.client { watchers[index].clientIgnoring = client }
        if let ping = state.ping {
            watchers[index].clientStamp = ping.clientLatencyCalculation ?? 0
            watchers[index].clientStampArrival = serverNow
            measure(index, stamp: ping.latencyCalculation ?? 0, clientRtt: ping.clientRtt ?? 0)
        }
        guard watchers[index].serverIgnoring == 0 else { return }
        updateState(index, playstate: state.playstate)
    }

    /// `PingService.receiveMessage`.
    private mutating func measure(_ index: Int, stamp: Double, clientRtt: Double) {
        guard stamp != 0 else { return }
        var watcher = watchers[index]
        watcher.rtt = serverNow - stamp
        guard watcher.rtt >= 0, clientRtt >= 0 else {
            watchers[index] = watcher
            return
        }
        if watcher.averageRtt == 0 { watcher.averageRtt = watcher.rtt }
        watcher.averageRtt = watcher.averageRtt * 0.85 + watcher.rtt * 0.15
        watcher.forwardDelay = clientRtt < watcher.rtt ? watcher.averageRtt / 2 + (watcher.rtt - clientRtt) : watcher.averageRtt / 2
        watchers[index] = watcher
    }

    /// `Watcher.updateState`.
    private mutating func updateState(_ index: Int, playstate: SyncplayState.Playstate?) {
        let saysPaused = playstate?.paused
        let pauseChanged = saysPaused.map { $0 != paused } ?? false
        watchers[index].lastUpdatedOn = serverNow
        if pauseChanged {
            paused = saysPaused ?? paused
            setBy = index
        }
        if let playstate {
            watchers[index].position = playstate.position + (saysPaused == true ? 0 : watchers[index].forwardDelay)
        }
        if playstate?.doSeek == true || pauseChanged {
            // `forcePositionUpdate`: everyone, the sender too, gets the sender's position, forced.
            let position = watcherPosition(index) ?? 0
            roomPosition = position
            for other in watchers.indices { watchers[other].position = position }
            setBy = index
            for other in watchers.indices {
                sendState(other, position: position, paused: paused, doSeek: playstate?.doSeek ?? false, forced: true)
            }
        }
    }

    private func watcherPosition(_ index: Int) -> Double? {
        watchers[index].position.map { $0 + (paused ? 0 : serverNow - watchers[index].lastUpdatedOn) }
    }

    /// `Room.getPosition`: the slowest member's, when the last was taken over a second ago.
    private mutating func roomPositionNow() -> Double {
        let age = serverNow - roomUpdated
        if age > 1, let slowest = watchers.indices.compactMap({ index in watcherPosition(index).map { (index, $0) } }).min(by: { $0.1 < $1.1 }) {
            roomPosition = slowest.1
            setBy = slowest.0
            roomUpdated = serverNow
            return roomPosition
        }
        return roomPosition + (paused ? 0 : age)
    }

    /// `JSONCommandProtocol.sendState` (the server's).
    private mutating func sendState(_ index: Int, position: Double, paused: Bool, doSeek: Bool, forced: Bool) {
        var watcher = watchers[index]
        let held = watcher.clientStampArrival.map { serverNow - $0 } ?? 0
        var ping = SyncplayState.Ping(latencyCalculation: serverNow, serverRtt: watcher.rtt)
        if watcher.clientStamp != 0 {
            ping.clientLatencyCalculation = watcher.clientStamp + held
            watcher.clientStamp = 0
        }
        if forced { watcher.serverIgnoring += 1 }
        var ignoring: SyncplayState.Ignoring?
        if watcher.serverIgnoring != 0 || watcher.clientIgnoring != 0 {
            ignoring = SyncplayState.Ignoring(
                server: watcher.serverIgnoring == 0 ? nil : watcher.serverIgnoring, client: watcher.clientIgnoring == 0 ? nil : watcher.clientIgnoring)
            watcher.clientIgnoring = 0
        }
        watchers[index] = watcher
        guard watcher.serverIgnoring == 0 || forced else { return }
        let name = setBy.map { members[$0].client.username }
        let state = SyncplayState(
            ping: ping, playstate: SyncplayState.Playstate(position: position, paused: paused, doSeek: doSeek, setBy: name), ignoring: ignoring)
        let read = members[index].readDelay(members[index].statesSent)
        members[index].statesSent += 1
        schedule(now + members[index].down + read, .toClient(index, state))
    }

    private mutating func schedule(_ at: Double, _ event: Event) {
        order += 1
        events.append((at, order, event))
    }
}
