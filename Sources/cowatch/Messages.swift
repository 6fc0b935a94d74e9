import ArgumentParser
import CowatchClient
import CowatchCore
import Foundation

/// `cowatch chat` and `cowatch send`: the room's chat and messenger.
struct Chat: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Say something to the room: everyone sees \"<you> text\" on screen and in cowatch events. Without words: the recent chat.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The line (up to 1000 bytes).")
    var words: [String] = []

    func run() throws {
        guard words.isEmpty else {
            let line = words.joined(separator: " ")
            _ = try connection.send(.chat(line))
            if !connection.json { print("sent to the room: \(line)") }
            return
        }
        let data = try connection.send(.getChat)
        if connection.json {
            printJSON(data)
            return
        }
        for line in try connection.read(ChatReply.self, from: data).lines {
            print("<\(line.from)> \(line.text)")
        }
    }
}

struct Send: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send a message (any JSON) on a topic to the room, or to some: cowatch send TOPIC JSON [--to NAME…].",
        discussion: """
            Reliable by default: in order, acknowledged, sent again after a reconnect; prints who it reached. \
            --unreliable is best effort (the newest of a topic wins), for data that is soon stale. \
            Others see it with cowatch events (--topic T for one topic). Nobody who joins later receives it.
            """)
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The topic: 1-32 of a-z, 0-9, '_' or '-'.")
    var topic: String
    @Argument(help: "The payload, JSON (a bare word is sent as a string).")
    var payload: String
    @Option(name: .customLong("to"), parsing: .upToNextOption, help: ArgumentHelp("Only these participants.", valueName: "NAME"))
    var recipients: [String] = []
    @Flag(help: "Best effort: no acknowledgement, may be dropped under load.")
    var unreliable = false

    // Here rather than only in run(): the parser then shows send's own usage under the message.
    func validate() throws { _ = try payloadValue() }

    /// The payload as JSON; a bare word is sent as a string. A payload that starts like an object
    /// or an array is meant as JSON: a mistake in it is refused rather than sent as a string.
    func payloadValue() throws -> JSONValue {
        if let value = try? JSONValue.parse(Array(payload.utf8)) { return value }
        let start = payload.drop { $0.isWhitespace }.first
        guard start == "{" || start == "[" else { return .string(payload) }
        let quoted = "'" + JSONValue.string(payload).jsonString.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
        throw ValidationError(
            "the payload \(payload.prefix(60)) is not valid JSON (invalid-json)\(Self.problem(payload)); "
                + "to send it as a string, quote it as one: cowatch send \(topic) \(quoted)")
    }

    /// What the JSON parser says is wrong, as ": …", when it says more than "not valid JSON".
    private static func problem(_ text: String) -> String {
        do {
            _ = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
            return ""
        } catch {
            var detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? ""
            while detail.hasSuffix(".") { detail.removeLast() }
            return detail.isEmpty ? "" : ": " + detail.lowercased().prefix(1) + detail.dropFirst().prefix(120)
        }
    }

    func run() throws {
        let value = try payloadValue()
        let request = try ControlCommand(arguments: [
            "send_message", .string(topic), value,
            recipients.isEmpty ? "all" : .array(recipients.map(JSONValue.string)),
            .string(unreliable ? "unreliable" : "reliable"),
        ])
        let data = try connection.send(request)
        if connection.json {
            printJSON(data)
        } else if let names = try connection.read(SendMessageReply.self, from: data).delivered {
            print(names.isEmpty ? "sent; nobody else is in the room" : "delivered to \(names.joined(separator: ", "))")
        }
    }
}

/// `cowatch osd`: the room line, printed and shown on the player's OSD.
struct OSD: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the room in one line (who is here, who is not ready, whom the group waits for) on the player's screen, and print it.",
        discussion: "In the player window, Alt+o does the same; c opens mpv's console to type a chat line.")
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        let data = try connection.send(.showRoom)
        if connection.json {
            printJSON(data)
            return
        }
        print(try connection.read(ShowRoomReply.self, from: data).text)
    }
}
