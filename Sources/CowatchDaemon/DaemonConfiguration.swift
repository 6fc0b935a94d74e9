import CowatchCore

/// Everything `cowatchd` needs to run, with documented defaults.
///
/// Built by `DaemonConfiguration.load` from flags, `COWATCH_*` environment variables and a JSON
/// config file, in that order of precedence. Threading: a value type, safe to share.
public struct DaemonConfiguration: Sendable, Equatable {
    /// The media to play: a file path or any URL mpv opens. Required, except when joining a
    /// room: empty then, the player waits for the room's media from a member who shares it.
    public var media: String
    /// This participant's name. Default: the login name.
    public var name: String
    /// The control socket path. Default: `$XDG_RUNTIME_DIR/cowatch/NAME.sock`.
    public var controlPath: String
    /// libmpv options (`KEY=VALUE`), applied after Cowatch's own defaults, in order.
    public var mpvOptions: [MpvOption]
    /// Start paused instead of playing (standalone only; in a room the group decides). Default false.
    public var startPaused: Bool
    /// Show notices on mpv's OSD. Default true.
    public var osd: Bool
    /// How long a seek request may wait for the player to land, in seconds. Default 5.
    public var seekTimeout: Double
    /// How long opening the media may take before giving up, in seconds. Default 30.
    public var openTimeout: Double
    /// Log level for stderr: trace, debug, info, notice, warning, error, critical. Default warning.
    public var logLevel: String
    /// The room to watch in, when `--join` or `--host` is given; nil plays alone.
    public var room: RoomSettings?
    /// The activity's title as others see it. Default: the media's own title.
    public var title: String?
    /// `watch` or `listen`. Default: `watch` when the media has video, else `listen`.
    public var activityType: ActivityType?
    /// Offered to participants who cannot open the media. Default none.
    public var fallbackURL: String?
    /// What to do when someone ends the activity for everyone. Default `keep` (the player stays).
    public var onEnd: GroupSessionMachine.OnEnd = .keep
    /// Start "ready" (Syncplay's readiness; matters under the play-when-ready policy). Default false.
    public var readyAtStart = false
    /// False: "don't wait for me" — the group never holds for this participant. Default true.
    public var waitForMe = true
    /// Subtitle attachments (.srt/.ass/.ssa/.vtt, or meta kind "subtitles") are fetched and added
    /// to the player (`--auto-subtitles no` turns it off). Default on.
    public var autoSubtitles = true
    /// Bytes a second each attachment transfer may move (`--transfer-rate`); 0, the default, is
    /// as fast as the link and the CPU allow.
    public var transferRate: Double = 0
    /// The nice value (−20 … 19) for the player's threads (`--player-nice`), set once the media
    /// is open; nil, the default, leaves them at the daemon's own. A busy machine shows a frame
    /// late when mpv's playloop or video output waits for a CPU; a lower value lets them go first.
    /// Below the current value needs CAP_SYS_NICE or a nice limit (systemd `LimitNICE=`).
    public var playerNice: Int32?
    /// SCHED_FIFO priority (1 … 99) for the player's output threads (`--player-realtime`), set once
    /// the media is open, so frames go on screen on time on a busy machine; nil, the default,
    /// leaves them under the ordinary scheduler. Needs CAP_SYS_NICE or a real-time limit
    /// (systemd `LimitRTPRIO=`).
    public var playerRealtime: Int32?
    /// Folders whose media files are indexed by identity (`--media-dir`, repeatable), so the
    /// room's playlist can name a local film without a path (`MediaDirectoryIndexer`). Absolute
    /// paths, in the order given, without duplicates; default none. A folder that is missing when
    /// the daemon runs is a warning, not an error (a disk may be unplugged): it is scanned again
    /// at each refresh.
    public var mediaDirectories: [String] = []
    /// What this daemon proposes for the room's playlist when it finds it empty (a new room): the
    /// media given as arguments when there are several (`cowatchd a.mkv b.mkv c.mkv`), then the
    /// entries of `--playlist FILE.m3u`; files made absolute, each checked readable at start-up.
    /// Default none. See `RoomSession+PlaylistSeed.swift` for the rule.
    public var playlistSeeds: [PlaylistSeed] = []
    /// The index in `playlistSeeds` of the first seed that is `media` itself (the room's first
    /// media when this daemon makes the room): the entry that becomes the current one. Nil when
    /// none is (`--media X --playlist FILE` without X in FILE).
    public var playlistSeedCurrent: Int?
    /// Film streams: sharing ours, playing others' (`DaemonConfiguration+Stream.swift`).
    public var streams = StreamSettings()

    public struct MpvOption: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }

        /// Parses `KEY=VALUE` (a bare `KEY` means `KEY=yes`, as on mpv's command line).
        /// Throws `invalid-configuration`.
        public init(parsing text: String) throws(CowatchError) {
            var body = Substring(text)
            if body.hasPrefix("--") { body = body.dropFirst(2) }
            let parts = body.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0])
            guard !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
            else {
                throw CowatchError(.invalidConfiguration, "mpv option \"\(text)\" must look like KEY=VALUE")
            }
            self.init(name: key, value: parts.count == 2 ? String(parts[1]) : "yes")
        }
    }

    public init(
        media: String, name: String, controlPath: String, mpvOptions: [MpvOption] = [], startPaused: Bool = false,
        osd: Bool = true, seekTimeout: Double = 5, openTimeout: Double = 30, logLevel: String = "warning"
    ) {
        self.media = media
        self.name = name
        self.controlPath = controlPath
        self.mpvOptions = mpvOptions
        self.startPaused = startPaused
        self.osd = osd
        self.seekTimeout = seekTimeout
        self.openTimeout = openTimeout
        self.logLevel = logLevel
    }

    /// Cowatch's libmpv defaults, applied before the user's options so those can override them.
    ///
    /// - keep-open=always: hold at the end of the media instead of unloading it or moving on to
    ///   the next entry of mpv's own playlist (we report end-of-file; the room decides what is next).
    /// - idle: keep the player alive when the media fails, so we can report why.
    /// - af=scaletempo2: speed nudges from drift correction keep pitch and do not make the
    ///   audio clock jump (measured: without it each speed change moves audio-pts 10–30 ms).
    /// - audio-buffer=0.05: mpv reports audio-pts as the last written sample less the buffered
    ///   audio at the *current* speed, so each drift nudge Δs reads as a step of Δs × buffer the
    ///   wrong way until the buffer has played out. mpv's 0.2 s default made a 0.5 % nudge look
    ///   like 1 ms more error; 50 ms (a PipeWire device's own buffer is 20–40 ms) cuts that
    ///   fourfold. A machine that drops out at 50 ms can set `audio-buffer` back in `mpv`.
    /// - cache-secs=60, demuxer-max-bytes=64MiB, demuxer-max-back-bytes=16MiB: network media
    ///   (a URL, a film streamed from a member) is read at most a minute ahead into a bounded
    ///   cache, not the whole file the moment it opens (mpv's default for a cached stream):
    ///   a sharer's upload is not spent on what a seek throws away, and memory stays bounded.
    ///   Local files are not cached by mpv (its `cache=auto`).
    /// - input bindings and OSC: a window behaves like mpv's own.
    public var effectiveMpvOptions: [(String, String)] {
        var options: [(String, String)] = [
            ("keep-open", "always"),
            ("idle", "yes"),
            ("af", "scaletempo2"),
            ("audio-buffer", "0.05"),
            ("hr-seek", "yes"),
            ("cache-secs", "60"),
            ("demuxer-max-bytes", "64MiB"),
            ("demuxer-max-back-bytes", "16MiB"),
            ("input-default-bindings", "yes"),
            ("input-vo-keyboard", "yes"),
            ("osc", "yes"),
            ("title", "cowatch: \(name) — ${media-title}"),
            // In a room the group timeline decides when to play: start held.
            ("pause", startPaused || room != nil ? "yes" : "no"),
        ]
        options += mpvOptions.map { ($0.name, $0.value) }
        return options
    }
}
