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
        case getPlaylist = "get_playlist"
        case playlistAdd = "playlist_add"
        case playlistInsert = "playlist_insert"
        case playlistReplace = "playlist_replace"
        case playlistRemove = "playlist_remove"
        case playlistMove = "playlist_move"
        case playlistJump = "playlist_jump"
        case playlistNext = "playlist_next"
        case playlistPrev = "playlist_prev"
        case playlistClear = "playlist_clear"
        case playlistUndo = "playlist_undo"
        case playlistRepeat = "playlist_repeat"
        case playlistShuffle = "playlist_shuffle"
        case playlistEditing = "playlist_editing"
        case playlistCountdown = "playlist_countdown"
        case playlistPick = "playlist_pick"
        case share
        case unshare
        case getShares = "get_shares"
        case manage
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
