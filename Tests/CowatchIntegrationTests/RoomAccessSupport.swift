import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation

/// Daemons of one room for the room-access tests (secrets, roles, what a room may open): each
/// with a command client and an event listener subscribed from its start.
struct Viewers {
    var daemons: [DaemonProcess] = []
    var clients: [ControlClient] = []
    var listeners: [ControlClient] = []

    /// Starts a daemon with `arguments` (its room flags among them) and waits for its socket;
    /// with `waitJoined`, also until it has joined.
    @discardableResult
    mutating func add(
        _ name: String, media: String, arguments: [String], environment: [String: String] = [:], waitJoined: Bool = true
    ) throws -> Int {
        let daemon = try DaemonProcess(
            name: name, media: media, extraArguments: arguments + ["--no-osd"], environment: environment)
        daemons.append(daemon)
        clients.append(try daemon.client())
        listeners.append(try daemon.client())
        _ = try listeners.last!.status()  // subscribed from here on
        if waitJoined { try self.waitJoined(clients.count - 1) }
        return clients.count - 1
    }

    func waitJoined(_ index: Int, participants: Int? = nil, timeout: Double = 15) throws {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if try room(index)["session"] == "joined",
                try participants == nil || clients[index].request(.getParticipants).arrayValue?.count == participants
            {
                return
            }
            sleepSeconds(0.05)
        }
        throw TestFailure("\(daemons[index].name) did not join in \(timeout) s:\n\(daemons[index].stderr)")
    }

    /// The `room` section of `get_status`.
    func room(_ index: Int) throws -> JSONValue {
        try clients[index].request(.getStatus)["room"] ?? .null
    }

    /// Waits until `index`'s participant list says `name` has `role` (the list comes once a second).
    func waitRole(_ index: Int, of name: String, is role: String, timeout: Double = 5) throws {
        let deadline = monotonicNow() + timeout
        var list: JSONValue = .null
        while monotonicNow() < deadline {
            list = try clients[index].request(.getParticipants)
            if list.arrayValue?.contains(where: { $0["name"]?.stringValue == name && $0["role"]?.stringValue == role }) == true {
                return
            }
            sleepSeconds(0.1)
        }
        throw TestFailure("\(name) is not \(role) for \(daemons[index].name): \(list.jsonString)")
    }

    /// Runs a request expected to fail; returns its error.
    func failure(_ index: Int, _ command: ControlCommand, timeout: Double = 10) -> CowatchError? {
        do {
            _ = try clients[index].request(command, timeout: timeout)
            return nil
        } catch {
            return error
        }
    }
}

/// Writes `text` to a new file in `directory` with `mode`; returns its path.
func writeSecretFile(_ text: String, mode: mode_t = 0o600, in directory: String, name: String = "room.secret") throws -> String {
    let path = directory + "/" + name
    guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)), chmod(path, mode) == 0 else {
        throw TestFailure("cannot write \(path)")
    }
    return path
}

/// Runs the `cowatch` CLI with stdin not a terminal.
func runCowatch(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try Binaries.path("cowatch"))
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    return (
        process.terminationStatus, String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self),
        String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    )
}

/// The non-empty lines of a daemon's stderr.
func stderrLines(_ daemon: DaemonProcess) -> [String] {
    daemon.stderr.split(separator: "\n").map(String.init).filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
}
