import CowatchCore
import Foundation
import CowatchMpv
import CowatchNet
import Logging
import ServiceLifecycle

/// The `cowatchd` program, minus argument parsing.
///
/// Claims the control socket path, starts libmpv, opens the media (failing fast with mpv's
/// reason), then runs the control server and the player as services until SIGINT/SIGTERM, the
/// `quit` command, or the user closing the player. Shutdown is graceful: the socket file is
/// removed and libmpv torn down properly.
public enum Daemon {
    /// Runs until shutdown. Throws `CowatchError` for start-up failures (bad options, socket in
    /// use, media that cannot be opened).
    public static func run(configuration: DaemonConfiguration, logger: Logger) async throws {
        try ControlSocketClaim.claim(path: configuration.controlPath)

        let player: MpvPlayer
        do {
            player = try MpvPlayer(options: configuration.effectiveMpvOptions, logger: logger)
        } catch {
            throw CowatchError(.invalidConfiguration, "libmpv refused to start: \(error)")
        }
        do {
            try ChatInputScript.load(into: player, environment: ProcessInfo.processInfo.environment)
        } catch {
            logger.warning("no chat key in the player window: \(error.message) (cowatch chat still works)")
        }
        WindowBindings.install(on: player)
        let hub = EventHub()
        let controller = PlayerController(player: player, configuration: configuration, events: hub, logger: logger)

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await controller.runEvents() }
            do {
                try await controller.open()
            } catch {
                await player.shutdown()
                throw error
            }
            logger.debug("media open", metadata: ["cowatch.media": "\(configuration.media)"])
            // Now: the playloop, the outputs and the decoders exist (later threads inherit a nice value).
            do {
                if let nice = configuration.playerNice {
                    let count = try PlayerThreads.setNice(nice)
                    logger.debug("player threads reniced", metadata: ["cowatch.nice": "\(nice)", "cowatch.threads": "\(count)"])
                }
                if let priority = configuration.playerRealtime {
                    let count = try PlayerThreads.setRealtime(priority: priority)
                    logger.debug(
                        "player output threads real-time", metadata: ["cowatch.priority": "\(priority)", "cowatch.threads": "\(count)"])
                }
            } catch {
                await player.shutdown()
                throw error
            }

            let control = ControlServer(
                path: configuration.controlPath, handler: controller, events: hub, logger: logger)
            let lifetime = PlayerLifetimeService(controller: controller)
            var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
            if var room = configuration.room {
                if let port = room.hostPort {
                    // Before our session tries to join a server that is someone else's.
                    try ListenError.ensureFree(host: room.hostAddress ?? "0.0.0.0", port: port)
                    if let syncplayPort = room.syncplayListenPort {
                        try ListenError.ensureFree(host: room.hostAddress ?? "0.0.0.0", port: syncplayPort)
                    }
                    // The embedded room server starts first so our own session can join it.
                    var policy = RoomSequencer.Configuration()
                    policy.playWhenReady = room.playWhenReady
                    policy.waitTimeout = room.waitTimeout
                    let hosting = try HostedServerFiles(
                        environment: ProcessInfo.processInfo.environment, tls: room.tls, certificate: room.certificate)
                    // Our room's record follows the secret we run with now (and says when it changed).
                    switch try hosting.state.claimHostedRoom(room.room, secret: room.secret) {
                    case .unchanged: break
                    case .secretChanged:
                        logger.warning("room \(room.room) has a new secret: invites with the old one no longer work; send the new invite")
                    case .secretAdded:
                        logger.warning("room \(room.room) now needs a secret: send the new invite")
                    case .secretRemoved:
                        logger.warning("room \(room.room) no longer needs a secret: anyone who reaches this server may join")
                    }
                    // Friends in the same tailnet reach us by name (asked once, bounded, before the room runs).
                    if LocalNetwork.vpnAddresses().contains(where: { $0.interface.hasPrefix("tailscale") }) {
                        room.tailscaleName = TailscaleName.lookup()
                    }
                    // We join our own server: we know its key, so we pin it.
                    room.fingerprint = hosting.identity?.fingerprint
                    // Everyone controls playback; under --managed only the owner (this daemon,
                    // which creates the room) and its operators.
                    policy.managed = room.managed
                    // The room is ours: nobody else may create it, even with a hello that arrives
                    // before ours; our token (signed with the server's key) proves us.
                    let tokens = SessionTokens(key: try hosting.state.tokenKey())
                    let hostToken = tokens.issue(room: room.room, name: configuration.name)
                    policy.reservedRooms[room.room] = hostToken
                    // It serves this room only: strangers cannot use the host's machine for theirs.
                    policy.onlyReservedRooms = true
                    room.hostToken = try RoomSecretValue(hostToken)
                    let server = RoomServer(
                        host: room.hostAddress ?? "0.0.0.0", port: port, configuration: policy, state: hosting.state,
                        identity: hosting.identity, logger: logger)
                    services.append(.init(service: server))
                    if let syncplayPort = room.syncplayListenPort {
                        // Stock Syncplay clients join our room through a room connection of their own.
                        var guest = SyncplayGuest.Configuration(passwordHash: room.syncplayGuestPasswordHash?.text)
                        guest.roomSecret = room.syncplayGuestPasswordHash == nil ? nil : room.secret
                        let gateway = SyncplayGateway(
                            configuration: .init(
                                host: room.hostAddress ?? "0.0.0.0", port: syncplayPort, roomPort: { port },
                                roomKey: hosting.identity?.fingerprint, guest: guest),
                            logger: logger, clock: controller.clock)
                        services.append(.init(service: gateway))
                    }
                }
                // The playlist's local files, found by identity in --media-dir folders.
                let mediaIndex = configuration.mediaDirectories.isEmpty ? nil : MediaDirectoryIndexer(
                    settings: .init(directories: configuration.mediaDirectories), clock: controller.clock, logger: logger)
                if let mediaIndex { services.append(.init(service: mediaIndex)) }
                let session = RoomSession(
                    player: controller.roomPlayer, subtitles: SubtitleTracks(player), configuration: configuration,
                    room: room, media: controller.media, events: hub, logger: logger,
                    probe: .mpv(options: configuration.mpvOptions, logger: logger), mediaIndex: mediaIndex)
                await controller.attach(room: session)
                if let port = room.hostPort, room.portMapping != .off {
                    // Friends on the internet reach a host at home only through its router.
                    var mapping = PortMapperService.Settings(mode: room.portMapping, internalPort: port)
                    mapping.machine.lease = room.mapLease
                    services.append(.init(service: PortMapperService(
                        settings: mapping, logger: logger, now: { [clock = controller.clock] in clock.now() },
                        onReport: { reachability in await session.reachabilityChanged(reachability) },
                        onReportIPv6: { reachability in await session.reachabilityIPv6Changed(reachability) })))
                }
                // Returning normally means "quit" (someone ended the activity and on-end is quit).
                services.append(.init(
                    service: RoomSessionService(session: session),
                    successTerminationBehavior: .gracefullyShutdownGroup))
            }
            services += [
                .init(service: control, successTerminationBehavior: .gracefullyShutdownGroup),
                .init(service: lifetime, successTerminationBehavior: .gracefullyShutdownGroup),
            ]
            let group = ServiceGroup(
                configuration: .init(
                    services: services,
                    gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger))
            await controller.setShutdownHandler { await group.triggerGracefulShutdown() }
            do {
                try await group.run()
            } catch {
                hub.finishAll()
                await player.shutdown()
                throw error
            }
            hub.finishAll()
            await player.shutdown()
            try await tasks.waitForAll()
        }
    }
}

/// Keeps the group alive while the player lives; returns when the player goes away (so the
/// group shuts down) or on graceful shutdown.
struct PlayerLifetimeService: Service {
    let controller: PlayerController

    func run() async throws {
        // Released by graceful shutdown, or by cancellation when another service failed.
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await controller.waitUntilPlayerEnded()
            } onGracefulShutdown: {
                Task { await controller.stopWaitingForPlayerEnd() }
            }
        } onCancel: {
            Task { await controller.stopWaitingForPlayerEnd() }
        }
    }
}

/// Runs the room session (the controller hands it the player's events) until graceful shutdown,
/// or until the activity ends and on-end is quit; leaving the room is closing the connection,
/// which the server announces as "leave".
struct RoomSessionService: Service {
    let session: RoomSession

    /// Throws the server's refusal (e.g. `name-taken`), which ends the daemon with that message;
    /// returns when the activity ended and on-end is quit (the group then shuts down).
    func run() async throws {
        let outcome: RoomSession.Outcome? = await cancelWhenGracefulShutdown { () async -> RoomSession.Outcome? in
            await withTaskGroup(of: RoomSession.Outcome?.self) { group -> RoomSession.Outcome? in
                group.addTask { await session.run() }
                group.addTask {
                    await session.runSubtitleFetches()
                    return nil
                }
                for await result in group {
                    if let result {
                        group.cancelAll()
                        return result
                    }
                }
                return nil
            }
        } ?? nil
        if case .stop(let refusal) = outcome {
            // One line on stderr, naming the code: "wrong secret for room movie-night (auth-failed)".
            throw CowatchError(refusal.code, "\(refusal.message) (\(refusal.code.rawValue))")
        }
    }
}
