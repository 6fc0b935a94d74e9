import CowatchObserver
import Foundation

/// Where the package's executables are: `$COWATCH_BIN_DIR`, else beside the test bundle
/// (`swift build` puts them in the same directory as `…PackageTests.xctest`).
public enum Binaries {
    public static var directory: String {
        if let explicit = ProcessInfo.processInfo.environment["COWATCH_BIN_DIR"], !explicit.isEmpty {
            return explicit
        }
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        var url = URL(fileURLWithPath: executable)
        // …/debug/cowatchPackageTests.xctest (a file on Linux) → …/debug
        while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent("cowatchd").path) {
            url.deleteLastPathComponent()
        }
        return url.path
    }

    public static func path(_ name: String) throws -> String {
        let path = directory + "/" + name
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestFailure("\(name) not found in \(directory): run `swift build` before `swift test` (make test does)")
        }
        return path
    }
}
