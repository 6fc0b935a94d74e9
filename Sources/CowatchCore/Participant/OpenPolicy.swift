/// What a room may make this player open: the daemon's `--allow-scheme`, `--accept-open` and
/// `--trust-host`.
///
/// A room switches everyone's media with `open`. The server already refuses local paths and
/// `file:`; this is the player's own, second check, so that a server (or a member of a room
/// this viewer does not control) cannot make the player read local files, mpv's internal sources
/// (`av://`, `edl://`, `fd://`, …) or any scheme the viewer did not allow. Only `open`s are
/// judged (activities with id > 0): the room's first media is each participant's own `--media`.
///
/// The rule, in order: a URL whose scheme is not allowed is refused (even this participant's
/// own); this participant's own switch is followed; then by `accept`: `anyone` follows every
/// switch, `ask` offers every switch, `operators` follows the owner's and operators' and refuses
/// the others', and `trusted` (the default) follows the owner's and operators' and a member's
/// only when every URL it would load (the URL, and the fallback it may fall back to) has a host
/// in `trustedHosts`; it offers the member's other switches (`open-offer`, `cowatch accept`).
///
/// Threading: a value type; pure.
public struct OpenPolicy: Sendable, Hashable {
    /// Whose switches this player follows by itself.
    public enum Accept: String, Sendable, Hashable, CaseIterable {
        /// Offer every switch (an `open-offer` event and an OSD line) and open it only after
        /// `accept_open`; meanwhile stay on the current media.
        case ask
        /// Follow switches made by the room's owner and operators; refuse the others'.
        case operators
        /// Follow every switch, wherever its URL points (the server already limits who may
        /// switch and to what).
        case anyone
        /// Follow switches made by the room's owner and operators, and a member's switch to a
        /// trusted host (`--trust-host`); offer the member's other switches. The default: a
        /// stranger in an open room cannot send every player to a server of his own.
        case trusted
    }

    /// What to do with an activity the room switched to.
    public enum Decision: Sendable, Hashable {
        /// Open this URL (the activity's URL, or its fallback when only that one is allowed).
        case open(String)
        /// Offer this URL to the person; open it after `accept_open`.
        case ask(String)
        /// Do not open it; the error's code is `open-refused`.
        case refuse(CowatchError)
    }

    /// Schemes allowed when none are configured.
    public static let defaultSchemes = ["http", "https"]
    /// Schemes that name local files or mpv's internal sources: never allowed for a room, even
    /// when configured (`--allow-scheme` refuses them).
    public static let localSchemes: Set<String> = [
        "file", "fd", "fdclose", "edl", "av", "lavfi", "memory", "hex", "null", "mf", "slice", "appending", "cdda",
        "dvd", "dvdnav", "bd", "bluray", "dvb", "v4l2", "tv", "pvr", "avdevice",
    ]

    /// Lowercase schemes, e.g. `["http", "https"]`.
    public var allowedSchemes: [String]
    public var accept: Accept
    /// Hosts whose URLs a member's switch may open at once under `trusted` (`--trust-host`).
    public var trustedHosts: [TrustedHost]

    public init(allowedSchemes: [String] = OpenPolicy.defaultSchemes, accept: Accept = .trusted, trustedHosts: [TrustedHost] = []) {
        self.allowedSchemes = allowedSchemes.map { $0.lowercased() }
        self.accept = accept
        self.trustedHosts = trustedHosts
    }

    /// True when `url`'s host (read without doubt: see `TrustedHost.of(url:)`) is one of
    /// `trustedHosts` or a subdomain of a trusted name.
    public func trusts(_ url: String) -> Bool {
        guard let host = TrustedHost.of(url: url) else { return false }
        return trustedHosts.contains { $0.covers(host) }
    }

    /// Checks one `--allow-scheme` value and returns it lowercased (a trailing `:` or `://` is
    /// dropped). Errors: `invalid-configuration` for a malformed scheme or a local one.
    public static func validateScheme(_ text: String) throws(CowatchError) -> String {
        var scheme = Substring(text.lowercased())
        if scheme.hasSuffix("://") { scheme = scheme.dropLast(3) } else if scheme.hasSuffix(":") { scheme = scheme.dropLast() }
        guard let first = scheme.first, first.isASCII, first.isLetter, scheme.count <= 32,
            scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+.-".contains($0)) })
        else {
            throw CowatchError(.invalidConfiguration, "allow-scheme \"\(text.prefix(40))\" is not a URL scheme such as https")
        }
        guard !localSchemes.contains(String(scheme)) else {
            throw CowatchError(
                .invalidConfiguration, "allow-scheme \(scheme): a room never makes this player open local files or mpv's internal sources")
        }
        return String(scheme)
    }

    /// The scheme of `scheme://…`, lowercased; nil for anything else (a path, `file:x`, `C:\…`).
    public static func networkScheme(of url: String) -> String? {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return nil }
        let scheme = url[..<colon].lowercased()
        guard let first = scheme.first, first.isASCII, first.isLetter,
            scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+.-".contains($0)) })
        else { return nil }
        return scheme
    }

    /// True when the room may make this player open `url`: a network URL of an allowed scheme.
    public func allows(_ url: String) -> Bool {
        guard let scheme = Self.networkScheme(of: url), !Self.localSchemes.contains(scheme) else { return false }
        return allowedSchemes.contains(scheme)
    }

    /// Why `url` is not allowed, in words (for the `open-refused` message).
    public func whyNot(_ url: String) -> String {
        guard let scheme = Self.networkScheme(of: url), !Self.localSchemes.contains(scheme) else {
            return "a room never makes this player open local files or mpv's internal sources"
        }
        return "\(scheme): is not among the schemes this player opens for the room (\(allowedSchemes.joined(separator: ", ")); --allow-scheme)"
    }

    /// Decides about `activity`, which the room switched to. `me` is this participant's name (its
    /// own switches are always followed); `participants` is the room's latest list (for the
    /// opener's role).
    public func decide(_ activity: Activity, me: String, participants: [ParticipantInfo]) -> Decision {
        let candidates = [activity.url] + (activity.fallbackURL.map { [$0] } ?? [])
        guard let url = candidates.first(where: allows) else {
            return .refuse(CowatchError(.openRefused, "not opening \(Self.shown(activity.url)): \(whyNot(activity.url))"))
        }
        let opener = activity.openedBy
        if opener == me { return .open(url) }
        let privileged = participants.first { $0.name == opener }?.role.isPrivileged == true
        switch accept {
        case .anyone:
            return .open(url)
        case .ask:
            return .ask(url)
        case .trusted:
            if privileged { return .open(url) }
            // Every URL the player may load for it: the fallback too, when the URL fails.
            let fallback = url == activity.url ? activity.fallbackURL.flatMap { allows($0) ? $0 : nil } : nil
            return ([url] + (fallback.map { [$0] } ?? [])).allSatisfy(trusts) ? .open(url) : .ask(url)
        case .operators:
            if privileged { return .open(url) }
            return .refuse(CowatchError(
                .openRefused,
                "not opening \(Self.shown(activity.url)): \(opener ?? "someone") is not the room's owner or an operator (--accept-open operators)"))
        }
    }

    /// A URL as shown in messages: at most 200 characters.
    static func shown(_ url: String) -> String {
        url.count > 200 ? String(url.prefix(200)) + "…" : url
    }
}
