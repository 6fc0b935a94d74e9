import ArgumentParser
import CowatchClient
import CowatchCore
import Foundation

@main
struct Cowatch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cowatch",
        abstract: "Control a running cowatchd: play, pause, seek and change speed for everyone watching.",
        discussion: """
            Times are seconds (90), m:ss (1:30) or h:mm:ss (1:02:03); +10 and -5 are relative. \
            Without --socket or --name, the daemon named after you, else the only one running. See cowatch(1).
            """,
        version: CowatchVersion.text,
        subcommands: [
            Play.self, Pause.self, Toggle.self, Seek.self, Speed.self, Status.self, Events.self, Participants.self,
            Leave.self, Join.self, End.self, Open.self, Accept.self, Ready.self, Unready.self, WaitForMe.self, Op.self,
            Deop.self, Kick.self, Manage.self, InviteLink.self, Chat.self, Send.self, OSD.self, Attach.self, Attachments.self,
            Detach.self, Fetch.self, PlaylistGroup.self, AddToPlaylist.self, RemoveFromPlaylist.self, MoveInPlaylist.self,
            JumpInPlaylist.self, NextInPlaylist.self, PrevInPlaylist.self, RepeatPlaylist.self, ShufflePlaylist.self,
            Share.self, Unshare.self, Shares.self, GetProperty.self, Forget.self, Quit.self,
        ])

    static func main() {
        let arguments = ArgumentOrder.connectionOptionsAfterSubcommand(Array(CommandLine.arguments.dropFirst()))
        var command: ParsableCommand
        do {
            command = try parseAsRoot(arguments)
        } catch {
            let names = configuration.subcommands.map { $0._commandName }
            // A misspelt command (`cowatch paus`): the parser only says "Unexpected argument".
            if let typed = arguments.first, !typed.hasPrefix("-"), !names.contains(typed), typed != "help" {
                let near = Suggestion.nearest(typed, among: names)
                let advice = near.isEmpty
                    ? "; cowatch --help lists the commands"
                    : " — did you mean \(near.joined(separator: " or "))?"
                FileHandle.standardError.write(Data("cowatch: unknown command \(typed.prefix(40))\(advice)\n".utf8))
                Foundation.exit(exitCode(for: error).rawValue)
            }
            // A command's own option before the command: say where it goes.
            if let hint = ArgumentOrder.hint(arguments, subcommands: names) {
                FileHandle.standardError.write(Data("\(fullMessage(for: error))\n\(hint)\n".utf8))
                Foundation.exit(exitCode(for: error).rawValue)
            }
            exit(withError: error)
        }
        do {
            try command.run()
        } catch let failure as CLIFailure {
            FileHandle.standardError.write(Data("cowatch: \(failure.description)\n".utf8))
            Foundation.exit(1)
        } catch {
            exit(withError: error)
        }
    }
}

/// Shared body of the commands that change playback: send, then show the resulting status.
protocol PlaybackCommand: ParsableCommand {
    var connection: ConnectionOptions { get }
    func command() throws -> ControlCommand
}

extension PlaybackCommand {
    func run() throws {
        let data = try connection.send(try command())
        if connection.json {
            printJSON(data)
        } else if let status = try? PlayerStatus(json: data) {
            print(Describe.status(status))
        }
    }
}

struct Play: PlaybackCommand {
    static let configuration = CommandConfiguration(abstract: "Start playback (for the whole room when in one).")
    @OptionGroup var connection: ConnectionOptions
    func command() -> ControlCommand { .play }
}

struct Pause: PlaybackCommand {
    static let configuration = CommandConfiguration(abstract: "Pause playback (everyone snaps to your frame).")
    @OptionGroup var connection: ConnectionOptions
    func command() -> ControlCommand { .pause }
}

struct Toggle: PlaybackCommand {
    static let configuration = CommandConfiguration(commandName: "toggle", abstract: "Pause if playing, play if paused.")
    @OptionGroup var connection: ConnectionOptions
    func command() -> ControlCommand { .togglePause }
}

struct Seek: PlaybackCommand {
    static let configuration = CommandConfiguration(
        abstract: "Seek to a time (90, 1:30, 1:02:03) or by an offset (+10, -5).")
    @OptionGroup var connection: ConnectionOptions
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("Target time or +/- offset.", valueName: "TIME"))
    var time: [String] = []

    // Here rather than only in run(): the parser then shows seek's own usage under the message.
    func validate() throws { _ = try command() }

    /// In a room the group holds, paused, until every player has landed, then resumes together:
    /// the status in the reply is that instant's ("paused"), not where playback is going. So
    /// when the player was playing, say that it is seeking and will resume.
    func run() throws {
        let command = try command()
        if connection.json {
            printJSON(try connection.send(command))
            return
        }
        let before = (try? connection.send(.getStatus)).flatMap { try? PlayerStatus(json: $0) }
        let data = try connection.send(command)
        guard let status = try? PlayerStatus(json: data) else { return }
        let wasPlaying = before.map { !$0.paused && !$0.eof } ?? false
        if wasPlaying, status.paused, status.room?.session == "joined" {
            let target = status.position.map { MediaTime.format($0) } ?? "the new position"
            print(Describe.status(status, state: "seeking to \(target); the group resumes together"))
        } else {
            print(Describe.status(status))
        }
    }

    func command() throws -> ControlCommand {
        let forms = "90, 1:30, 1:02:03, +10 or -5"
        guard time.count == 1 else {
            throw ValidationError(time.isEmpty
                ? "seek needs a time: \(forms)"
                : "seek takes one time, not \(time.count) (\(time.joined(separator: " ").prefix(60))): \(forms)")
        }
        guard let parsed = MediaTime.parse(time[0]) else {
            let why = MediaTime.problem(time[0]) ?? "it is not a time"
            throw ValidationError("\"\(time[0].prefix(40))\" is not a time: \(why); write \(forms)")
        }
        return .seek(seconds: parsed.seconds, mode: parsed.relative ? .relative : .absolute)
    }
}

struct Speed: PlaybackCommand {
    static let configuration = CommandConfiguration(abstract: "Set the playback rate, e.g. 1.25 (0.01 to 100).")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The rate.") var rate: Double

    func command() throws -> ControlCommand {
        guard rate.isFinite, ControlCommand.speedRange.contains(rate) else {
            throw ValidationError("speed must be between 0.01 and 100")
        }
        return .speed(rate)
    }
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show position, state, speed, media and room.")
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        let data = try connection.send(.getStatus)
        if connection.json {
            printJSON(data)
        } else if let status = try? PlayerStatus(json: data) {
            print(Describe.status(status))
        } else {
            printJSON(data)
        }
    }
}

struct Participants: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the room's participants, their drift and round trip.")
    @OptionGroup var connection: ConnectionOptions

    func run() throws {
        let data = try connection.send(.getParticipants)
        if connection.json { printJSON(data); return }
        for entry in try connection.read(ParticipantsReply.self, from: data).participants {
            let name = entry.name
            let state = entry.state
            let drift = Describe.participantDrift(entry.drift)
            let rtt = entry.rtt.map { "rtt \(Describe.milliseconds($0))" } ?? "rtt ?"
            let me = entry.you ? " (you)" : ""
            var flags: [String] = []
            if entry.ready { flags.append("ready") }
            if !entry.waitForMe { flags.append("don't wait") }
            if entry.role != "member" { flags.insert(entry.role, at: 0) }
            if let stall = entry.stall { flags.append(stall) }
            if let stream = entry.stream { flags.append(describe(stream)) }
            let extra = flags.isEmpty ? "" : ", " + flags.joined(separator: ", ")
            if state == "silent" {
                // A dark link: its last drift and round trip are old news.
                print("\(name)\(me): \(name)'s link is silent (nothing heard for a while)\(extra)")
            } else {
                print("\(name)\(me): \(state), \(drift), \(rtt)\(extra)")
            }
        }
        // Who shares which film and who streams it (a daemon older than 1.8 has no such list).
        if let shares = try? connection.read(SharesReply.self, from: try connection.send(.getShares)) {
            for line in describe(shares, sayingNone: false) { print(line) }
        }
    }
}

struct GetProperty: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Read any mpv property (read-only), e.g. `cowatch get audio-pts`.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The mpv property name.") var property: String

    func run() throws {
        let data = try connection.send(.getProperty(property))
        if connection.json || data.stringValue == nil { printJSON(data) } else { print(data.stringValue ?? "") }
    }
}

struct Leave: PlaybackCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stop following the room; your player stays where it is and the others are told you left.")
    @OptionGroup var connection: ConnectionOptions
    func command() -> ControlCommand { .leave }
}

struct Join: PlaybackCommand {
    static let configuration = CommandConfiguration(abstract: "Follow the room again after leave (you align to the group).")
    @OptionGroup var connection: ConnectionOptions
    func command() -> ControlCommand { .join }
}

struct Quit: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stop the daemon (it leaves its room).")
    @OptionGroup var connection: ConnectionOptions
    func run() throws {
        _ = try connection.send(.quit)
        if !connection.json { print("cowatchd is shutting down") }
    }
}

struct Events: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print every event as it happens, until Ctrl-C.")
    @OptionGroup var connection: ConnectionOptions
    @Option(help: ArgumentHelp("Stop after this many seconds (default: never).", valueName: "SECONDS"))
    var duration: Double?
    @Option(help: ArgumentHelp("Only messages on this topic (and no other events).", valueName: "TOPIC"))
    var topic: String?

    func run() throws {
        let client = try connection.connect()
        let end = duration.map { monotonicNow() + $0 }
        while true {
            let left = end.map { $0 - monotonicNow() } ?? 3600
            if left <= 0 { return }
            do {
                guard let event = try client.nextEvent(timeout: left) else { continue }
                if let topic {
                    guard case .message(let message) = event, message.topic == topic else { continue }
                }
                // Unbuffered, so `cowatch events | grep …` sees each event at once.
                let line = connection.json ? event.json.jsonString : Describe.event(event)
                FileHandle.standardOutput.write(Data((line + "\n").utf8))
            } catch {
                throw CLIFailure(CowatchError(error.code, "event stream ended: \(error.message)"))
            }
        }
    }
}
