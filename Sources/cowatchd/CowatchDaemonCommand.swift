import ArgumentParser
import CowatchCore
import CowatchDaemon
import Foundation
import Logging

@main
struct CowatchDaemonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cowatchd",
        abstract: "Play media in libmpv, driven by a local control socket, in lockstep with friends.",
        discussion: """
            Every option can also come from the environment (COWATCH_MEDIA, COWATCH_NAME, COWATCH_CONTROL, \
            COWATCH_MPV as comma-separated KEY=VALUE, COWATCH_PAUSED, COWATCH_OSD, COWATCH_LOG_LEVEL, \
            COWATCH_SEEK_TIMEOUT, COWATCH_OPEN_TIMEOUT, COWATCH_HOST, COWATCH_JOIN, COWATCH_ROOM, \
            COWATCH_DRIFT_SEEK_THRESHOLD, COWATCH_DRIFT_CORRECTION_TIME, COWATCH_DRIFT_START_CORRECTION_TIME, COWATCH_DRIFT_MAX_ADJUST, COWATCH_DRIFT_INTERVAL, COWATCH_TITLE, COWATCH_TYPE, COWATCH_FALLBACK_URL, \
            COWATCH_ON_END, COWATCH_READY, COWATCH_WAIT_FOR_ME, COWATCH_PLAY_WHEN_READY, COWATCH_WAIT_TIMEOUT, \
            COWATCH_MANAGED, COWATCH_ROOM_SECRET_FILE, COWATCH_ALLOW_SCHEME, COWATCH_ACCEPT_OPEN, \
            COWATCH_MEDIA_DIRS as colon-separated folders, COWATCH_PLAYLIST) or from the JSON config file; flags win over \
            the environment, which wins over the file. The room secret may also be given as COWATCH_ROOM_SECRET (the secret \
            itself, environment only; never as a flag). See cowatchd(1) and cowatch-protocol(7).
            """,
        version: CowatchVersion.text)

    // As with mpv, `cowatchd film.mkv`; `--media` says the same for scripts and config files.
    // Several (`cowatchd a.mkv b.mkv c.mkv`): the first plays, all seed a new room's playlist.
    @Argument(help: ArgumentHelp(
        "The media to play, as --media. With several (as mpv takes them), the first plays and all of them fill the room's playlist when it is empty (a new room).",
        valueName: "MEDIA"))
    var positionalMedia: [String] = []

    @Option(name: .long, help: ArgumentHelp(
        "An M3U playlist (.m3u or .m3u8: a file path or URL a line, relative paths from its folder) whose entries fill the room's playlist when it is empty, after any MEDIA; without media, its first entry plays.",
        valueName: "FILE"))
    var playlist: String?

    @Option(name: .long, help: ArgumentHelp("The media to play: a file path or any URL mpv opens. Joining a room, it may be left out: the room's media then streams from a member who shares it.", valueName: "URL"))
    var media: String?

    @Option(name: .long, help: ArgumentHelp("Your name as others see it (default: your login name).", valueName: "NAME"))
    var name: String?

    @Option(name: .long, help: ArgumentHelp(
        "Control socket path (default: $XDG_RUNTIME_DIR/cowatch/NAME.sock, else /tmp/cowatch-UID/NAME.sock).",
        valueName: "PATH"))
    var control: String?

    @Option(name: .long, help: ArgumentHelp(
        "A libmpv option set before initialisation, e.g. vo=null; repeatable, later ones win.", valueName: "KEY=VALUE"))
    var mpv: [String] = []

    @Flag(name: .long, inversion: .prefixedNo, help: "Alone: start paused (default: start playing). In a room the group decides: a new room starts paused until someone plays.")
    var paused: Bool?

    @Flag(name: .long, inversion: .prefixedNo, help: "Show notices on mpv's OSD (default: on).")
    var osd: Bool?

    @Option(name: .long, help: ArgumentHelp(
        "JSON config file (default: $XDG_CONFIG_HOME/cowatch/cowatchd.json, optional).", valueName: "PATH"))
    var config: String?

    @Option(name: .long, help: ArgumentHelp(
        "Log level on stderr: trace, debug, info, notice, warning, error, critical (default: warning).",
        valueName: "LEVEL"))
    var logLevel: String?

    @Option(name: .long, help: ArgumentHelp(
        "Run the room server inside this daemon on [ADDR:]PORT (default address 0.0.0.0) and join it.",
        valueName: "[ADDR:]PORT"))
    var host: String?

    @Option(name: .long, help: ArgumentHelp(
        "Join the room server at HOST:PORT, by an invite link cowatch://HOST:PORT/ROOM?secret=…&fp=sha256:… (put it in quotes), or a Syncplay server's room syncplay://HOST[:PORT]/ROOM (port 8999 by default).",
        valueName: "HOST:PORT|INVITE|SYNCPLAY"))
    var join: String?

    @Option(name: .long, help: ArgumentHelp(
        "With --join syncplay://…: a file (0600) holding the Syncplay server's password; with --host … --syncplay-port: the password Syncplay clients must give.",
        valueName: "PATH"))
    var syncplayPasswordFile: String?

    @Option(name: .long, help: ArgumentHelp(
        "With --join syncplay://…/+ROOM:HASH: a file (0600) holding the managed room's password (AB-123-456), to control it.",
        valueName: "PATH"))
    var syncplayRoomPasswordFile: String?

    @Flag(name: .long, help: "With --join syncplay://…: refuse a Syncplay server that offers no TLS (default: plaintext, with a warning).")
    var syncplayRequireTls = false

    @Option(name: .long, help: ArgumentHelp(
        "With --join syncplay://…: trust the certificate authorities in this PEM file besides the system's.", valueName: "PATH"))
    var syncplayCaFile: String?

    @Option(name: .long, help: ArgumentHelp(
        "Read the invite to join from this file (the host's invite-ROOM.txt or a bare link; 0600 when it holds a secret), or from standard input with -: the secret stays off the command line.",
        valueName: "PATH|-"))
    var joinFile: String?

    @Flag(name: .customLong("no-tls"), help: "Room link without TLS: neither encrypted nor authenticated. For loopback and tests only.")
    var noTLS = false

    @Option(name: .long, help: ArgumentHelp(
        "The room server's key (sha256:…, what its host's invite carries as fp=), for --join HOST:PORT: the link is pinned to it.",
        valueName: "sha256:…"))
    var serverKey: String?

    @Flag(name: .long, help: "Prove (or set) a room secret to a server whose key is not pinned (no fp=, --server-key or known_hosts entry): whoever sits in the middle of this first connection could guess the secret offline.")
    var trustFirstKey = false

    @Option(name: .long, help: ArgumentHelp("The room to watch in (default: cowatch).", valueName: "NAME"))
    var room: String?

    @Option(name: .long, help: ArgumentHelp("The activity's title as others see it (default: the media's).", valueName: "TITLE"))
    var title: String?

    @Option(name: .long, help: ArgumentHelp("Activity type: watch or listen (default: watch if the media has video).", valueName: "TYPE"))
    var type: String?

    @Option(name: .long, help: ArgumentHelp("A URL offered to participants who cannot open the media.", valueName: "URL"))
    var fallbackURL: String?

    @Option(name: .long, help: ArgumentHelp(
        "When someone ends the activity for everyone: keep (the player stays open) or quit (default: keep).",
        valueName: "keep|quit"))
    var onEnd: String?

    @Flag(name: .long, inversion: .prefixedNo, help: "Start ready (matters under --play-when-ready; default: not ready).")
    var ready: Bool?

    @Flag(name: .long, inversion: .prefixedNo, help: "Let the group wait for you when you stall (default: on).")
    var waitForMe: Bool?

    @Option(name: .long, help: ArgumentHelp(
        "Add subtitle attachments shared in the room (.srt, .ass, .ssa, .vtt) to the player (default: yes).",
        valueName: "yes|no"))
    var autoSubtitles: String?

    @Option(name: .long, help: ArgumentHelp(
        "Bytes a second each attachment transfer may use (K, M or G; default 0: unlimited), to leave CPU and link to playback.",
        valueName: "SIZE"))
    var transferRate: String?

    @Option(name: .long, help: ArgumentHelp(
        "Nice value for the player's threads, -20 (first) to 19, so a busy machine shows frames on time; below the current needs CAP_SYS_NICE or LimitNICE= (default: unchanged).",
        valueName: "N"))
    var playerNice: Int?

    @Option(name: .long, help: ArgumentHelp(
        "Run the player's output threads under real-time scheduling (SCHED_FIFO) at this priority, 1-99, so frames go on screen on time on a busy machine; needs CAP_SYS_NICE or LimitRTPRIO= (default: off).",
        valueName: "N"))
    var playerRealtime: Int?

    @Flag(name: .long, help: "With --host: a play waits until everyone is ready (bounded by --wait-timeout).")
    var playWhenReady: Bool = false

    @Option(name: .long, help: ArgumentHelp(
        "With --host: seconds the group waits for a stalled or unready participant (default: 5).", valueName: "SECONDS"))
    var waitTimeout: Double?

    @Flag(name: .long, help: "With --host: only the owner and operators play, pause, seek and switch media (default: everyone may).")
    var managed = false

    @Flag(name: .long, help: ArgumentHelp("With --host: everyone may play, pause, seek and switch media (the default).", visibility: .hidden))
    var unmanaged = false

    @Option(name: .long, help: ArgumentHelp(
        "With --host: ask the home router to forward the port (UPnP-IGD, NAT-PMP or PCP), renew it and remove it at exit: auto, upnp, natpmp, pcp or off (default: auto).",
        valueName: "HOW"))
    var mapPort: String?

    @Option(name: .long, help: ArgumentHelp(
        "With --host: also take stock Syncplay clients (desktop, mobile, Kodi) into the room on this port. A room with a secret also needs --syncplay-password-file (the password they give instead).",
        valueName: "PORT"))
    var syncplayPort: Int?

    @Option(name: .long, help: ArgumentHelp(
        "With --host: the lease asked of the router, 30-86400 seconds, renewed at half (default: 3600).", valueName: "SECONDS"))
    var mapLease: Double?

    @Option(name: .long, help: ArgumentHelp(
        "With --host: a TLS certificate chain in PEM (e.g. Let's Encrypt's fullchain.pem) instead of the self-signed one.", valueName: "PATH"))
    var tlsCert: String?

    @Option(name: .long, help: ArgumentHelp("With --host: the private key of --tls-cert, in PEM.", valueName: "PATH"))
    var tlsKey: String?

    @Option(name: .long, help: ArgumentHelp(
        "A file holding the room secret (mode 600): guards the room you create, proves you to a guarded one.", valueName: "PATH"))
    var roomSecretFile: String?

    @Option(name: .customLong("allow-scheme"), help: ArgumentHelp(
        "A URL scheme the room may make this player open; repeatable (default: http and https).", valueName: "SCHEME"))
    var allowScheme: [String] = []

    @Option(name: .long, help: ArgumentHelp(
        "Whose media switches to follow: trusted (owner and operators; members only to --trust-host hosts, else ask), anyone, operators (owner and operators only) or ask (cowatch accept) (default: trusted).",
        valueName: "trusted|ask|operators|anyone"))
    var acceptOpen: String?

    @Option(name: .customLong("trust-host"), help: ArgumentHelp(
        "A host (and its subdomains) or IP address whose URLs a member's switch opens at once; repeatable (default: none).",
        valueName: "HOST"))
    var trustHost: [String] = []

    @Option(name: .customLong("media-dir"), help: ArgumentHelp(
        "A folder whose media files the room's playlist may name by content (size and fingerprint; no path leaves this machine), indexed in the background; repeatable. A missing folder is a warning (default: none).",
        valueName: "DIR"))
    var mediaDir: [String] = []

    @Flag(name: .long, help: "Offer this daemon's media to the room: members who lack it play it streamed from here (cowatch share/unshare do the same later).")
    var share = false

    @Option(name: .long, help: ArgumentHelp(
        "Play the room's media streamed from a member who shares it when this daemon lacks it, or its copy differs from the room's: yes; missing (only when it lacks it); no (default: yes).",
        valueName: "yes|missing|no"))
    var acceptStream: String?

    @Option(name: .long, help: ArgumentHelp(
        "Bytes a second all streams from here may send, and optionally each one, such as 5M or 5M,2M (default: 0, unlimited).",
        valueName: "TOTAL[,EACH]"))
    var shareRate: String?

    @Option(name: .long, help: ArgumentHelp(
        "Bytes of a streamed film kept on disk under the state directory beside 32 MiB in memory, such as 512M (0: memory only; default: 1G). The file is removed as soon as it is made.",
        valueName: "SIZE"))
    var streamCache: String?

    @Option(name: .customLong("share-to"), help: ArgumentHelp(
        "Only this member may stream what this daemon shares; repeatable (default: any member).", valueName: "NAME"))
    var shareTo: [String] = []

    @Option(name: .long, help: ArgumentHelp(
        "Seconds opening media may take before it counts as failed (default: 30).", valueName: "SECONDS"))
    var openTimeout: Double?

    @Option(name: .long, help: ArgumentHelp(
        "Seconds a seek or group action may take to be confirmed (default: 5).", valueName: "SECONDS"))
    var seekTimeout: Double?

    /// Parses as ArgumentParser does; a command line it refuses that holds an unknown option gets
    /// "did you mean …?" (and `--room-secret` where a secret goes) instead of its message.
    static func main() async {
        let command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            // ArgumentParser may take an unknown option's value for the media and complain about
            // that instead: name the option, and the one meant.
            // (--help, --version and completion scripts come this way too, as a success.)
            if exitCode(for: error) != .success, let hint = unknownOptionHint(Array(CommandLine.arguments.dropFirst())) {
                FileHandle.standardError.write(Data("cowatchd: \(hint)\n".utf8))
                Self.exit(withError: ExitCode(2))
            }
            Self.exit(withError: error)
        }
        do {
            if let daemon = command as? CowatchDaemonCommand {
                try await daemon.run()
            } else {
                var other = command
                try other.run()
            }
        } catch {
            Self.exit(withError: error)
        }
    }

    /// The first long option in `arguments` (before `--`) that `--help` does not list, and the
    /// option meant; nil when all are known.
    static func unknownOptionHint(_ arguments: [String]) -> String? {
        var known: Set<String> = []
        var rest = Substring(helpMessage(includeHidden: true))
        while let dash = rest.range(of: "--") {
            let name = rest[dash.lowerBound...].prefix { $0 == "-" || $0.isLetter || $0.isNumber }
            if name.count > 2 { known.insert(String(name)) }
            rest = rest[dash.upperBound...]
        }
        for argument in arguments {
            if argument == "--" { return nil }
            guard argument.hasPrefix("--") else { continue }
            let option = String(argument.prefix { $0 != "=" })
            guard !known.contains(option) else { continue }
            if option == "--room-secret" {
                return "unknown option --room-secret: a secret never goes on a command line (every local user sees it "
                    + "in ps); put it in a file (mode 600) and give --room-secret-file PATH, or set COWATCH_ROOM_SECRET"
            }
            let meant = Suggestion.closest(to: option, among: known.sorted()).map { " — did you mean \($0)?" } ?? ""
            return "unknown option \(option)\(meant) (cowatchd --help lists them)"
        }
        return nil
    }

    mutating func validate() throws {
        if let first = positionalMedia.first, let media, first != media {
            throw ValidationError("give the media once: either \(first) or --media \(media)")
        }
    }

    func run() async throws {
        // An invite's secret on our command line is visible to every local user: gone at once.
        SecretArguments.scrub()
        var flags = DaemonFlags()
        flags.media = media ?? positionalMedia.first
        flags.mediaList = positionalMedia
        flags.playlist = playlist
        flags.name = name
        flags.control = control
        flags.mpv = mpv
        flags.paused = paused
        flags.osd = osd
        flags.config = config
        flags.logLevel = logLevel
        flags.host = host
        flags.join = join
        flags.syncplayPasswordFile = syncplayPasswordFile
        flags.syncplayRoomPasswordFile = syncplayRoomPasswordFile
        flags.syncplayRequireTLS = syncplayRequireTls ? true : nil
        flags.syncplayCAFile = syncplayCaFile
        if let joinFile {
            do {
                guard join == nil else { throw CowatchError(.invalidConfiguration, "use either --join or --join-file, not both") }
                flags.join = try InviteFileReader.read(path: joinFile)
            } catch let error as CowatchError {
                FileHandle.standardError.write(Data("cowatchd: \(error.message)\n".utf8))
                throw ExitCode(error.code == .unsafePath ? 1 : 2)
            }
        }
        flags.noTLS = noTLS ? true : nil
        flags.serverKey = serverKey
        flags.trustFirstKey = trustFirstKey ? true : nil
        flags.room = room
        flags.title = title
        flags.type = type
        flags.fallbackURL = fallbackURL
        flags.onEnd = onEnd
        flags.ready = ready
        flags.waitForMe = waitForMe
        flags.transferRate = transferRate
        flags.playerNice = playerNice
        flags.playerRealtime = playerRealtime
        if let autoSubtitles {
            switch autoSubtitles {
            case "yes", "on", "true": flags.autoSubtitles = true
            case "no", "off", "false": flags.autoSubtitles = false
            default: throw CowatchError(.invalidConfiguration, "--auto-subtitles takes yes or no, not \(autoSubtitles)")
            }
        }
        flags.playWhenReady = playWhenReady ? true : nil
        flags.waitTimeout = waitTimeout
        flags.openTimeout = openTimeout
        flags.seekTimeout = seekTimeout
        flags.managed = managed ? true : nil
        flags.unmanaged = unmanaged ? true : nil
        flags.mapPort = mapPort
        flags.syncplayPort = syncplayPort
        flags.mapLease = mapLease
        flags.tlsCert = tlsCert
        flags.tlsKey = tlsKey
        flags.roomSecretFile = roomSecretFile
        flags.allowSchemes = allowScheme
        flags.acceptOpen = acceptOpen
        flags.trustHosts = trustHost
        flags.mediaDirectories = mediaDir
        flags.share = share ? true : nil
        flags.acceptStream = acceptStream
        flags.shareRate = shareRate
        flags.streamCache = streamCache
        flags.shareTo = shareTo
        let configuration: DaemonConfiguration
        do {
            configuration = try await DaemonConfiguration.load(flags: flags, environment: ProcessInfo.processInfo.environment)
        } catch let error as CowatchError {
            // Everything found while reading the configuration needs an edit, not a retry.
            FileHandle.standardError.write(Data("cowatchd: \(error.message)\n".utf8))
            throw ExitCode(2)
        }
        do {
            let level = Logger.Level(rawValue: configuration.logLevel) ?? .warning
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
            try await Daemon.run(configuration: configuration, logger: Logger(label: "cowatchd"))
        } catch let error as CowatchError {
            FileHandle.standardError.write(Data("cowatchd: \(error.message)\n".utf8))
            throw ExitCode(error.code == .invalidConfiguration ? 2 : 1)
        }
    }
}

