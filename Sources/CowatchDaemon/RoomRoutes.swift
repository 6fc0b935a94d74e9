import CowatchCore

/// What a command carried out by the room session answers with.
enum RoomAnswer: Sendable {
    /// The status, with the room sections.
    case status
    /// A group action's reply: the group's state as the action left it, with the room sections.
    case groupStatus
    /// Data of its own.
    case data(JSONValue)
}

/// How one control command reaches the room session.
///
/// Threading: `run` is called from `PlayerController`'s actor and awaits the `RoomSession` actor.
/// Errors: whatever the room method throws (`CowatchError`).
struct RoomRoute: Sendable {
    /// Playback commands: after `leave`, they act on this player alone instead.
    var onlyWhileFollowing = false
    /// Carries the command out; `timeout` is the daemon's `seekTimeout`.
    var run: @Sendable (_ room: RoomSession, _ timeout: Double) async throws(CowatchError) -> RoomAnswer
}

extension ControlCommand {
    /// The router table of the room: for each command the room carries out, its one entry;
    /// nil for those only the player does (`get_property`, `quit`). Outside a room, a command
    /// with a route that the player cannot do alone answers `not-in-room`.
    var roomRoute: RoomRoute? {
        switch self {
        case .play, .pause, .togglePause, .seek, .speed:
            RoomRoute(onlyWhileFollowing: true) { room, timeout throws(CowatchError) in
                try await room.request(self, seekTimeout: timeout)
                return .groupStatus
            }
        case .open:
            // Waits for the server to accept the switch, not for everyone to load it.
            .status { room, timeout throws(CowatchError) in try await room.request(self, seekTimeout: timeout) }
        case .getStatus: .status { _, _ in }
        case .getParticipants: .reply { room, _ in await room.participantsReply() }
        case .leave: .status { room, timeout throws(CowatchError) in try await room.leave(timeout: timeout) }
        case .join: .status { room, timeout throws(CowatchError) in try await room.join(timeout: timeout) }
        case .end: .status { room, timeout throws(CowatchError) in try await room.end(timeout: timeout) }
        case .setReady(let ready): .status { room, _ in await room.setStatus(ready: ready) }
        case .setWaitForMe(let on): .status { room, _ in await room.setStatus(waitForMe: on) }
        case .setRole(let name, let role):
            .status { room, timeout throws(CowatchError) in try await room.setRole(of: name, to: role, timeout: timeout) }
        case .kick(let name): .status { room, timeout throws(CowatchError) in try await room.kick(name, timeout: timeout) }
        case .acceptOpen: .status { room, _ throws(CowatchError) in try await room.acceptOpen() }
        case .getInvite(let host): .reply { room, _ throws(CowatchError) in try await room.inviteReply(host: host) }
        case .chat(let text):
            .data { room, timeout throws(CowatchError) in
                try await room.chat(text, timeout: timeout)
                return .null
            }
        case .getChat: .reply { room, _ in await room.chatReply() }
        case .showRoom: .reply { room, _ in ShowRoomReply(text: await room.showRoomLine()) }
        case .sendMessage(let message):
            .reply { room, timeout throws(CowatchError) in try await room.sendMessage(message, timeout: max(10, timeout)) }
        case .attach(let path, let name, let meta, let entry):
            .reply { room, _ throws(CowatchError) in try await room.attach(path: path, name: name, meta: meta, entry: entry) }
        case .getAttachments: .reply { room, _ in await room.attachmentsReply() }
        case .detach(let id): .reply { room, timeout throws(CowatchError) in try await room.detach(id, timeout: timeout) }
        case .fetch(let id, let path, let force):
            .reply { room, _ throws(CowatchError) in try await room.fetch(id, to: path, replacing: force) }
        case .getPlaylist: .reply { room, _ in await room.playlistReply() }
        case .playlist(let command):
            .reply { room, timeout throws(CowatchError) in try await room.playlist(command, timeout: timeout) }
        case .share(let path): .reply { room, _ throws(CowatchError) in try await room.share(path: path) }
        case .unshare: .reply { room, _ throws(CowatchError) in try await room.unshare() }
        case .getShares: .reply { room, _ in await room.sharesReply() }
        case .manage: .reply { room, timeout throws(CowatchError) in try await room.manageSyncplayRoom(timeout: timeout) }
        case .getProperty, .quit: nil
        }
    }
}

extension RoomRoute {
    /// A route that runs `body` and answers with the status.
    static func status(
        _ body: @escaping @Sendable (_ room: RoomSession, _ timeout: Double) async throws(CowatchError) -> Void
    ) -> RoomRoute {
        RoomRoute { room, timeout throws(CowatchError) in
            try await body(room, timeout)
            return .status
        }
    }

    /// A route whose answer is the typed reply `body` returns, as its one codec writes it.
    static func reply<Reply: ControlReplyData>(
        _ body: @escaping @Sendable (_ room: RoomSession, _ timeout: Double) async throws(CowatchError) -> Reply
    ) -> RoomRoute {
        RoomRoute { room, timeout throws(CowatchError) in .data(try await body(room, timeout).json) }
    }

    /// A route whose answer is what `body` returns.
    static func data(
        _ body: @escaping @Sendable (_ room: RoomSession, _ timeout: Double) async throws(CowatchError) -> JSONValue
    ) -> RoomRoute {
        RoomRoute { room, timeout throws(CowatchError) in .data(try await body(room, timeout)) }
    }
}
