import CMpv

/// Why a file stopped playing (`mpv_end_file_reason`).
public enum MpvEndFileReason: Sendable, Hashable {
    case eof, stop, quit, error, redirect, other(Int32)

    init(_ raw: mpv_end_file_reason) {
        switch raw {
        case MPV_END_FILE_REASON_EOF: self = .eof
        case MPV_END_FILE_REASON_STOP: self = .stop
        case MPV_END_FILE_REASON_QUIT: self = .quit
        case MPV_END_FILE_REASON_ERROR: self = .error
        case MPV_END_FILE_REASON_REDIRECT: self = .redirect
        default: self = .other(Int32(bitPattern: raw.rawValue))
        }
    }
}

/// An event from the player, converted on the event thread.
public enum MpvEvent: Sendable, Hashable {
    /// An observed property changed; `value` is nil when it became unavailable. `at` is when the
    /// event thread received it (CLOCK_MONOTONIC seconds): for `time-pos` that is, within mpv's
    /// notification latency, when a new frame was shown.
    case propertyChange(name: String, value: MpvNode?, at: Double)
    /// A file started loading; `entry` is its playlist entry id (what `loadfile` returned).
    case startFile(entry: Int64)
    /// The file is loaded and playback (or the paused first frame) is about to start.
    case fileLoaded
    /// A file ended; `error` is set when it ended because it could not be played.
    case endFile(reason: MpvEndFileReason, error: MpvError?, entry: Int64)
    /// A seek started.
    case seek
    /// Playback (re)started after a seek or a load: the new position is valid.
    case playbackRestart
    /// A log line mpv wanted us to see (level `warn` and worse).
    case log(level: String, prefix: String, text: String)
    /// `script-message` (a key binding, mpv's console, a script): its arguments.
    case clientMessage([String])
    /// The player is shutting down (the user quit or `quit` was sent). No events follow.
    case shutdown
}
