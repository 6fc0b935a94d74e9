import CowatchClient
import CowatchCore
import CowatchObserver
import Foundation

/// A room of real daemons: the one harness the integration suites and `cowatch-bench` share.
///
/// It starts a `cowatch-server` of its own on loopback (or, with `.hostedByFirst`, lets the first
/// daemon host the room), then headless `cowatchd`s (`DaemonProcess`) that join it with
/// `--join 127.0.0.1:PORT --room NAME --no-osd`, each optionally through an `ImpairedLink` of its
/// own. For every daemon it keeps a command client (`clients`), an event client subscribed from
/// the daemon's start (`listeners`, unless `listeners: false`) and a client of the player's own mpv
/// IPC socket (`probes`, with `probes: true`); index `i` of each array is the `i`-th daemon added.
///
/// Waiting: `init` with names returns once every daemon says it is joined and lists them all;
/// `add` waits (unless told not to) for the new daemon's own session only. Polls every 50 ms.
/// `init`, `add`, `waitJoined` and `waitForParticipants` block (for `cowatch-bench`) or, under
/// the same names, suspend the task (for the tests: see `offPool`); the other waits only suspend.
///
/// Threading: one test task (thread) uses a room; it is not Sendable. The processes and links run
/// on their own, and are stopped by `stop()` (blocking), `stopInBackground()` (for a `defer`), or
/// when the room is released (processes are killed).
///
/// Errors: `TestFailure` when a process does not start or a daemon does not join in time (naming
/// the daemon and its stderr); a control request's `CowatchError` as is.
public final class DaemonRoom {
    /// Where the daemons meet.
    public enum Venue {
        /// A `cowatch-server` of the room's own, started with `arguments`, stopped with the room.
        case server(arguments: [String] = [])
        /// No server: the first daemon added hosts the room (`--host 127.0.0.1:PORT --room NAME`,
        /// on a port that was free a moment ago), the others join it.
        case hostedByFirst
        /// A Syncplay server already running on loopback `port`: every daemon joins
        /// `syncplay://127.0.0.1:PORT/NAME` (through its link, when the room has them).
        case syncplay(port: Int)
    }

    /// The room's name (`--room`).
    public let name: String
    /// Every daemon's media unless `add` names another.
    public let media: String?
    /// Loopback port of the server, or of the hosting daemon; kept across `restartServer`.
    public let port: Int
    public private(set) var daemons: [DaemonProcess] = []
    /// Command clients, one per daemon.
    public private(set) var clients: [ControlClient] = []
    /// Event clients, one per daemon, subscribed from its start (empty with `listeners: false`).
    public private(set) var listeners: [ControlClient] = []
    /// Clients of each player's own mpv IPC socket, the observer's view (empty unless `probes: true`).
    public private(set) var probes: [ControlClient] = []
    /// Each daemon's impaired link to the server, when the room has `links`.
    public private(set) var links: [ImpairedLink] = []

    private var ownServer: ServerProcess?
    private let serverArguments: [String]
    private let hosted: Bool
    private let syncplay: Bool
    private let commonArguments: [String]
    private let impairments: [(up: LinkImpairment, down: LinkImpairment)]
    private let wantsListeners: Bool
    private let wantsProbes: Bool

    /// Starts the venue, then a daemon per name (on `media`), and blocks until each is joined and
    /// lists them all (`timeout` seconds).
    /// - `arguments`: given to every daemon (e.g. `--no-tls` for a plaintext server).
    /// - `links`: daemon `i` reaches the server through an `ImpairedLink` with `links[i % count]`
    ///   (seeded `i + 1`); server venue only.
    public convenience init(
        names: [String] = [], media: String? = nil, room: String = "room", venue: Venue = .server(), arguments: [String] = [],
        links: [(up: LinkImpairment, down: LinkImpairment)] = [], listeners: Bool = true, probes: Bool = false, timeout: Double = 20
    ) throws {
        let server: ServerProcess?
        if case .server(let arguments) = venue { server = try ServerProcess(extraArguments: arguments) } else { server = nil }
        self.init(
            opening: room, media: media, server: server, venue: venue, arguments: arguments, links: links, listeners: listeners,
            probes: probes)
        for name in names { try add(name, waitJoined: false) }
        if !names.isEmpty { try waitForParticipants(names.count, timeout: timeout) }
    }

    /// The same, suspended (not blocked) while it waits for the server, the daemons and the joins.
    public convenience init(
        names: [String] = [], media: String? = nil, room: String = "room", venue: Venue = .server(), arguments: [String] = [],
        links: [(up: LinkImpairment, down: LinkImpairment)] = [], listeners: Bool = true, probes: Bool = false, timeout: Double = 20
    ) async throws {
        let server: ServerProcess?
        if case .server(let arguments) = venue { server = try await ServerProcess.start(extraArguments: arguments) } else { server = nil }
        self.init(
            opening: room, media: media, server: server, venue: venue, arguments: arguments, links: links, listeners: listeners,
            probes: probes)
        for name in names { try await add(name, waitJoined: false) }
        if !names.isEmpty { try await waitForParticipants(names.count, timeout: timeout) }
    }

    private init(
        opening room: String, media: String?, server: ServerProcess?, venue: Venue, arguments: [String],
        links: [(up: LinkImpairment, down: LinkImpairment)], listeners: Bool, probes: Bool
    ) {
        name = room
        self.media = media
        commonArguments = arguments
        impairments = links
        wantsListeners = listeners
        wantsProbes = probes
        if case .syncplay = venue { syncplay = true } else { syncplay = false }
        switch venue {
        case .server(let arguments):
            serverArguments = arguments
            hosted = false
            ownServer = server
            port = server?.port ?? 0
        case .hostedByFirst:
            serverArguments = []
            hosted = true
            port = freeLoopbackPort()
        case .syncplay(let port):
            serverArguments = []
            hosted = false
            self.port = port
        }
    }

    /// The room's own server (a programming error to ask for in a hosted room).
    public var server: ServerProcess {
        guard let ownServer else { preconditionFailure("this room has no server of its own") }
        return ownServer
    }

    /// `127.0.0.1:PORT` of the server or the hosting daemon.
    public var address: String { "127.0.0.1:\(port)" }

    public var names: [String] { daemons.map(\.name) }

    /// Starts a daemon with the room's flags, the room's common arguments and `arguments`, on
    /// `media` (else the room's), and blocks until its control socket answers; with `waitJoined`,
    /// also until it says it is joined. `roomFlags: false` leaves out `--join/--host … --room …`
    /// (and any link), for a daemon whose `arguments` say where it goes (an invite link). Returns
    /// its index.
    @discardableResult
    public func add(
        _ name: String, media: String? = nil, arguments: [String] = [], environment: [String: String] = [:],
        roomFlags: Bool = true, waitJoined: Bool = true
    ) throws -> Int {
        let (media, flags) = try commandLine(for: name, media: media, roomFlags: roomFlags)
        let daemon = try DaemonProcess(
            name: name, media: media, extraArguments: flags + ["--no-osd"] + commonArguments + arguments, environment: environment)
        daemons.append(daemon)
        clients.append(try daemon.client())
        if wantsListeners {
            listeners.append(try daemon.client())
            _ = try listeners.last!.status()  // subscribed from here on
        }
        if wantsProbes { probes.append(try daemon.playerProbe()) }
        if waitJoined { try self.waitJoined(daemons.count - 1) }
        return daemons.count - 1
    }

    /// The same, suspended (not blocked) while it waits.
    @discardableResult
    public func add(
        _ name: String, media: String? = nil, arguments: [String] = [], environment: [String: String] = [:],
        roomFlags: Bool = true, waitJoined: Bool = true
    ) async throws -> Int {
        let (media, flags) = try commandLine(for: name, media: media, roomFlags: roomFlags)
        let daemon = try await DaemonProcess(
            name: name, media: media, extraArguments: flags + ["--no-osd"] + commonArguments + arguments, environment: environment)
        daemons.append(daemon)
        clients.append(try daemon.client())
        if wantsListeners {
            listeners.append(try daemon.client())
            _ = try await listeners.last!.status()  // subscribed from here on
        }
        if wantsProbes { probes.append(try await daemon.playerProbe()) }
        if waitJoined { try await self.waitJoined(daemons.count - 1) }
        return daemons.count - 1
    }

    /// The media and room flags of the next daemon, `name` (making its link, if the room has them).
    private func commandLine(for name: String, media: String?, roomFlags: Bool) throws -> (media: String, flags: [String]) {
        guard let media = media ?? self.media else { throw TestFailure("no media for \(name)") }
        var flags: [String] = []
        if roomFlags {
            if hosted && daemons.isEmpty {
                flags = ["--host", address, "--room", self.name]
            } else {
                var target = address
                if !impairments.isEmpty && !hosted {
                    let (up, down) = impairments[daemons.count % impairments.count]
                    let link = try ImpairedLink(upstreamPort: port, up: up, down: down, seed: UInt64(daemons.count + 1))
                    links.append(link)
                    target = "127.0.0.1:\(link.port)"
                }
                flags = syncplay ? ["--join", "syncplay://\(target)/\(self.name)"] : ["--join", target, "--room", self.name]
                // The server's key, as a host's invite carries it: a room secret is proved only
                // over a pinned link (issue 22, item 13).
                if !syncplay, let fingerprint = ownServer?.fingerprint { flags += ["--server-key", fingerprint] }
            }
        }
        return (media, flags)
    }

    // MARK: Waiting

    /// Blocks until daemon `index` says its session is joined and, if given, lists `participants`.
    public func waitJoined(_ index: Int, participants: Int? = nil, timeout: Double = 20) throws {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if try isJoined(index, participants: participants) { return }
            sleepSeconds(0.05)
        }
        throw notJoined(index, participants: participants, timeout: timeout)
    }

    /// The same, suspended while it waits.
    public func waitJoined(_ index: Int, participants: Int? = nil, timeout: Double = 20) async throws {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if try await isJoined(index, participants: participants) { return }
            await pause(0.05)
        }
        throw notJoined(index, participants: participants, timeout: timeout)
    }

    private func notJoined(_ index: Int, participants: Int?, timeout: Double) -> TestFailure {
        let count = participants.map { " with \($0) participants" } ?? ""
        return TestFailure("\(daemons[index].name) did not join\(count) in \(timeout) s:\n\(daemons[index].stderr)")
    }

    /// Blocks until every daemon is joined and lists `count` participants (default: all daemons).
    public func waitForParticipants(_ count: Int? = nil, timeout: Double = 20) throws {
        let count = count ?? daemons.count
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if try daemons.indices.allSatisfy({ try isJoined($0, participants: count) }) { return }
            sleepSeconds(0.05)
        }
        throw TestFailure("the room \(name) did not reach \(count) joined participants in \(timeout) s")
    }

    /// The same, suspended while it waits.
    public func waitForParticipants(_ count: Int? = nil, timeout: Double = 20) async throws {
        let count = count ?? daemons.count
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if try await allJoined(count) { return }
            await pause(0.05)
        }
        throw TestFailure("the room \(name) did not reach \(count) joined participants in \(timeout) s")
    }

    private func allJoined(_ count: Int) async throws -> Bool {
        for index in daemons.indices where try await !isJoined(index, participants: count) { return false }
        return true
    }

    private func isJoined(_ index: Int, participants: Int?) throws -> Bool {
        guard try clients[index].request(.getStatus, timeout: 15)["room"]?["session"] == "joined" else { return false }
        guard let participants else { return true }
        return try clients[index].request(.getParticipants, timeout: 15).arrayValue?.count == participants
    }

    // Not inlined: swiftc 6.3's optimizer crashed splitting `waitJoined`'s coroutine with this
    // inlined into it (signal 11 in coro-split, release builds only).
    @inline(never)
    private func isJoined(_ index: Int, participants: Int?) async throws -> Bool {
        guard try await roomStatus(index)["session"] == "joined" else { return false }
        guard let participants else { return true }
        return try await clients[index].request(.getParticipants, timeout: 15).arrayValue?.count == participants
    }

    /// Waits until every listener (or those at `indices`) has a notice with `action` (and `actor`,
    /// if given); returns them in that order.
    public func expectNotices(
        _ action: String, actor: String? = nil, timeout: Double = 10, from indices: [Int]? = nil
    ) async throws -> [ControlEvent] {
        var notices: [ControlEvent] = []
        for index in indices ?? Array(listeners.indices) {
            let notice = try await listeners[index].waitForEvent(named: "notice", timeout: timeout) {
                $0.fields["action"]?.stringValue == action && (actor == nil || $0.fields["participant"]?.stringValue == actor)
            }
            guard let notice else {
                throw TestFailure("\(daemons[index].name) saw no \(action) notice\(actor.map { " from \($0)" } ?? "")")
            }
            notices.append(notice)
        }
        return notices
    }

    /// Waits until `index`'s participant list says `name` has `role` (the list comes once a second).
    public func waitRole(_ index: Int, of name: String, is role: String, timeout: Double = 5) async throws {
        let deadline = monotonicNow() + timeout
        var list: JSONValue = .null
        while monotonicNow() < deadline {
            list = try await clients[index].request(.getParticipants)
            if list.arrayValue?.contains(where: { $0["name"]?.stringValue == name && $0["role"]?.stringValue == role }) == true {
                return
            }
            await pause(0.1)
        }
        throw TestFailure("\(name) is not \(role) for \(daemons[index].name): \(list.jsonString)")
    }

    // MARK: Reading

    /// The `room` section of daemon `index`'s `get_status`.
    public func roomStatus(_ index: Int) async throws -> JSONValue {
        try await clients[index].request(.getStatus, timeout: 15)["room"] ?? .null
    }

    /// Runs a request on daemon `index` expected to fail; returns its error (nil if it succeeded).
    public func failure(_ index: Int, _ command: ControlCommand, timeout: Double = 10) async -> CowatchError? {
        do {
            _ = try await clients[index].request(command, timeout: timeout)
            return nil
        } catch {
            return error
        }
    }

    /// Every daemon's position as its `get_status` says (-1 when it has none).
    public func positions() async throws -> [Double] {
        var positions: [Double] = []
        for client in clients { positions.append(try await client.status().position ?? -1) }
        return positions
    }

    /// Daemon `index`'s reference-clock estimate: offset from the server clock and its uncertainty.
    public func clock(_ index: Int) async throws -> (offset: Double, uncertainty: Double) {
        let clock = try await clients[index].request(.getStatus)["clock"]
        return (clock?["offset"]?.numberValue ?? .nan, clock?["uncertainty"]?.numberValue ?? .nan)
    }

    /// Speed nudges plus seeks ordered by every daemon's drift correction so far, summed.
    public func corrections() throws -> Double {
        try clients.reduce(0.0) { total, client in
            let drift = try client.request(.getStatus)["drift"]
            return total + (drift?["nudges"]?.numberValue ?? 0) + (drift?["seeks"]?.numberValue ?? 0)
        }
    }

    /// The players' largest pairwise skew now, read on the probes (needs `probes: true`).
    public func skew(rate: Double = 1, property: String = "audio-pts") async -> Double? {
        let sampler = SkewSampler(clients: probes, property: property)
        return await offPool { sampler.skew(rate: rate) }
    }

    /// Lets the room settle for `seconds`, then the largest skew over ten probe rounds 50 ms apart.
    public func settledSkew(after seconds: Double = 2, rate: Double = 1) async -> Double {
        await pause(seconds)
        return await SkewSampler(clients: probes).skews(count: 10, interval: 0.05, rate: rate).max() ?? .infinity
    }

    // MARK: Stopping

    /// Stops the room's server and starts it again on the same port with the same state directory
    /// (certificate, token key, rooms) after `downFor` seconds; the daemons rejoin on their own.
    public func restartServer(downFor seconds: Double = 0) async throws {
        let state = server.stateDirectory
        if let ownServer { await ownServer.stop() }
        ownServer = nil
        await pause(seconds)
        ownServer = try await ServerProcess.start(port: port, extraArguments: serverArguments, stateDirectory: state)
    }

    /// Terminates every daemon (SIGTERM, then SIGKILL after 10 s), closes the links, stops the
    /// server; blocks until all have ended.
    public func stop() {
        for daemon in daemons { daemon.terminate() }
        for link in links { link.close() }
        ownServer?.terminate()
    }

    /// The same as `stop()`, suspended (not blocked) until every process has ended. (Not `stop`:
    /// `cowatch-bench` calls that one from an async function of its own.)
    public func shutDown() async {
        for daemon in daemons { await daemon.terminate() }
        for link in links { link.close() }
        if let ownServer { await ownServer.stop() }
    }

    /// For a `defer`: the same as `stop()`, on a thread of its own (`BackgroundCleanup`); returns at once.
    public func stopInBackground() {
        let room = Unchecked(self)
        BackgroundCleanup.run { room.value.stop() }
    }

    deinit {
        for link in links { link.close() }
    }
}
