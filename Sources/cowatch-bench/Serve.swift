import ArgumentParser
import CowatchTestSupport
import Foundation

/// Serves one file over HTTP on loopback (ranges included), so a demo or a test can switch a
/// room to a network URL: a room never makes its players open local paths.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve a file over HTTP on 127.0.0.1 until interrupted; prints its URL.")

    @Argument(help: "The file to serve.") var file: String

    func run() throws {
        let server = try SlowMediaServer(file: file)
        // Unbuffered: a script reading a file or pipe sees the URL at once.
        FileHandle.standardOutput.write(Data((server.url + "\n").utf8))
        while true { sleep(3600) }
    }
}
