import CowatchCore
import CowatchNet
import Foundation

/// `chat` and `send_message`: the control socket's side of the room's chat and messenger.
///
/// Threading: actor-isolated to `RoomSession`.
extension RoomSession {
    /// Sends a chat line; returns once the server relayed it (our own copy came back).
    /// Errors: `not-in-room`, `unsupported` (no chat on this server), `rate-limited`, `timeout`.
    func chat(_ text: String, timeout: Double) async throws(CowatchError) {
        guard isJoined else { throw CowatchError(.notInRoom, "not in the room (\(machine.state.name))") }
        let request = try coordinator.chat(text, now: clock.now())
        try await awaitAnswer(
            request.id, kind: .action, sending: request.actions, timeout: timeout,
            timedOut: CowatchError(.timeout, "the room server did not relay the line in time"))
    }

    /// `show_room` (`cowatch osd`, or the key in the window): the room line, also on the OSD.
    func showRoomLine() -> String {
        let text = isJoined
            ? RoomLine.text(room: room.room, participants: coordinator.participants, policy: coordinator.policy)
            : "\(room.room): not in the room (\(machine.state.name))"
        showOnScreen(text, milliseconds: 6000)
        return text
    }

    /// A `script-message` from the player window (`WindowBindings`): `cowatch-chat WORDS…`
    /// sends a chat line (errors go to the OSD: nobody reads a reply there), `cowatch-room`
    /// shows the room line. Other scripts' messages are not ours.
    func windowMessage(_ arguments: [String]) {
        switch arguments.first {
        case WindowBindings.chatMessage:
            let text = arguments.dropFirst().joined(separator: " ").trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { return }
            Task {
                do throws(CowatchError) {
                    try await chat(try ChatLine.checked(text), timeout: configuration.seekTimeout)
                } catch {
                    showRefusal(error)
                }
            }
        case WindowBindings.roomMessage:
            _ = showRoomLine()
        case WindowBindings.playlistMessage:
            windowPlaylistMessage(arguments)
        default:
            break
        }
    }

    /// `get_chat`: the recent lines, oldest first.
    func chatReply() -> ChatReply {
        ChatReply(lines: chatLog)
    }

    /// Sends a messenger message. Reliable: returns once acknowledged, with who it reached (it is
    /// sent again after a reconnect until then); unreliable: at once.
    /// Errors: `not-in-room`, `unsupported`, `rate-limited`, `invalid-argument`, `timeout` (the
    /// message stays queued and goes again after a reconnect).
    func sendMessage(_ request: ControlCommand.SendMessageRequest, timeout: Double) async throws(CowatchError) -> SendMessageReply {
        guard isJoined else { throw CowatchError(.notInRoom, "not in the room (\(machine.state.name))") }
        if let to = request.to, to.contains(configuration.name) {
            throw CowatchError(.invalidArgument, "a message to yourself never leaves this daemon")
        }
        let text = String(decoding: request.payload.encoded(), as: UTF8.self)
        let sent = try coordinator.send(
            topic: request.topic, payload: text, reliable: request.reliable, to: request.to, now: clock.now())
        guard request.reliable else {
            perform(sent.actions)
            return SendMessageReply(id: sent.id, delivered: nil)
        }
        try await awaitAnswer(
            sent.id, kind: .message, sending: sent.actions, timeout: timeout,
            timedOut: CowatchError(.timeout, "not acknowledged yet; it stays queued and goes again after a reconnect"))
        let delivered = deliveries.removeValue(forKey: sent.id) ?? []
        return SendMessageReply(id: sent.id, delivered: delivered)
    }
}
