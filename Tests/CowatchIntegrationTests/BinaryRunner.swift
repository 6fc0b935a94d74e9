import CowatchObserver
import CowatchTestSupport
import Foundation

/// What a finished program left: its exit status and both streams.
typealias Finished = ProgramOutput

/// Runs one of the package's programs to completion with stdin closed, without the caller's
/// `COWATCH_*` variables, with `environment` on top; `XDG_CONFIG_HOME` points nowhere unless given,
/// so no personal config file leaks in. The test's task is suspended (not blocked) meanwhile.
func runBinary(_ name: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> Finished {
    try await run(executable: try Binaries.path(name), arguments, environment: environment)
}

func run(executable: String, _ arguments: [String], environment: [String: String] = [:], directory: String? = nil) async throws -> Finished {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var merged = ProcessInfo.processInfo.environment
    for key in merged.keys where key.hasPrefix("COWATCH_") { merged[key] = nil }
    merged["XDG_CONFIG_HOME"] = "/nonexistent/cowatch-test-config"
    merged.merge(environment) { _, new in new }
    process.environment = merged
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    process.standardInput = FileHandle.nullDevice
    // Output to files, not pipes: a chatty program cannot block on a full pipe while we wait for it.
    return try await runToEnd(process)
}

/// A fresh private directory (mode 0700) under /tmp.
func makeTemporaryDirectory(_ prefix: String) throws -> String {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp failed") }
    return String(cString: made)
}
