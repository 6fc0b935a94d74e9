extension ControlCommand {
    /// The one list of the control protocol's command names, as on the wire (`names`, the
    /// parser, the daemon's routes, the CLI and the tests all derive theirs from it).
    ///
    /// Threading: a value type, safe to share.
    public enum Name: String, Sendable, Hashable, CaseIterable {
        case play
        case pause
        case togglePause = "toggle_pause"
        case seek
        case speed
        case getStatus = "get_status"
        case getProperty = "get_property"
        case getParticipants = "get_participants"
        case leave
        case join
        case end
        case open
        case ready
        case unready
        case waitForMe = "wait_for_me"
        case op
        case deop
        case kick
        case acceptOpen = "accept_open"
        case getInvite = "get_invite"
        case chat
        case getChat = "get_chat"
        case sendMessage = "send_message"
        case showRoom = "show_room"
        case attach
        case getAttachments = "get_attachments"
        case detach
        case fetch
        case quit

        /// Other spellings accepted for mpv's sake.
        public static let aliases: [String: Name] = ["cycle_pause": .togglePause, "set_speed": .speed]

        /// The name for `wireName` or one of its aliases; nil for a name the daemon does not know.
        public init?(wireName: String) {
            guard let name = Name(rawValue: wireName) ?? Self.aliases[wireName] else { return nil }
            self = name
        }
    }
}
