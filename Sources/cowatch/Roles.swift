import ArgumentParser
import CowatchCore
import Foundation

// The room's roles and the switches offered under --accept-open ask: op, deop, kick, accept.

/// Shared body: send, then say what happened in one sentence (or print the status as JSON).
protocol SentenceCommand: ParsableCommand {
    var connection: ConnectionOptions { get }
    func command() throws -> ControlCommand
    var done: String { get }
}

extension SentenceCommand {
    func run() throws {
        let data = try connection.send(try command())
        if connection.json { printJSON(data) } else { print(done) }
    }
}

/// Checks a participant name given on the command line.
func participantName(_ text: String) throws -> String {
    do {
        return try ParticipantName.validate(text)
    } catch {
        throw ValidationError(error.message)
    }
}

struct Op: SentenceCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make a participant an operator (owner only): in a managed room operators control playback.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The participant's name.") var name: String
    func command() throws -> ControlCommand { .setRole(name: try participantName(name), role: .operator) }
    var done: String { "\(name) is now an operator" }
}

struct Deop: SentenceCommand {
    static let configuration = CommandConfiguration(abstract: "Make an operator a member again (owner only).")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The participant's name.") var name: String
    func command() throws -> ControlCommand { .setRole(name: try participantName(name), role: .member) }
    var done: String { "\(name) is now a member" }
}

struct Kick: SentenceCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove a participant from the room (owner and operators); they cannot come back for a while.")
    @OptionGroup var connection: ConnectionOptions
    @Argument(help: "The participant's name.") var name: String
    func command() throws -> ControlCommand { .kick(name: try participantName(name)) }
    var done: String { "removed \(name) from the room" }
}

struct Accept: SentenceCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open the media someone switched the room to (with cowatchd --accept-open ask).")
    @OptionGroup var connection: ConnectionOptions
    func command() -> ControlCommand { .acceptOpen }
    var done: String { "opening the room's new media" }
}

struct InviteLink: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "invite",
        abstract: "Print the invite link to this room: a friend runs cowatchd --join 'LINK' --media FILM. It holds the room secret: give it to friends only.")
    @OptionGroup var connection: ConnectionOptions
    @Option(help: ArgumentHelp("The server's address as friends reach it (default: the one joined, or when hosting the router's outside address once it forwards the port, else this machine's LAN address); a given host means no alt= addresses.", valueName: "HOST"))
    var host: String?

    func run() throws {
        let data = try connection.send(.getInvite(host: host))
        if connection.json {
            printJSON(data)
        } else {
            let reply = try connection.read(InviteReply.self, from: data)
            print(reply.invite)
            // Hosting: whether friends on the internet can use it (on stderr: the link stays the only output).
            if let reach = reply.reachability {
                FileHandle.standardError.write(Data("cowatch: \(reach.summary)\n".utf8))
                if let advice = reach.advice {
                    FileHandle.standardError.write(Data("cowatch: what to do: \(advice)\n".utf8))
                }
            }
        }
    }
}
