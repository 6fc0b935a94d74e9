import ArgumentParser
import CowatchCore
import CowatchNet
import Foundation
import Logging
import NIOPosix
import NIOSSL
import ServiceLifecycle

@main
struct CowatchServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cowatch-server",
        abstract: "The Cowatch room server: sequencer and reference clock for any number of rooms.",
        discussion: "Rooms are created when their first participant joins and dropped when the last one leaves. See cowatch-server(1).",
        version: CowatchVersion.text)

    @Option(help: ArgumentHelp("Address and port to listen on; port 0 picks a free one.", valueName: "[ADDR:]PORT"))
    var listen = "0.0.0.0:7433"

    @Option(help: ArgumentHelp("Seconds to wait for everyone to land after a seek while playing (default 2).", valueName: "SECONDS"))
    var seekReadyTimeout: Double?

    @Option(help: ArgumentHelp("Seconds ahead at which play and speed changes are scheduled, at least (default 0.12).", valueName: "SECONDS"))
    var minLead: Double?

    @Flag(help: "Room policy \"play when everyone is ready\": a play waits (bounded) for every participant's readiness.")
    var playWhenReady = false

    @Option(help: ArgumentHelp(
        "Seconds the group waits for a stalled (buffering, slow seek) or unready participant before going on without it (default 5).",
        valueName: "SECONDS"))
    var waitTimeout: Double?

    @Option(help: ArgumentHelp("Seconds the group waits for everyone to load media switched to with open (default 15).", valueName: "SECONDS"))
    var openTimeout: Double?

    @Option(help: ArgumentHelp(
        "Seconds a participant the group stopped waiting for is not waited for again (default 30).", valueName: "SECONDS"))
    var giveUpCooldown: Double?

    @Option(help: ArgumentHelp(
        "Seconds a room that emptied keeps its secret, roles, playlist and place for whoever comes back (default 600, at most 604800: a week).",
        valueName: "SECONDS"))
    var roomMemory: Double?

    @Flag(help: "Managed rooms: only a room's owner and its operators control playback, open media, end it and remove people.")
    var managed = false
    @Flag(name: .customLong("no-chat"), help: "No chat: the server does not offer it (messages and playback are unaffected).")
    var noChat = false

    @Flag(name: .customLong("no-attachments"), help: "No journal: the server keeps no attachments (cowatch attach gets unsupported).")
    var noAttachments = false

    @Flag(name: .customLong("no-streams"), help: "No film streams: the server relays none (cowatch share gets unsupported). Always off with --cluster.")
    var noStreams = false

    @Option(name: .customLong("attachment-max-size"), help: ArgumentHelp(
        "The largest attachment (bytes, or with K, M or G; default and most: 100M).", valueName: "SIZE"))
    var attachmentMaxSize: String?

    @Option(name: .customLong("room-quota"), help: ArgumentHelp(
        "Attachment bytes one room may hold (default: 256M).", valueName: "SIZE"))
    var roomQuota: String?

    @Option(name: .customLong("total-quota"), help: ArgumentHelp(
        "Attachment bytes the server holds for all rooms (default: 1G).", valueName: "SIZE"))
    var totalQuota: String?

    @Option(help: ArgumentHelp(
        "Where the server keeps its certificate, its token key and its rooms' secrets (default $STATE_DIRECTORY, else $XDG_STATE_HOME/cowatch/server, else ~/.local/state/cowatch/server).",
        valueName: "DIR"))
    var stateDir: String?

    @Option(help: ArgumentHelp("TLS certificate chain (PEM), e.g. Let's Encrypt's fullchain.pem; default: a self-signed one kept in the state directory.", valueName: "PATH"))
    var tlsCert: String?

    @Option(help: ArgumentHelp("TLS private key (PEM) of --tls-cert.", valueName: "PATH"))
    var tlsKey: String?

    @Flag(help: "Serve without TLS: room links travel in clear and unauthenticated. For loopback and tests only.")
    var noTLS = false

    @Option(help: ArgumentHelp(
        "Connections at once, in total; past it newcomers are refused with server-full (default 12000, and at most the open-file limit less 64).",
        valueName: "N"))
    var maxConnections: Int?

    @Option(help: ArgumentHelp("Connections at once from one address (default 32).", valueName: "N"))
    var maxConnectionsPerAddress: Int?

    @Option(help: ArgumentHelp("Rooms at once (default 1000).", valueName: "N"))
    var maxRooms: Int?

    @Option(help: ArgumentHelp("Rooms created from one address alive at once (default 8).", valueName: "N"))
    var maxRoomsPerAddress: Int?

    @Option(help: ArgumentHelp("Participants in one room (default 64).", valueName: "N"))
    var maxParticipants: Int?

    @Option(help: ArgumentHelp(
        "Participants of one room from one address, an IPv6 /64 counting as one address (default 16).", valueName: "N"))
    var maxMembersPerAddress: Int?

    @Option(help: ArgumentHelp("Seconds a new connection has to finish its handshake (default 5).", valueName: "SECONDS"))
    var helloTimeout: Double?

    @Option(help: ArgumentHelp(
        "Share rooms with other servers through this Redis: a room lives on the first server asked for it; the others redirect to it.",
        valueName: "redis://HOST:PORT"))
    var cluster: String?

    @Option(help: ArgumentHelp("With --cluster: the address daemons are sent to for rooms hosted here.", valueName: "HOST:PORT"))
    var advertise: String?

    @Option(help: ArgumentHelp(
        "With --cluster: seconds a room's claim lasts without renewal, so a dead server's rooms move after it (default 10).",
        valueName: "SECONDS"))
    var clusterLease: Double?

    @Option(help: ArgumentHelp(
        "Run the event loops under real-time scheduling (SCHED_FIFO) at this priority, 1–99, as chronyd -P does: clock probes are answered without waiting for other tasks' time slices. Needs CAP_SYS_NICE or LimitRTPRIO (default: off).",
        valueName: "N"))
    var realtimePriority: Int32?

    @Option(help: ArgumentHelp(
        "Ask the home router to forward the listening port (UPnP-IGD, NAT-PMP or PCP), renew it and remove it at exit: auto, upnp, natpmp, pcp or off (default: off).",
        valueName: "HOW"))
    var mapPort: String?

    @Option(help: ArgumentHelp("With --map-port: the lease asked of the router, 30-86400 seconds, renewed at half (default: 3600).", valueName: "SECONDS"))
    var mapLease: Double?

    @Option(help: ArgumentHelp(
        "Also take stock Syncplay clients (desktop, mobile, Kodi) into this server's rooms on [ADDR:]PORT (Syncplay's usual port is 8999). They cannot join rooms with a secret, unless --syncplay-secret-rooms says so.",
        valueName: "[ADDR:]PORT"))
    var syncplayListen: String?

    @Option(help: ArgumentHelp(
        "With --syncplay-listen: a file (0600) holding the password Syncplay clients must give (Syncplay sends it as an unsalted MD5).",
        valueName: "PATH"))
    var syncplayPasswordFile: String?

    @Option(help: ArgumentHelp(
        "With --syncplay-password-file: let Syncplay clients that give that password into these rooms with a secret (all, or names separated by commas); the server proves each room's secret for them with the key it keeps. Syncplay's password is weak: see cowatch-server(1).",
        valueName: "all|ROOM[,ROOM...]"))
    var syncplaySecretRooms: String?

    @Option(help: ArgumentHelp("Log level on stderr: trace, debug, info, notice, warning, error, critical.", valueName: "LEVEL"))
    var logLevel = "warning"

    func run() async throws {
        guard let level = Logger.Level(rawValue: logLevel) else {
            fail("--log-level must be one of trace, debug, info, notice, warning, error, critical", code: 2)
        }
        let (host, port) = parseListen(listen)
        if let realtimePriority {
            do {
                try RealtimeScheduling.enable(priority: realtimePriority, on: MultiThreadedEventLoopGroup.singleton)
            } catch {
                fail(error.description, code: 2)
            }
        }
        var configuration = RoomSequencer.Configuration()
        if let seekReadyTimeout {
            guard seekReadyTimeout.isFinite, seekReadyTimeout > 0 else { fail("--seek-ready-timeout must be positive", code: 2) }
            configuration.playback.seekReadyTimeout = seekReadyTimeout
        }
        configuration.playWhenReady = playWhenReady
        for (flag, value, apply) in [
            ("--wait-timeout", waitTimeout, { (c: inout RoomSequencer.Configuration, v: Double) in c.waitTimeout = v }),
            ("--open-timeout", openTimeout, { (c: inout RoomSequencer.Configuration, v: Double) in c.playback.openTimeout = v }),
            ("--give-up-cooldown", giveUpCooldown, { (c: inout RoomSequencer.Configuration, v: Double) in c.playback.giveUpCooldown = v }),
        ] {
            guard let value else { continue }
            guard value.isFinite, value > 0, value <= 3600 else { fail("\(flag) must be a positive number of seconds", code: 2) }
            apply(&configuration, value)
        }
        if let roomMemory {
            guard roomMemory.isFinite, roomMemory > 0, roomMemory <= 604_800 else {
                fail("--room-memory must be a positive number of seconds, at most 604800", code: 2)
            }
            configuration.dormantRoomMemory = roomMemory
        }
        configuration.managed = managed
        configuration.chat = !noChat
        configuration.journal.enabled = !noAttachments
        // A stream's two members may be on two servers of a cluster: never offered there.
        configuration.streams = !noStreams && cluster == nil
        for (flag, value, apply) in [
            ("--attachment-max-size", attachmentMaxSize, { (c: inout RoomSequencer.Configuration, v: Int) in c.journal.maxAttachmentBytes = min(v, Attachment.maxBytes) }),
            ("--room-quota", roomQuota, { (c: inout RoomSequencer.Configuration, v: Int) in c.journal.roomQuotaBytes = v }),
            ("--total-quota", totalQuota, { (c: inout RoomSequencer.Configuration, v: Int) in c.journal.totalQuotaBytes = v }),
        ] {
            guard let value else { continue }
            guard let bytes = RoomJournal.parseSize(value) else { fail("\(flag) takes a size such as 50M or 1G", code: 2) }
            apply(&configuration, bytes)
        }
        for (flag, value, apply) in [
            ("--max-connections", maxConnections, { (c: inout RoomSequencer.Configuration, v: Int) in c.admission.maxConnections = v }),
            ("--max-connections-per-address", maxConnectionsPerAddress, { (c: inout RoomSequencer.Configuration, v: Int) in c.admission.maxConnectionsPerAddress = v }),
            ("--max-rooms", maxRooms, { (c: inout RoomSequencer.Configuration, v: Int) in c.maxRooms = v }),
            ("--max-rooms-per-address", maxRoomsPerAddress, { (c: inout RoomSequencer.Configuration, v: Int) in c.admission.maxRoomsPerAddress = v }),
            ("--max-participants", maxParticipants, { (c: inout RoomSequencer.Configuration, v: Int) in c.maxParticipantsPerRoom = v }),
            ("--max-members-per-address", maxMembersPerAddress, { (c: inout RoomSequencer.Configuration, v: Int) in c.maxMembersPerAddress = v }),
        ] {
            guard let value else { continue }
            guard (1...1_000_000).contains(value) else { fail("\(flag) must be between 1 and 1000000", code: 2) }
            apply(&configuration, value)
        }
        // Past the descriptor limit accept() would fail and connections pile up unanswered: cap
        // below it, so newcomers get a clear server-full instead.
        let limit = openFileLimit()
        // The rest for the listener, the event loops, signals and timers (18 descriptors at rest,
        // measured), attachment files and a cluster's Redis. With too small a reserve the server
        // reached the limit, and accept() failing over and over spun an event loop.
        let descriptors = limit - min(limit / 2, min(64, limit / 4) + 32)
        if configuration.admission.maxConnections > descriptors {
            if maxConnections != nil {
                FileHandle.standardError.write(Data(
                    "cowatch-server: --max-connections lowered to \(descriptors): the open-file limit is \(limit) (ulimit -n)\n".utf8))
            }
            configuration.admission.maxConnections = max(1, descriptors)
        }
        if let helloTimeout {
            guard helloTimeout.isFinite, helloTimeout > 0, helloTimeout <= 600 else { fail("--hello-timeout must be a positive number of seconds", code: 2) }
            configuration.admission.helloTimeout = helloTimeout
        }
        if let minLead {
            guard minLead.isFinite, minLead >= 0, minLead <= 10 else { fail("--min-lead must be between 0 and 10", code: 2) }
            configuration.playback.minLead = minLead
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "cowatch-server")
        let state = RoomServerState(directory: stateDirectory())
        let identity: ServerIdentity?
        do {
            identity = try loadIdentity(stateDirectory: state.directory)
        } catch {
            fail(error.message, code: 2)
        }
        let boundPort = Reply<Int>()
        let server = RoomServer(
            host: host, port: port, configuration: configuration, state: state, identity: identity,
            cluster: clusterConfiguration(), realtimePriority: realtimePriority, logger: logger
        ) { host, port in
            // Scripts and tests read the first line to learn the port.
            var lines = "cowatch-server: listening on \(host):\(port)\n"
            if let identity {
                lines += "cowatch-server: TLS certificate \(identity.fingerprint.text) (invites pin it: fp=\(identity.fingerprint.text))\n"
            }
            FileHandle.standardOutput.write(Data(lines.utf8))
            // Only now: the Syncplay gateway waits for this to bind and say its own line, after ours.
            boundPort.resume(port)
        }
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: server)]
        if let gateway = syncplayGateway(roomPort: boundPort, identity: identity, verifiers: server.verifiers, logger: logger) {
            services.append(.init(service: gateway))
        }
        if let mapper = try portMapper(port: port, logger: logger) { services.append(.init(service: mapper)) }
        let group = ServiceGroup(
            configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch let error as CowatchError {
            fail(error.message, code: 1)
        }
    }

    /// `--map-port`: the service that keeps the port forwarded, saying on stdout (its first
    /// report) whether friends can reach the server; nil when off. Exits 2 on a bad value.
    func portMapper(port: Int, logger: Logger) throws -> PortMapperService? {
        let mode: PortMappingMode
        do {
            mode = try PortMappingMode(parsing: mapPort ?? "off")
        } catch {
            fail(error.message, code: 2)
        }
        guard mode != .off else { return nil }
        let lease = mapLease ?? 3600
        guard (30...86_400).contains(lease) else { fail("--map-lease must be 30-86400 seconds", code: 2) }
        guard port > 0 else { fail("--map-port needs a fixed --listen port", code: 2) }
        var settings = PortMapperService.Settings(mode: mode, internalPort: port)
        settings.machine.lease = lease
        let said = Locked(false)
        return PortMapperService(settings: settings, logger: logger, now: SystemClock.monotonicSeconds) { reachability in
            guard reachability != .checking else { return }
            var lines = "cowatch-server: \(reachability.summary(port: port))\n"
            if let advice = reachability.advice { lines += "cowatch-server: what to do: \(advice)\n" }
            // Every change is said; the first one on stdout, where scripts read the start-up lines.
            if said.withLock({ let first = !$0; $0 = true; return first }) {
                FileHandle.standardOutput.write(Data(lines.utf8))
            } else {
                logger.warning("\(lines.trimmingCharacters(in: .newlines))")
            }
        }
    }

    /// The TLS identity: the given certificate and key, else the self-signed one kept in the
    /// state directory (made on first start); nil with --no-tls, which is said loudly.
    func loadIdentity(stateDirectory: String) throws(CowatchError) -> ServerIdentity? {
        if noTLS {
            guard tlsCert == nil, tlsKey == nil else {
                throw CowatchError(.invalidConfiguration, "--no-tls and --tls-cert/--tls-key contradict each other")
            }
            FileHandle.standardError.write(Data(
                "cowatch-server: WARNING: --no-tls: room links are neither encrypted nor authenticated; use it on loopback or for tests only\n".utf8))
            return nil
        }
        switch (tlsCert, tlsKey) {
        case (let cert?, let key?):
            return try ServerIdentity.load(certificatePath: cert, keyPath: key)
        case (nil, nil):
            let resolved = (stateDirectory as NSString).resolvingSymlinksInPath
            return try ServerIdentity.loadOrCreate(directory: resolved, commonName: ProcessInfo.processInfo.hostName)
        default:
            throw CowatchError(.invalidConfiguration, "--tls-cert and --tls-key go together")
        }
    }

    /// --cluster, --advertise and --cluster-lease, checked; nil without --cluster.
    func clusterConfiguration() -> ClusterConfiguration? {
        guard let cluster else {
            if advertise != nil || clusterLease != nil { fail("--advertise and --cluster-lease go with --cluster", code: 2) }
            return nil
        }
        do {
            let redis = try ClusterConfiguration.parseRedisURL(cluster)
            guard let advertise else { fail("--cluster needs --advertise HOST:PORT: where daemons reach this server", code: 2) }
            guard let endpoint = RoomPlacement.parseAddress(advertise), !["0.0.0.0", "::"].contains(endpoint.host) else {
                fail("--advertise must be HOST:PORT that daemons can reach (not 0.0.0.0, not port 0)", code: 2)
            }
            var configuration = ClusterConfiguration(redis: redis, advertise: endpoint)
            if let clusterLease {
                guard clusterLease.isFinite, clusterLease >= 1, clusterLease <= 3600 else {
                    fail("--cluster-lease must be between 1 and 3600 seconds", code: 2)
                }
                configuration.leases = RoomLeases.Configuration(lease: clusterLease)
            }
            return configuration
        } catch {
            fail(error.message, code: 2)
        }
    }

    /// --state-dir, else systemd's $STATE_DIRECTORY, else the user's state directory.
    func stateDirectory() -> String {
        if let stateDir { return stateDir }
        let environment = ProcessInfo.processInfo.environment
        if let systemd = environment["STATE_DIRECTORY"], !systemd.isEmpty {
            return String(systemd.split(separator: ":").first ?? Substring(systemd))
        }
        if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") { return xdg + "/cowatch/server" }
        return (environment["HOME"] ?? "/tmp") + "/.local/state/cowatch/server"
    }

    /// The soft limit on open descriptors (RLIMIT_NOFILE).
    func openFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return Int.max / 2 }
        return Int(clamping: limit.rlim_cur)
    }

    /// `--syncplay-listen`: the listener that takes Syncplay clients into this server's rooms;
    /// nil when not asked for. With `--syncplay-secret-rooms`, it proves those rooms' secrets with
    /// the verifiers the server keeps (`verifiers`). Exits 2 on a bad value or an unusable
    /// password file.
    func syncplayGateway(roomPort: Reply<Int>, identity: ServerIdentity?, verifiers: RoomVerifiers, logger: Logger) -> SyncplayGateway? {
        guard let syncplayListen else {
            if syncplayPasswordFile != nil { fail("--syncplay-password-file needs --syncplay-listen", code: 2) }
            if syncplaySecretRooms != nil { fail("--syncplay-secret-rooms needs --syncplay-listen", code: 2) }
            return nil
        }
        let endpoint: Endpoint
        do {
            endpoint = try Endpoint(parsing: syncplayListen, defaultHost: "0.0.0.0")
        } catch {
            fail("--syncplay-listen: \(error.message)", code: 2)
        }
        var guest = SyncplayGuest.Configuration()
        if let path = syncplayPasswordFile {
            do {
                guest.passwordHash = SyncplayPassword.hash(try SyncplayPasswordReader.read(path: path, what: "Syncplay password file"))
            } catch {
                fail(error.message, code: 2)
            }
        }
        if let syncplaySecretRooms {
            // Never by default: the Syncplay password then opens every room named.
            guard guest.passwordHash != nil else {
                fail("--syncplay-secret-rooms needs --syncplay-password-file: the password Syncplay clients must give instead of a room's secret", code: 2)
            }
            do {
                guest.secretRooms = try SyncplaySecretRooms.parse(syncplaySecretRooms)
            } catch {
                fail("--syncplay-secret-rooms: \(error.message)", code: 2)
            }
            let which = guest.secretRooms == .all ? "every room with a secret" : "the rooms with a secret it names"
            let clear = tlsCert == nil ? ", sent in clear (no --tls-cert)" : ""
            FileHandle.standardError.write(Data(
                "cowatch-server: WARNING: --syncplay-secret-rooms: the Syncplay password (an unsalted MD5 on the wire\(clear)) opens \(which); keep it as private as those secrets\n".utf8))
        }
        // Stock clients refuse a certificate no authority signed: TLS only with one given (--tls-cert).
        var tls: NIOSSLContext?
        if tlsCert != nil, let identity {
            do {
                tls = try identity.makeServerContext(minimumVersion: .tlsv12)
                guest.tls = true
            } catch {
                fail(error.message, code: 2)
            }
        }
        var configuration = SyncplayGateway.Configuration(
            host: endpoint.host, port: endpoint.port, roomPort: { let port = await roomPort.wait(timeout: 30, orElse: -1); return port > 0 ? port : nil }, roomKey: identity?.fingerprint,
            guest: guest)
        configuration.tls = tls
        if guest.secretRooms != .none { configuration.roomVerifier = { room in await verifiers.verifier(of: room) } }
        return SyncplayGateway(configuration: configuration, logger: logger) { host, port in
            FileHandle.standardOutput.write(Data("cowatch-server: Syncplay clients on \(host):\(port)\n".utf8))
        }
    }

    func parseListen(_ text: String) -> (String, Int) {
        do {
            let endpoint = try Endpoint(parsing: text, defaultHost: "0.0.0.0")
            return (endpoint.host, endpoint.port)
        } catch {
            fail("--listen: \(error.message)", code: 2)
        }
    }

    func fail(_ message: String, code: Int32) -> Never {
        FileHandle.standardError.write(Data("cowatch-server: \(message)\n".utf8))
        Foundation.exit(code)
    }
}
