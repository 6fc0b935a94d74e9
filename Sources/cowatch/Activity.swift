import ArgumentParser
import CowatchCore
import Foundation

// The activity and session commands: end, open, ready, unready, wait-for-me.

struct End: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "End the activity for everyone in the room (asks first; --yes skips the question).",
        discussion: "Each daemon then keeps its player open or quits, as its on-end setting says.")
    @OptionGroup var connection: ConnectionOptions
    @Flag(name: [.short, .long], help: "Do not ask for confirmation.") var yes = false

    func run() throws {
        if !yes {
            let status = try? PlayerStatus(json: try connection.send(.getStatus))
            let room = status?.room?.room ?? "?"
            let count = status?.room?.participants ?? 0
            guard isatty(STDIN_FILENO) == 1 else {
                throw CLIFailure(CowatchError(
                    .invalidArgument, "end affects everyone in room \(room); run with --yes to confirm without a terminal"))
            }
            FileHandle.standardError.write(Data(
                "End the activity for all \(count) participant(s) of room \(room)? [y/N] ".utf8))
            let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
            guard answer == "y" || answer == "yes" else {
                print("not ended")
                return
            }
        }
        let data = try connection.send(.end)
        if connection.json { printJSON(data) } else { print("ended the activity for everyone") }
    }
}

struct Open: PlaybackCommand {
    static let configuration = CommandConfiguration(
        abstract: "Switch the activity to new media for everyone; the group starts together once all have it.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: ArgumentHelp(
        "In a room, a network URL each participant opens (http or https unless they allow more); alone, also a file path.",
        valueName: "URL"))
    var url: String
    @Option(help: ArgumentHelp("The title others see (default: the media's file name).", valueName: "TITLE"))
    var title: String?
    @Option(help: ArgumentHelp("watch or listen (default: the current activity's).", valueName: "TYPE"))
    var type: String?
    @Option(help: ArgumentHelp("A URL for participants who cannot open the first one.", valueName: "URL"))
    var fallback: String?

    /// The reply is the status when the switch was accepted, before anyone loaded the new media:
    /// its title, position and duration are still the old media's. So say what is being opened.
    func run() throws {
        let command = try command()
        let data = try connection.send(command)
        if connection.json {
            printJSON(data)
            return
        }
        guard case .open(let open) = command else { return }
        if let room = (try? PlayerStatus(json: data))?.room {
            // The room's activity is the new one once the server accepted it; its title is the
            // one everyone sees (given with --title, else the media's file name).
            let title = room.activity.url == open.url ? room.activity.title : nil
            let named = (title ?? open.title).map { "\($0) (\(open.url))" } ?? open.url
            print("opening \(named) for everyone; the group starts together once all have it")
        } else {
            print("opening \(open.url)")
        }
    }

    func command() throws -> ControlCommand {
        // A relative path means "here": every daemon resolves paths on its own machine, from its
        // own working directory, so send it absolute.
        var url = self.url
        if !url.contains("://"), !url.hasPrefix("/"), FileManager.default.fileExists(atPath: url) {
            url = FileManager.default.currentDirectoryPath + "/" + url
        }
        var arguments: [JSONValue] = ["open", .string(url), title.map(JSONValue.string) ?? .null]
        arguments.append(type.map(JSONValue.string) ?? .null)
        arguments.append(fallback.map(JSONValue.string) ?? .null)
        do {
            return try ControlCommand(arguments: arguments)
        } catch {
            throw ValidationError(error.message)
        }
    }
}

struct Ready: PlaybackCommand {
    static let configuration = CommandConfiguration(
        abstract: "Say you are ready (with the room policy play-when-ready, plays wait for everyone's).")
    @OptionGroup var connection: ConnectionOptions
    func command() -> ControlCommand { .setReady(true) }
}

struct Unready: PlaybackCommand {
    static let configuration = CommandConfiguration(abstract: "Say you are not ready.")
    @OptionGroup var connection: ConnectionOptions
    func command() -> ControlCommand { .setReady(false) }
}

struct WaitForMe: PlaybackCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait-for-me",
        abstract: "on: the group waits (bounded) when you stall; off: \"don't wait for me\".")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: ArgumentHelp("on or off.", valueName: "on|off")) var setting: String

    func command() throws -> ControlCommand {
        switch setting.lowercased() {
        case "on", "yes", "true": return .setWaitForMe(true)
        case "off", "no", "false": return .setWaitForMe(false)
        default: throw ValidationError("wait-for-me takes on or off")
        }
    }
}
