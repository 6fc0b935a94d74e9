import ArgumentParser
import CowatchClient
import CowatchCore
import Foundation

/// Options every subcommand shares: which daemon, and how to print.
struct ConnectionOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The daemon's control socket.", valueName: "PATH"))
    var socket: String?

    @Option(name: .long, help: ArgumentHelp(
        "The daemon's name, to find its socket in the default place (default: yours, else the only daemon running).",
        valueName: "NAME"))
    var name: String?

    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false

    /// The socket to use: `--socket`, else `COWATCH_CONTROL`, else the default path of `--name`,
    /// `COWATCH_NAME` or the login name. With no daemon named at all and no daemon under the login
    /// name, the only daemon running in the default directory (see `SocketDiscovery`).
    func socketPath() throws(CowatchError) -> String {
        let environment = ProcessInfo.processInfo.environment
        if let socket { return socket }
        if let fromEnvironment = environment["COWATCH_CONTROL"], !fromEnvironment.isEmpty, name == nil {
            return fromEnvironment
        }
        if let who = name ?? environment["COWATCH_NAME"].flatMap({ $0.isEmpty ? nil : $0 }) {
            return ControlSocketPath.defaultPath(name: who, environment: environment)
        }
        let login = ControlSocketPath.defaultPath(
            name: ControlSocketPath.defaultName(environment: environment), environment: environment)
        return try SocketDiscovery.resolve(default: login, environment: environment)
    }

    /// Connects to `socketPath()`. `ControlClient` refuses (`unsafe-path`, nothing sent) a socket in
    /// `$XDG_RUNTIME_DIR/cowatch` or `/tmp/cowatch-UID` unless that directory is a real directory
    /// of ours with mode 0700, whether the path is the default or given with `--socket` or
    /// `COWATCH_CONTROL`; a path elsewhere is used as given.
    func connect() throws -> ControlClient {
        do {
            return try ControlClient(path: try socketPath())
        } catch {
            throw CLIFailure(error)
        }
    }

    /// Sends one command; on failure throws a one-line message and a non-zero exit.
    /// `timeout`: seconds to wait for the answer (transfers take longer than the default 15).
    func send(_ command: ControlCommand, timeout: Double = 15) throws -> JSONValue {
        let client = try connect()
        do {
            return try client.request(command, timeout: timeout)
        } catch {
            throw CLIFailure(error)
        }
    }

    /// Reads a reply's `data` as its type; a reply this client cannot read is a one-line failure
    /// (`malformed-control-message`).
    func read<Reply: ControlReplyData>(_ type: Reply.Type, from data: JSONValue) throws -> Reply {
        do {
            return try Reply(json: data)
        } catch {
            throw CLIFailure(error)
        }
    }
}

/// A failure the CLI reports as one line on stderr, exiting 1.
struct CLIFailure: Error, CustomStringConvertible {
    let error: CowatchError
    init(_ error: CowatchError) { self.error = error }
    var description: String { error.message }
}

func printJSON(_ value: JSONValue) {
    print(value.jsonString)
}
