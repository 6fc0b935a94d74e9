import CowatchMpv

/// Keys the daemon adds to the mpv window, and the `script-message`s behind them:
/// - `c` opens the chat line (`ChatInputScript`): write, press Enter, and the line goes to the
///   room's chat; Esc closes it;
/// - `Alt+o` shows the room line (who is here, who is not ready, whom the group waits for);
/// - `>` and `<` (and Enter, and the media keys), mpv's next and previous, are the room's: the
///   group moves to the playlist's next or previous entry (mpv's own list only mirrors it).
///
/// The section is mpv's "default" kind, so a person's own input.conf wins; they can bind any
/// key there to `script-message cowatch-chat WORDS…` or `script-message cowatch-room`.
///
/// Threading: `install` calls the player (thread-safe); call it once after the player starts.
enum WindowBindings {
    static let chatMessage = "cowatch-chat"
    static let roomMessage = "cowatch-room"
    static let playlistMessage = "cowatch-playlist"
    static let section = "cowatch"

    /// The bindings in input.conf's syntax.
    static let bindings = """
        c script-message \(ChatInputScript.openMessage)
        Alt+o script-message \(roomMessage)
        > script-message \(playlistMessage) next
        < script-message \(playlistMessage) prev
        ENTER script-message \(playlistMessage) next
        NEXT script-message \(playlistMessage) next
        PREV script-message \(playlistMessage) prev
        """

    /// Adds and enables the section. A player without the commands (or without the chat script)
    /// keeps working: the script messages still reach us from input.conf.
    static func install(on player: any MediaPlayer) {
        try? player.command(["define-section", section, bindings, "default"])
        try? player.command(["enable-section", section])
    }
}
