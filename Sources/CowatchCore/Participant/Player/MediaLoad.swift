/// Opening one piece of media in the player, with a fallback and a deadline, as a state machine.
///
/// Used for the daemon's own media at start-up and for every switch the room orders. The shell
/// carries out `Action`s (issue `loadfile`, report) and feeds back what mpv says; a load is
/// finished at the first frame (playback restart after file-loaded), failed at an `end-file`
/// error, a refused `loadfile`, or when `deadline` passes without a frame (a source that never
/// answers fails like one that refuses). The fallback, if any, is tried once.
///
/// Threading: a value type; one owner.
public struct MediaLoad: Sendable, Hashable {
    public enum Action: Sendable, Hashable {
        /// Issue `loadfile url replace`; report a refusal with `loadRefused`.
        case load(url: String)
        /// The first URL failed for this reason; the fallback is being tried.
        case tryingFallback(after: CowatchError, fallback: String)
        /// Done: the player shows the first frame of `url`.
        case finished(url: String)
        /// Nothing could be opened (the fallback's failure names both).
        case failed(CowatchError)
    }

    public let url: String
    public let fallback: String?
    /// Seconds each attempt may take.
    public let timeout: Double
    public private(set) var current: String
    /// When the attempt under way fails by timeout; nil once finished or failed.
    public private(set) var deadline: Double?
    private var fileLoaded = false
    private var firstFailure: CowatchError?

    /// `fallback` is dropped when equal to `url` (or when the caller's policy refuses it).
    public init(url: String, fallback: String?, timeout: Double) {
        self.url = url
        self.fallback = fallback == url ? nil : fallback
        self.timeout = timeout
        self.current = url
    }

    /// True until finished or failed.
    public var isUnderWay: Bool { deadline != nil }

    public mutating func start(now: Double) -> [Action] {
        attempt(url, now: now)
    }

    /// mpv refused the `loadfile` itself (`reason` is its wording).
    public mutating func loadRefused(_ reason: String, now: Double) -> [Action] {
        failAttempt(CowatchError(.mediaUnavailable, "cannot open \(current): \(reason)"), now: now)
    }

    /// FILE_LOADED for the file under way.
    public mutating func fileWasLoaded() {
        if isUnderWay { fileLoaded = true }
    }

    /// PLAYBACK_RESTART for the file under way.
    public mutating func playbackRestarted() -> [Action] {
        guard isUnderWay, fileLoaded else { return [] }
        deadline = nil
        return [.finished(url: current)]
    }

    /// END_FILE with an error for the file under way, explained (see `LoadFailureReason`).
    public mutating func endedWithError(_ error: CowatchError, now: Double) -> [Action] {
        guard isUnderWay else { return [] }
        return failAttempt(error, now: now)
    }

    /// The player went away while loading.
    public mutating func playerGone() -> [Action] {
        guard isUnderWay else { return [] }
        deadline = nil
        return [.failed(CowatchError(.mediaUnavailable, "the player quit while opening \(current)"))]
    }

    /// Call when `deadline` passes.
    public mutating func tick(now: Double) -> [Action] {
        guard let deadline, now >= deadline else { return [] }
        return failAttempt(
            CowatchError(.timeout, "cannot open \(current): no answer within \(Int(timeout.rounded())) s"), now: now)
    }

    private mutating func attempt(_ url: String, now: Double) -> [Action] {
        current = url
        fileLoaded = false
        deadline = now + timeout
        return [.load(url: url)]
    }

    private mutating func failAttempt(_ error: CowatchError, now: Double) -> [Action] {
        if firstFailure == nil, let fallback {
            firstFailure = error
            return [.tryingFallback(after: error, fallback: fallback)] + attempt(fallback, now: now)
        }
        deadline = nil
        guard let first = firstFailure else { return [.failed(error)] }
        return [.failed(CowatchError(error.code, "\(first.message); the fallback failed too: \(error.message)"))]
    }
}
