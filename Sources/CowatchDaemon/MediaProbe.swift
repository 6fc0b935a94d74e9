import CowatchCore
import CowatchNet
import CowatchMpv
import Logging

/// Tries whether media opens, in a throwaway headless player, before a participant switches
/// the whole room to it: a URL nobody can load must not leave the room at `--:--`.
///
/// The probe player has no video or audio output and carries over only the options that decide
/// whether a network source opens (youtube-dl, HTTP headers, TLS, timeouts). It loads `url`
/// with `MediaLoad` (deadline) and explains a failure with `LoadFailureReason`, like the
/// daemon's own loads; it is shut down before `check` returns.
///
/// Threading: any task; each `check` has its own player.
struct MediaProbe: Sendable {
    /// Makes the probe's player (libmpv here; unit tests pass a simulated one).
    let makePlayer: @Sendable () throws -> any MediaPlayer
    /// The clock the probe's load deadline runs on.
    var clock: any MonotonicClock = SystemClock()

    /// mpv options that decide whether a network source opens; nothing else reaches the probe.
    static let networkOptions: Set<String> = [
        "ytdl", "ytdl-format", "ytdl-raw-options", "script-opts", "http-header-fields", "http-proxy", "user-agent",
        "referrer", "cookies", "cookies-file", "tls-verify", "tls-ca-file", "tls-cert-file", "tls-key-file",
        "network-timeout", "demuxer-lavf-o", "stream-lavf-o",
    ]

    /// A probe with libmpv, headless, carrying `options` that matter for opening sources.
    static func mpv(options: [DaemonConfiguration.MpvOption], logger: Logger) -> MediaProbe {
        MediaProbe {
            var settings: [(String, String)] = [("vo", "null"), ("ao", "null"), ("idle", "yes"), ("pause", "yes")]
            settings += options.filter { networkOptions.contains($0.name) }.map { ($0.name, $0.value) }
            return try MpvPlayer(options: settings, logger: logger)
        }
    }

    /// Nil when `url` opens within `timeout` seconds; else why not (`media-unavailable`,
    /// `timeout`). A probe player that cannot start says nothing against the media (nil).
    func check(_ url: String, timeout: Double) async -> CowatchError? {
        guard let player = try? makePlayer() else { return nil }
        let outcome = Reply<CowatchError?>()
        let watcher = Task {
            var load = MediaLoad(url: url, fallback: nil, timeout: timeout)
            var log = LoadFailureReason()
            _ = load.start(now: clock.now())
            do throws(MpvError) {
                _ = try player.loadGuarded(url)
            } catch {
                outcome.resume(CowatchError(.mediaUnavailable, "cannot open \(url): \(error.reason)"))
                return
            }
            for await event in player.events {
                var actions: [MediaLoad.Action] = []
                switch event {
                case .log(let level, let prefix, let text):
                    log.logged(.init(level: level, prefix: prefix, text: text))
                case .fileLoaded:
                    load.fileWasLoaded()
                case .playbackRestart:
                    actions = load.playbackRestarted()
                case .endFile(.error, let error, _):
                    actions = load.endedWithError(
                        log.explain(url: url, mpvReason: error?.reason, failedOutput: error?.failedOutput),
                        now: clock.now())
                case .shutdown:
                    actions = load.playerGone()
                default:
                    break
                }
                for action in actions {
                    switch action {
                    case .finished: outcome.resume(nil)
                    case .failed(let error): outcome.resume(error)
                    case .load, .tryingFallback: break
                    }
                }
                if outcome.isResolved { return }
            }
        }
        let result = await outcome.wait(
            timeout: timeout, orElse: CowatchError(.timeout, "cannot open \(url): no answer within \(Int(timeout.rounded())) s"))
        await player.shutdown()
        watcher.cancel()
        return result
    }
}
