import CowatchClient
import CowatchCore
import CowatchMpv
import Foundation

/// A player that behaves like libmpv as the daemon sees it — properties, `loadfile` with
/// playlist entry ids, seeks that land a little later, events in mpv's order — without decoding
/// anything, so the daemon's logic runs in unit tests.
///
/// Time is the real monotonic clock (the daemon reads it too); positions advance with it while
/// playing. `person…` methods stand in for someone at the player's keyboard: the same changes,
/// not made by the daemon.
///
/// Threading: any thread; state under a lock, events in order on one stream.
final class SimulatedPlayer: MediaPlayer {
    struct Source: Sendable {
        var duration = 600.0
        var hasAudio = true
        /// Log lines written when loading fails (nil: it loads).
        var failure: (code: Int32, log: [LoadFailureReason.Line])?
        /// Never answers (an unreachable host).
        var silent = false
    }

    private struct State {
        var sources: [String: Source] = [:]
        var loaded: Source?
        var paused = true
        var speed = 1.0
        var base = 0.0
        var baseAt = monotonicNow()
        var entry: Int64 = 0
        var osd: [String] = []
        var commands: [[String]] = []
        var ended = false
    }

    let events: AsyncStream<MpvEvent>
    private let continuation: AsyncStream<MpvEvent>.Continuation
    private let state = Locked(State())
    /// How long a seek takes to land.
    let seekLatency: Double

    init(sources: [String: Source] = [:], seekLatency: Double = 0.01) {
        (events, continuation) = AsyncStream.makeStream(of: MpvEvent.self)
        self.seekLatency = seekLatency
        state.withLock { $0.sources = sources }
    }

    // MARK: What tests look at and do

    /// Where the player is now.
    var position: Double { state.withLock { Self.position($0) } }
    var isPaused: Bool { state.withLock { $0.paused } }
    /// Every `show-text`, in order.
    var osdTexts: [String] { state.withLock { $0.osd } }
    /// Seeks the daemon ordered.
    var orderedSeeks: Int { state.withLock { $0.commands.filter { $0.first == "seek" }.count } }

    /// Someone presses space (or `p`) in the player's window.
    func personSetsPause(_ paused: Bool) {
        try? setFlag("pause", paused)
    }

    /// Someone drags the seek bar or presses an arrow key: a seek that lands like mpv's.
    func personSeeks(to target: Double) {
        try? command(["seek", String(target), "absolute"])
    }

    /// Someone runs `script-message ARGS…` in the player (a key binding, or mpv's console).
    func personSendsScriptMessage(_ arguments: [String]) {
        continuation.yield(.clientMessage(arguments))
    }

    // MARK: MediaPlayer

    var clientName: String { "main" }

    func command(_ arguments: [String]) throws(MpvError) {
        _ = try commandReturning(arguments)
    }

    func commandReturning(_ arguments: [String]) throws(MpvError) -> MpvNode {
        guard let name = arguments.first else { throw MpvError(code: -4, operation: "command") }
        state.withLock { $0.commands.append(arguments) }
        switch name {
        case "show-text":
            state.withLock { $0.osd.append(arguments.count > 1 ? arguments[1] : "") }
            return .none
        case "seek":
            guard arguments.count >= 2, let target = Double(arguments[1]) else { throw MpvError(code: -4, operation: "seek") }
            continuation.yield(.seek)
            let latency = seekLatency
            Task.detached { [weak self] in
                try? await Task.sleep(for: .seconds(latency))
                self?.land(at: target)
            }
            return .none
        case "script-message-to":
            // Addressed to us: it comes back behind every event yielded before it, as mpv's does.
            if arguments.count >= 2, arguments[1] == clientName { continuation.yield(.clientMessage(Array(arguments.dropFirst(2)))) }
            return .none
        case "loadfile":
            guard arguments.count >= 2 else { throw MpvError(code: -4, operation: "loadfile") }
            return load(arguments[1])
        default:
            return .none
        }
    }

    func setString(_ name: String, _ value: String) throws(MpvError) {}

    func setDouble(_ name: String, _ value: Double) throws(MpvError) {
        guard name == "speed" else { return }
        let changed = state.withLock { state -> Bool in
            guard state.speed != value else { return false }
            Self.rebase(&state)
            state.speed = value
            return true
        }
        if changed { continuation.yield(.propertyChange(name: "speed", value: .double(value), at: monotonicNow())) }
    }

    func setFlag(_ name: String, _ value: Bool) throws(MpvError) {
        guard name == "pause" else { return }
        let changed = state.withLock { state -> Bool in
            guard state.paused != value else { return false }
            Self.rebase(&state)
            state.paused = value
            return true
        }
        if changed { continuation.yield(.propertyChange(name: "pause", value: .flag(value), at: monotonicNow())) }
    }

    func getDouble(_ name: String) throws(MpvError) -> Double {
        let (loaded, position, speed) = state.withLock { ($0.loaded, Self.position($0), $0.speed) }
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

    func getFlag(_ name: String) throws(MpvError) -> Bool {
        switch name {
        case "pause": return state.withLock { $0.paused }
        case "eof-reached", "paused-for-cache": return false
        default: throw MpvError(code: -8, operation: "get_property \(name)")
        }
    }

    func getString(_ name: String) throws(MpvError) -> String {
        guard name == "media-title" else { throw MpvError(code: -8, operation: "get_property \(name)") }
        return "simulated"
    }

    func getNode(_ name: String) throws(MpvError) -> MpvNode {
        let loaded = state.withLock { $0.loaded }
        switch name {
        case "current-tracks/audio": return loaded?.hasAudio == true ? .map(["id": .int64(1)]) : .none
        case "current-tracks/video": return loaded != nil ? .map(["id": .int64(1)]) : .none
        default: return .none
        }
    }

    func observe(_ name: String) throws(MpvError) {}

    func shutdown() async {
        let first = state.withLock { state -> Bool in
            defer { state.ended = true }
            return !state.ended
        }
        if first {
            continuation.yield(.shutdown)
            continuation.finish()
        }
    }

    // MARK: Inside

    private func load(_ url: String) -> MpvNode {
        let (entry, source) = state.withLock { state -> (Int64, Source?) in
            state.entry += 1
            return (state.entry, state.sources[url])
        }
        let latency = seekLatency
        Task.detached { [weak self] in
            guard let self else { return }
            continuation.yield(.startFile(entry: entry))
            try? await Task.sleep(for: .seconds(latency))
            let source = source ?? Source()
            if source.silent { return }
            if let failure = source.failure {
                for line in failure.log {
                    continuation.yield(.log(level: line.level, prefix: line.prefix, text: line.text))
                }
                continuation.yield(.endFile(
                    reason: .error, error: MpvError(code: failure.code, operation: "loadfile"), entry: entry))
                return
            }
            state.withLock { state in
                state.loaded = source
                state.base = 0
                state.baseAt = monotonicNow()
            }
            continuation.yield(.fileLoaded)
            continuation.yield(.playbackRestart)
        }
        return .map(["playlist_entry_id": .int64(entry)])
    }

    private func land(at target: Double) {
        state.withLock { state in
            state.base = max(0, min(target, state.loaded?.duration ?? target))
            state.baseAt = monotonicNow()
        }
        continuation.yield(.playbackRestart)
    }

    private static func position(_ state: State) -> Double {
        guard !state.paused else { return state.base }
        return state.base + (monotonicNow() - state.baseAt) * state.speed
    }

    private static func rebase(_ state: inout State) {
        state.base = position(state)
        state.baseAt = monotonicNow()
    }
}
