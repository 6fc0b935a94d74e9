import CowatchCore
import CowatchMpv
import Foundation

/// A player that behaves like libmpv as the daemon sees it — properties, `loadfile` with
/// playlist entry ids, seeks that land a little later, events in mpv's order — without decoding
/// anything, so the daemon's logic runs in unit tests.
///
/// Time is the clock it is given — the daemon's own (a `ManualClock` in tests that move time
/// themselves, `SystemClock` otherwise); positions advance with it while playing, and seeks and
/// loads land `seekLatency` later on it. `person…` methods stand in for someone at the player's keyboard: the same changes,
/// not made by the daemon.
///
/// The room session drives it through `RoomPlayer`, with typed calls
/// (SimulatedPlayer+RoomPlayer.swift); `PlayerController` through `MediaPlayer`, whose
/// commands and properties it understands as far as the controller uses them.
///
/// Threading: any thread; state under a lock, events in order on one stream.
public final class SimulatedPlayer: MediaPlayer {
    public struct Source: Sendable {
        public var duration = 600.0
        public var hasAudio = true
        /// Log lines written when loading fails (nil: it loads).
        public var failure: (code: Int32, log: [LoadFailureReason.Line])?
        /// Never answers (an unreachable host).
        public var silent = false

        public init(
            duration: Double = 600, hasAudio: Bool = true, failure: (code: Int32, log: [LoadFailureReason.Line])? = nil,
            silent: Bool = false
        ) {
            self.duration = duration
            self.hasAudio = hasAudio
            self.failure = failure
            self.silent = silent
        }
    }

    struct State {
        var sources: [String: Source] = [:]
        var loaded: Source?
        var paused = true
        var speed = 1.0
        var base = 0.0
        var baseAt = 0.0
        var entry: Int64 = 0
        var osd: [String] = []
        var listed: PlaylistMirror?
        var seeks = 0
        var ended = false
        var eventsSent = 0
    }

    public let events: AsyncStream<MpvEvent>
    private let continuation: AsyncStream<MpvEvent>.Continuation
    let state = Locked(State())
    /// How long a seek takes to land.
    public let seekLatency: Double
    /// The daemon's clock: positions move with it.
    public let clock: any MonotonicClock

    public init(sources: [String: Source] = [:], seekLatency: Double = 0.01, clock: any MonotonicClock = SystemClock()) {
        (events, continuation) = AsyncStream.makeStream(of: MpvEvent.self)
        self.seekLatency = seekLatency
        self.clock = clock
        let now = clock.now()
        state.withLock {
            $0.sources = sources
            $0.baseAt = now
        }
    }

    // MARK: What tests look at and do

    /// Where the player is now.
    public var position: Double {
        let now = clock.now()
        return state.withLock { Self.position($0, now: now) }
    }
    public var isPaused: Bool { state.withLock { $0.paused } }
    /// Every text shown on the OSD, in order.
    public var osdTexts: [String] { state.withLock { $0.osd } }
    /// What the player's own playlist lists (`listPlaylist`), if anything was listed.
    public var listedPlaylist: PlaylistMirror? { state.withLock { $0.listed } }
    /// Every event this player has sent, for a test waiting until the daemon has taken them in.
    public var eventsSent: Int { state.withLock { $0.eventsSent } }
    /// Seeks the daemon ordered (and the person's, `personSeeks`).
    public var orderedSeeks: Int { state.withLock { $0.seeks } }

    /// Someone presses space (or `p`) in the player's window.
    public func personSetsPause(_ paused: Bool) {
        changePause(paused)
    }

    /// Someone drags the seek bar or presses an arrow key: a seek that lands like mpv's.
    public func personSeeks(to target: Double) {
        startSeek(to: target)
    }

    /// Someone runs `script-message ARGS…` in the player (a key binding, or mpv's console).
    public func personSendsScriptMessage(_ arguments: [String]) {
        send(.clientMessage(arguments))
    }

    // MARK: MediaPlayer

    public var clientName: String { "main" }

    public func command(_ arguments: [String]) throws(MpvError) {
        _ = try commandReturning(arguments)
    }

    public func commandReturning(_ arguments: [String]) throws(MpvError) -> MpvNode {
        guard let name = arguments.first else { throw MpvError(code: -4, operation: "command") }
        switch name {
        case "show-text":
            showOSD(arguments.count > 1 ? arguments[1] : "")
            return .none
        case "seek":
            guard arguments.count >= 2, let target = Double(arguments[1]) else { throw MpvError(code: -4, operation: "seek") }
            startSeek(to: target)
            return .none
        case "script-message-to":
            // Addressed to us: it comes back behind every event yielded before it, as mpv's does.
            if arguments.count >= 2, arguments[1] == clientName { send(.clientMessage(Array(arguments.dropFirst(2)))) }
            return .none
        case "loadfile":
            guard arguments.count >= 2 else { throw MpvError(code: -4, operation: "loadfile") }
            return .map(["playlist_entry_id": .int64(startLoad(arguments[1]))])
        default:
            return .none
        }
    }

    public func setString(_ name: String, _ value: String) throws(MpvError) {}

    public func setDouble(_ name: String, _ value: Double) throws(MpvError) {
        guard name == "speed" else { return }
        changeSpeed(value)
    }

    public func setFlag(_ name: String, _ value: Bool) throws(MpvError) {
        guard name == "pause" else { return }
        changePause(value)
    }

    public func getDouble(_ name: String) throws(MpvError) -> Double {
        let now = clock.now()
        let (loaded, position, speed) = state.withLock { ($0.loaded, Self.position($0, now: now), $0.speed) }
        switch name {
        case "speed": return speed
        case "time-pos", "audio-pts", "playback-time":
            guard loaded != nil else { throw MpvError(code: -10, operation: "get_property \(name)") }
            return position
        case "duration":
            guard let loaded else { throw MpvError(code: -10, operation: "get_property duration") }
            return loaded.duration
        default: throw MpvError(code: -8, operation: "get_property \(name)")
        }
    }

    public func getFlag(_ name: String) throws(MpvError) -> Bool {
        switch name {
        case "pause": return state.withLock { $0.paused }
        case "eof-reached", "paused-for-cache": return false
        default: throw MpvError(code: -8, operation: "get_property \(name)")
        }
    }

    public func getString(_ name: String) throws(MpvError) -> String {
        guard name == "media-title" else { throw MpvError(code: -8, operation: "get_property \(name)") }
        return Self.title
    }

    public func getNode(_ name: String) throws(MpvError) -> MpvNode {
        let loaded = state.withLock { $0.loaded }
        switch name {
        case "current-tracks/audio": return loaded?.hasAudio == true ? .map(["id": .int64(1)]) : .none
        case "current-tracks/video": return loaded != nil ? .map(["id": .int64(1)]) : .none
        default: return .none
        }
    }

    public func observe(_ name: String) throws(MpvError) {}

    public func shutdown() async {
        let first = state.withLock { state -> Bool in
            defer { state.ended = true }
            return !state.ended
        }
        if first {
            send(.shutdown)
            continuation.finish()
        }
    }

    // MARK: Inside (both faces)

    /// Every file's title.
    static let title = "simulated"

    func changeSpeed(_ value: Double) {
        let now = clock.now()
        let changed = state.withLock { state -> Bool in
            guard state.speed != value else { return false }
            Self.rebase(&state, now: now)
            state.speed = value
            return true
        }
        if changed { send(.propertyChange(name: "speed", value: .double(value), at: now)) }
    }

    func changePause(_ value: Bool) {
        let now = clock.now()
        let changed = state.withLock { state -> Bool in
            guard state.paused != value else { return false }
            Self.rebase(&state, now: now)
            state.paused = value
            return true
        }
        if changed { send(.propertyChange(name: "pause", value: .flag(value), at: now)) }
    }

    func showOSD(_ text: String) {
        state.withLock { $0.osd.append(text) }
    }

    /// Records what the player's own playlist lists (a load clears it: `startLoad`).
    func listPlaylist(_ mirror: PlaylistMirror?) {
        state.withLock { $0.listed = mirror }
    }

    /// A seek as mpv does it: `seek` now, the landing (`playback-restart`) `seekLatency` later.
    func startSeek(to target: Double) {
        state.withLock { $0.seeks += 1 }
        send(.seek)
        let latency = seekLatency
        let clock = clock
        Task.detached { [weak self] in
            try? await clock.sleep(seconds: latency)
            self?.land(at: target)
        }
    }

    /// The position now; nil with no file loaded.
    var loadedPosition: Double? {
        let now = clock.now()
        return state.withLock { $0.loaded == nil ? nil : Self.position($0, now: now) }
    }

    func send(_ event: MpvEvent) {
        state.withLock { $0.eventsSent += 1 }
        continuation.yield(event)
    }

    /// A `loadfile … replace`: its playlist entry id now, its events from a task.
    func startLoad(_ url: String) -> Int64 {
        let (entry, source) = state.withLock { state -> (Int64, Source?) in
            state.entry += 1
            state.listed = nil  // as mpv's `loadfile … replace`: the one file is the list
            return (state.entry, state.sources[url])
        }
        let latency = seekLatency
        Task.detached { [weak self] in
            guard let self else { return }
            send(.startFile(entry: entry))
            try? await clock.sleep(seconds: latency)
            let source = source ?? Source()
            if source.silent { return }
            if let failure = source.failure {
                for line in failure.log {
                    send(.log(level: line.level, prefix: line.prefix, text: line.text))
                }
                send(.endFile(
                    reason: .error, error: MpvError(code: failure.code, operation: "loadfile"), entry: entry))
                return
            }
            let now = clock.now()
            state.withLock { state in
                state.loaded = source
                state.base = 0
                state.baseAt = now
            }
            send(.fileLoaded)
            send(.playbackRestart)
        }
        return entry
    }

    private func land(at target: Double) {
        let now = clock.now()
        state.withLock { state in
            state.base = max(0, min(target, state.loaded?.duration ?? target))
            state.baseAt = now
        }
        send(.playbackRestart)
    }

    private static func position(_ state: State, now: Double) -> Double {
        guard !state.paused else { return state.base }
        return state.base + (now - state.baseAt) * state.speed
    }

    private static func rebase(_ state: inout State, now: Double) {
        state.base = position(state, now: now)
        state.baseAt = now
    }
}
