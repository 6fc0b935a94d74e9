/// The player as a room session sees it, as one pure machine: what media it has relative to the
/// room's (`Media`), the seek held behind its fence, what the room hears as our stall, which
/// changes were ours (echo tracking) and the person's seek gestures at the player.
///
/// It composes the smaller machines — `PlayerEchoTracker`, `UserSeekCoalescer`, `StallTracker`,
/// `MediaLoad`, `FrameEventClock`, `LoadFailureReason` — and holds every guard over them. The
/// shell (the daemon's room session) reads the player and feeds what it read here: a player fact
/// (an mpv event and the properties read for it, `PlayerSide+Facts.swift`), an order of the
/// coordinator (`PlayerSide+Orders.swift`), the room's switch of media (`PlayerSide+Media.swift`),
/// a tick. It carries out the `Action`s returned, in order, and reports back how the commands
/// that can fail went (`fenceFailed`, `seekFailed`, `loadRefused`, `pauseSet`). Time is always
/// a parameter: nothing here reads a clock or the player.
///
/// Threading: a value type; one owner (the session's actor). Errors: `acceptOffer` throws
/// `invalid-request`; media that cannot be opened is said with `.error` actions.
public struct PlayerSide: Sendable {
    /// What the machine is given once.
    public struct Configuration: Sendable, Hashable {
        /// This participant's name: a switch it made itself is always followed.
        public var name: String
        /// Which of the room's switches this player follows, and which fallbacks it may open.
        public var openPolicy: OpenPolicy
        /// Seconds each attempt to open media may take.
        public var openTimeout: Double
        /// Seconds a person's seek may take before it counts as a stall.
        public var slowSeek: Double

        public init(name: String, openPolicy: OpenPolicy = OpenPolicy(), openTimeout: Double = 30, slowSeek: Double = 0.5) {
            self.name = name
            self.openPolicy = openPolicy
            self.openTimeout = openTimeout
            self.slowSeek = slowSeek
        }
    }

    /// A seek we ordered, waiting for its fence to come back through mpv's event queue.
    public struct HeldSeek: Sendable, Hashable {
        public var fence: Int
        public var target: Double
        /// When it was ordered (released without its fence after `fenceTimeout`).
        public var at: Double
    }

    /// Seconds a held seek waits for its fence: the fence always comes back unless mpv stalls;
    /// then the seek is made without it rather than never.
    public static let fenceTimeout = 1.0
    /// Seconds before a frame is due within which a video-only player's speed is left alone
    /// (mpv's 10.5 ms, and the frame clock's notification latency).
    public static let frameGuard = 0.012
    /// FFmpeg log lines kept for `libavLines(since:)`.
    public static let libavCapacity = 16

    public let configuration: Configuration
    /// What the player has relative to the room's media. Setting it keeps the stall tracker's
    /// "loading" in step.
    public internal(set) var media: Media = .roomMedia {
        didSet { stalls.loading = media.isLoading }
    }
    /// The person's own "wait for me" setting, kept while the player cannot play.
    public var waitForMeSetting = true
    /// The media has audio: audio-pts is the fine clock (else the frame clock). See `tracksProbed`.
    public internal(set) var hasAudio = false
    /// The scheduled instant the shell's current tick carries out orders for (nil otherwise):
    /// an unpause then is timed against it, and a speed change is made on it regardless of frames.
    public var transitionInstant: Double?
    /// How late after its scheduled instant the last unpause so ordered took effect (seconds).
    public internal(set) var startLateness: Double?
    /// When the room's last pause order (an `applied` with a paused timeline) arrived at the
    /// socket, and when the player's pause was last set: how soon a pause lands (`get_status`).
    public internal(set) var pauseTiming = PauseTiming()
    /// The seek held behind its fence, if any.
    public internal(set) var heldSeek: HeldSeek?
    /// Fences sent so far (each fence carries its number).
    public internal(set) var fences = 0

    var echoes = PlayerEchoTracker()
    var userSeeks = UserSeekCoalescer()
    var stalls: StallTracker
    var frameClock = FrameEventClock()
    /// mpv's log lines while loading, to say why a load failed.
    var loadLog = LoadFailureReason()
    /// FFmpeg's recent warnings and errors, whichever player caused them (libav's log is
    /// process-wide: a probe's HTTP status lands in this player's log).
    var libavLog: [(at: Double, line: LoadFailureReason.Line)] = []

    public init(configuration: Configuration) {
        self.configuration = configuration
        self.stalls = StallTracker(slowSeek: configuration.slowSeek)
    }

    // MARK: What the room is told

    /// Whether the group should wait for us: the person's setting, unless this player cannot
    /// play the room's media.
    public var waitForMe: Bool { waitForMeSetting && media.canPlay }

    /// Our stall to report now, if any (loading, buffering, a person's slow seek).
    public func stall(now: Double) -> StallReason? { stalls.stall(now: now) }

    /// True while a gesture of the person's seeking is under way (not yet a group seek).
    public var isUserSeeking: Bool { userSeeks.isActive }

    /// True from a seek's start until the player lands.
    public var isSeeking: Bool { stalls.seeking }

    // MARK: Reading the player

    /// How the shell reads a sample of the player for the coordinator.
    public struct Reading: Sendable, Hashable {
        /// Where the fine position comes from while the player moves.
        public enum Source: Sendable, Hashable {
            /// Read `audio-pts`.
            case audioPTS
            /// Ask `framePosition(at:)`.
            case frameClock
        }

        /// The player cannot follow now (no room media, loading, buffering): leave it alone.
        public var stalled: Bool
        /// A seek is in flight, a person's gesture not yet sent to the room, or a change of the
        /// person's read before mpv reported it: not drift to correct.
        public var seeking: Bool
        /// The fine clock to read; nil: read the shown frame (`time-pos`) only.
        public var source: Source?

        public init(stalled: Bool, seeking: Bool, source: Source?) {
            self.stalled = stalled
            self.seeking = seeking
            self.source = source
        }
    }

    /// What a sample read now means, given the player's `pause` and `speed` just read.
    /// Correcting a change of the person's read before its event would hide it for good.
    public func reading(paused: Bool, speed: Double) -> Reading {
        let stalled = !media.hasRoomMedia || stalls.buffering
        let seeking = stalls.seeking || userSeeks.isActive || !echoes.explains(paused: paused, speed: speed)
        let moving = !paused && !seeking && !stalled
        return Reading(stalled: stalled, seeking: seeking, source: moving ? (hasAudio ? .audioPTS : .frameClock) : nil)
    }

    /// The frame clock's smooth position at local time `at` (video without audio), if known.
    public func framePosition(at: Double) -> Double? { frameClock.position(at: at) }

    /// FFmpeg's log lines logged at or after `since` (oldest first).
    public func libavLines(since: Double) -> [LoadFailureReason.Line] {
        libavLog.filter { $0.at >= since }.map(\.line)
    }

    // MARK: Resets

    /// The shell read which tracks the (new) media has.
    public mutating func tracksProbed(hasAudio: Bool) {
        self.hasAudio = hasAudio
        frameClock.reset()
    }

    /// Forgets seeks in flight (a new file, or a session that ended): their events must not
    /// become group actions later. Our pause and speed orders are still recognised when mpv
    /// reports them (`PlayerEchoTracker.forgetSeeks`).
    public mutating func forgetSeeks() {
        heldSeek = nil
        userSeeks.reset()
        echoes.forgetSeeks()
        stalls.seekEnded()
    }
}
