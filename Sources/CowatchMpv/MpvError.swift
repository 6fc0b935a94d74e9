import CMpv

/// A failure reported by libmpv: the `mpv_error` code, mpv's own wording, and what we were doing.
///
/// Threading: a value type, safe to share.
public struct MpvError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The raw `mpv_error` value (negative).
    public var code: Int32
    /// What the call was, e.g. `set_property speed`.
    public var operation: String

    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// mpv's text for the code, e.g. "property unavailable".
    public var reason: String { String(cString: mpv_error_string(code)) }

    /// True for the codes that mean "no such property" or "no value now".
    public var isPropertyUnavailable: Bool {
        code == MPV_ERROR_PROPERTY_UNAVAILABLE.rawValue || code == MPV_ERROR_PROPERTY_NOT_FOUND.rawValue
    }

    /// "audio" or "video" when the code says that output could not start (the media may be fine).
    public var failedOutput: String? {
        switch code {
        case MPV_ERROR_AO_INIT_FAILED.rawValue: "audio"
        case MPV_ERROR_VO_INIT_FAILED.rawValue: "video"
        default: nil
        }
    }

    public var description: String { "\(operation): \(reason)" }

    /// Throws when `status` is an mpv error code (negative).
    @inline(__always)
    static func check(_ status: Int32, _ operation: @autoclosure () -> String) throws(MpvError) {
        if status < 0 { throw MpvError(code: status, operation: operation()) }
    }
}
