import CowatchObserver
import CowatchTestSupport
import Foundation

/// What a finished program left: its exit status and both streams.
struct Finished {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs one of the package's programs to completion with stdin closed, without the caller's
/// `COWATCH_*` variables, with `environment` on top; `XDG_CONFIG_HOME` points nowhere unless given,
/// so no personal config file leaks in.
func runBinary(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Finished {
    try run(executable: try Binaries.path(name), arguments, environment: environment)
}

func run(executable: String, _ arguments: [String], environment: [String: String] = [:], directory: String? = nil) throws -> Finished {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    var merged = ProcessInfo.processInfo.environment
    for key in merged.keys where key.hasPrefix("COWATCH_") { merged[key] = nil }
    merged["XDG_CONFIG_HOME"] = "/nonexistent/cowatch-test-config"
    merged.merge(environment) { _, new in new }
    process.environment = merged
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    // Files, not pipes: a chatty program cannot block on a full pipe while we wait for it.
    let base = NSTemporaryDirectory() + "cowatch-run-\(UUID().uuidString.prefix(8))"
    FileManager.default.createFile(atPath: base + ".out", contents: nil)
    FileManager.default.createFile(atPath: base + ".err", contents: nil)
    defer {
        try? FileManager.default.removeItem(atPath: base + ".out")
        try? FileManager.default.removeItem(atPath: base + ".err")
    }
    process.standardOutput = FileHandle(forWritingAtPath: base + ".out")
    process.standardError = FileHandle(forWritingAtPath: base + ".err")
    process.standardInput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    return Finished(
        status: process.terminationStatus,
        stdout: (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? "")
}

/// A fresh private directory (mode 0700) under /tmp.
func makeTemporaryDirectory(_ prefix: String) throws -> String {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp failed") }
    return String(cString: made)
}
