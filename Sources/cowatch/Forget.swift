import ArgumentParser
import CowatchCore
import Foundation

/// `cowatch forget ROOM`: drops the session tokens kept for a room, so the next start joins as
/// a newcomer (a new name, or a name given up on purpose). Needs no running daemon.
struct Forget: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Forget who you were in a room: the next cowatchd joins it as a newcomer, without your old name's role.")
    @Argument(help: "The room.")
    var room: String
    @Option(help: ArgumentHelp("Only this name's token (default: every name you used there).", valueName: "NAME"))
    var name: String?

    func run() throws {
        let file = SessionTokenFile(path: try SessionTokenFile.defaultPath(environment: ProcessInfo.processInfo.environment))
        let count = try file.forget(room: room, name: name)
        let whose = name.map { " for \($0)" } ?? ""
        print(count == 0
            ? "nothing kept for room \(room)\(whose)"
            : "forgot \(count) session token\(count == 1 ? "" : "s") for room \(room)\(whose): the next start joins as a newcomer")
    }
}
