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

/// Runs the `cowatch` CLI with stdin not a terminal, the test's task suspended meanwhile.
func runCowatch(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try Binaries.path("cowatch"))
    process.arguments = arguments
    process.standardInput = FileHandle.nullDevice
    let finished = try await runToEnd(process)
    return (finished.status, finished.stdout, finished.stderr)
}

/// The non-empty lines of a daemon's stderr.
func stderrLines(_ daemon: DaemonProcess) -> [String] {
    daemon.stderr.split(separator: "\n").map(String.init).filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
}
