import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// The habits an mpv user brings: `--version`, `cowatchd film.mkv`, options before the
/// subcommand, a bare `cowatch pause` finding the one daemon there is, readable help.
@Suite("command-line habits", .realProcesses)
struct CLIHabitsTests {
    @Test("every program prints the one version", arguments: ["cowatchd", "cowatch", "cowatch-server", "cowatch-bench"])
    func version(program: String) async throws {
        let result = try await runBinary(program, ["--version"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == CowatchVersion.text)
    }

    /// Each option's entry in `--help`: its first line and the more indented lines after it.
    func helpEntries(_ help: String) -> [String] {
        var entries: [String] = []
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  -") || line.hasPrefix("  <") {
                entries.append(String(line))
            } else if line.hasPrefix("   "), !entries.isEmpty {
                entries[entries.count - 1] += " " + line.trimmingCharacters(in: .whitespaces)
            }
        }
        return entries
    }

    @Test(
        "help names each default once (argument-parser adds \"(default: …)\" for options with a value)",
        arguments: [["cowatch-server"], ["cowatchd"], ["cowatch", "events"], ["cowatch", "open"], ["cowatch-bench", "rooms"]])
    func defaultsOnce(command: [String]) async throws {
        let result = try await runBinary(command[0], Array(command.dropFirst()) + ["--help"])
        #expect(result.status == 0)
        let entries = helpEntries(result.stdout)
        #expect(entries.count > 2, "\(result.stdout)")
        for entry in entries {
            let count = entry.lowercased().components(separatedBy: "(default").count - 1
            #expect(count <= 1, "\(entry)")
        }
    }

    @Test("options before the subcommand count, as with mpv and git")
    func optionsFirst() async throws {
        let socket = "/nonexistent-cowatch/x.sock"
        let result = try await runBinary("cowatch", ["--socket", socket, "--json", "status"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("no cowatchd is listening on \(socket)"), "\(result.stderr)")
        let equals = try await runBinary("cowatch", ["--socket=\(socket)", "pause"])
        #expect(equals.stderr.contains("no cowatchd is listening on \(socket)"), "\(equals.stderr)")
        // A command's own option before it is refused, with where it goes.
        let misplaced = try await runBinary("cowatch", ["--duration", "5", "events"])
        #expect(misplaced.status == 64)
        #expect(misplaced.stderr.contains("Hint: a command's options go after it: cowatch events --duration 5"), "\(misplaced.stderr)")
    }

    @Test("a malformed time says what is wrong with it")
    func malformedSeek() async throws {
        let result = try await runBinary("cowatch", ["seek", "1:99", "--socket", "/nonexistent-cowatch/x.sock"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("\"1:99\" is not a time: 99 is not below 60"), "\(result.stderr)")
        #expect(!result.stderr.contains("takes one time"))
        let two = try await runBinary("cowatch", ["seek", "1:00", "2:00", "--socket", "/nonexistent-cowatch/x.sock"])
        #expect(two.stderr.contains("seek takes one time, not 2"), "\(two.stderr)")
    }

    @Test("cowatchd FILM: the media as a positional argument, as with mpv; given twice differently is refused")
    func positionalMedia() async throws {
        let media = try await TestMedia.file(.videoOnly)
        let directory = try makeTemporaryDirectory("cowatch-pos")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/pos.sock"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Binaries.path("cowatchd"))
        process.arguments = [media, "--name", "pos", "--control", socket, "--paused", "--mpv", "vo=null", "--mpv", "ao=null"]
        process.environment = ["XDG_CONFIG_HOME": directory, "XDG_STATE_HOME": directory, "HOME": directory, "PATH": "/usr/bin:/bin"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.runSerially()
        defer { process.terminateInBackground() }
        let deadline = monotonicNow() + 20
        while !ControlClient.isListening(path: socket), process.isRunning, monotonicNow() < deadline { await pause(0.02) }
        #expect(try await ControlClient(path: socket).status().media == media)

        let twice = try await runBinary("cowatchd", ["a.mkv", "--media", "b.mkv"])
        #expect(twice.status != 0)
        #expect(twice.stderr.contains("give the media once"), "\(twice.stderr)")
    }
}
