import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation

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
