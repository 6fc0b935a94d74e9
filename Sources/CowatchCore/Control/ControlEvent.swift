/// An event line of the control socket: `{"event": "name", …fields}`, sent to every connected
/// client. One case per event the daemon sends; `ControlEvent+Codec.swift` is the one place that
/// writes and reads them.
///
/// A client of an older version reads an event name it does not know as `.unknown`, so it
/// keeps working against a newer daemon.
///
/// Threading: a value type, safe to share.
public enum ControlEvent: Sendable, Hashable {
    /// Paused, speed or position changed, or a seek finished: the `get_status` fields (without
    /// the room sections).
    case state(PlayerStatus)
    /// Playback reached the end of the media and holds there (at `position`, when known).
    case endOfFile(position: Double?)
    /// Something went wrong that no request caused.
    case error(CowatchError)
    /// Someone in the room did something; the wire form adds the notice's `text`.
    case notice(Notice)
    /// This daemon's room session changed.
    case session(SessionState)
    /// Under `--accept-open ask`: someone switched the room to new media, which this daemon
    /// opens only after `accept_open`.
    case openOffer(OpenOffer)
    /// (1.3) A chat line (`history`: sent before this daemon joined). The line's `id` is not sent.
    case chat(ChatLine)
    /// (1.3) A messenger message for us.
    case message(ReceivedMessage)
    /// (1.5) An attachment is in the room (`history`: it was there before this daemon joined).
    case attachmentAdded(Attachment, history: Bool)
    /// (1.5) An attachment was removed for everyone.
    case attachmentRemoved(AttachmentRemoval)
    /// (1.5) A transfer of ours moved on.
    case attachmentProgress(TransferProgress)
    /// (1.7) The room's playlist changed (or arrived after a join): the list as it is now, and
    /// the sentence saying what changed and who did it.
    case playlist(PlaylistEvent)
    /// An event this version does not know (or a notice with an action it does not know), as
    /// it arrived: its name and its other fields.
    case unknown(name: String, fields: [String: JSONValue])

    /// The event names of the control protocol, as on the wire.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case state
        case endOfFile = "end-of-file"
        case error
        case notice
        case session
        case openOffer = "open-offer"
        case chat
        case message
        case attachmentAdded = "attachment-added"
        case attachmentRemoved = "attachment-removed"
        case attachmentProgress = "attachment-progress"
        case playlist
    }

    /// The kind of a known event; nil for `.unknown`.
    public var kind: Kind? {
        switch self {
        case .state: .state
        case .endOfFile: .endOfFile
        case .error: .error
        case .notice: .notice
        case .session: .session
        case .openOffer: .openOffer
        case .chat: .chat
        case .message: .message
        case .attachmentAdded: .attachmentAdded
        case .attachmentRemoved: .attachmentRemoved
        case .attachmentProgress: .attachmentProgress
        case .playlist: .playlist
        case .unknown: nil
        }
    }

    /// The name on the wire (`event`).
    public var name: String {
        if case .unknown(let name, _) = self { return name }
        return kind?.rawValue ?? ""
    }

    /// The fields on the wire, without `event` (for tests and tools that look at one field).
    public var fields: [String: JSONValue] {
        var object = json.objectValue ?? [:]
        object["event"] = nil
        return object
    }
}
