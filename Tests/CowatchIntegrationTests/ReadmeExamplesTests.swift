import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The README's evening, run as written: every `person$ command` line of its examples, in order,
/// by real daemons (headless) and the real CLI. Only what cannot run here is replaced: the port,
/// `alice.example` (loopback), the film and files (generated), the invite (the host's real one),
/// `https://media.example/…` (a local HTTP server), an attachment id (the real one). `op$` lines
/// are the standalone server's alternative and are not run.
@Suite("The README's examples", .serialized, .realProcesses)
struct ReadmeExamplesTests {
    /// One example line: who types it and its words (quotes and comments as a shell reads them).
    struct Line: CustomStringConvertible {
        var person: String
        var words: [String]
        /// Which fenced block (each is a scene of its own).
        var block: Int
        var description: String { "\(person)$ \(words.joined(separator: " "))" }
    }

    static var readmePath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("README.md").path
    }

    /// Every `person$ …` line inside a fenced block, continuation lines joined.
    static func exampleLines(_ text: String) -> [Line] {
        var lines: [Line] = []
        var inBlock = false
        var block = 0
        var pending: String?
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if raw.hasPrefix("```") {
                inBlock.toggle()
                block += 1
                continue
            }
            guard inBlock else { continue }
            var line = String(raw)
            if let start = pending {
                line = start + " " + line.trimmingCharacters(in: .whitespaces)
                pending = nil
            }
            if line.hasSuffix("\\") {
                pending = String(line.dropLast())
                continue
            }
            guard let dollar = line.firstIndex(of: "$"), line[..<dollar].allSatisfy(\.isLetter), line.first?.isLetter == true
            else { continue }
            let words = shellWords(String(line[line.index(after: dollar)...]))
            if !words.isEmpty { lines.append(Line(person: String(line[..<dollar]), words: words, block: block)) }
        }
        return lines
    }

    /// Splits like a shell: quotes group, `#` at a word's start ends the line.
    static func shellWords(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        for character in text {
            if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
            } else if character == "'" || character == "\"" {
                quote = character
                inWord = true
            } else if character == " " || character == "\t" {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else if character == "#" && !inWord {
                break
            } else {
                current.append(character)
                inWord = true
            }
        }
        if inWord { words.append(current) }
        return words
    }

    @Test("the example lines are found (the parser reads the README as a person does)")
    func parses() async throws {
        let lines = Self.exampleLines(try String(contentsOfFile: Self.readmePath, encoding: .utf8))
        #expect(lines.contains { $0.person == "alice" && $0.words.first == "cowatchd" && $0.words.contains("--host") })
        #expect(lines.contains { $0.person == "bob" && $0.words == ["cowatch", "pause"] })
        #expect(Self.shellWords("cowatch send poll '{\"q\":\"pizza?\"}' --to alice   # comment") == ["cowatch", "send", "poll", "{\"q\":\"pizza?\"}", "--to", "alice"])
    }

    @Test("every person$ line of the README runs as written and succeeds")
    func evening() async throws {
        let lines = Self.exampleLines(try String(contentsOfFile: Self.readmePath, encoding: .utf8))
        let evening = try await Evening()
        defer { evening.stopInBackground() }
        var block = -1
        for line in lines where line.person != "op" {
            // Each block is a scene of the same evening: one that ended it (`end`) is followed
            // by everyone joining again, as friends would for the next film.
            if line.block != block {
                block = line.block
                try await evening.rejoinAll()
            }
            try await evening.run(line)
        }
        #expect(evening.ran > 10, "only \(evening.ran) lines ran")
    }
}

/// The people of the README's evening and what stands in for their machines.
private final class Evening {
    let directory: String
    let port = freeLoopbackPort()
    let media: String
    let http: SlowMediaServer
    var daemons: [String: Process] = [:]
    var invite: String?
    var attachmentID: String?
    var ran = 0

    init() async throws {
        directory = try makeTemporaryDirectory("cowatch-readme")
        media = try await TestMedia.file(.audioVideo)
        http = try SlowMediaServer(file: try await TestMedia.file(.videoOnly))
        try "1\n00:00:01,000 --> 00:00:03,000\nHello\n".write(toFile: directory + "/night.en.srt", atomically: true, encoding: .utf8)
        try Data(repeating: 7, count: 4096).write(to: URL(fileURLWithPath: directory + "/extras.zip"))
        try FileManager.default.createDirectory(atPath: directory + "/Downloads", withIntermediateDirectories: true)
        let secret = directory + "/.movie-night.secret"
        try "orange juice 42".write(toFile: secret, atomically: true, encoding: .utf8)
        chmod(secret, 0o600)
    }

    func socket(_ person: String) -> String { directory + "/\(person).sock" }

    func environment(_ person: String) -> [String: String] {
        // The test machine's own router is not asked to forward anything (HostFromHomeTests asks a
        // router of its own, in network namespaces).
        ["XDG_STATE_HOME": directory + "/\(person)/state", "XDG_CONFIG_HOME": directory + "/\(person)/config",
         "HOME": directory, "COWATCH_MAP_PORT": "off"]
    }

    /// The README's placeholders, made real.
    func substituted(_ word: String) -> String {
        var word = word
        if word.hasPrefix("cowatch://"), let invite { return invite }
        if word == "invite.txt", let invite {
            // The line the host sent, kept as the README says: 0600, it holds the secret.
            let path = directory + "/invite.txt"
            FileManager.default.createFile(atPath: path, contents: Data("cowatchd --join '\(invite)' --media FILM\n".utf8))
            chmod(path, 0o600)
            return path
        }
        if word.hasPrefix("https://media.example/") { return http.url }
        word = word.replacingOccurrences(of: "~/", with: directory + "/")
        if word == "7433" { return "\(port)" }
        if word == "night.mkv" { return media }
        if word == "alice.example" { return "127.0.0.1" }
        return word
    }

    func run(_ line: ReadmeExamplesTests.Line) async throws {
        let words = line.words.map(substituted)
        switch words.first {
        case "cowatchd":
            try await startDaemon(line.person, Array(words.dropFirst()))
        case "cowatch":
            if daemons[line.person] == nil { try await startFriend(line.person) }
            var arguments = Array(words.dropFirst())
            // No terminal to ask on, no Ctrl-C to stop a stream: what a script would add.
            if arguments.first == "end" { arguments.append("--yes") }
            if arguments.first == "events" { arguments += ["--duration", "1"] }
            // An attachment's id is the one this evening's attach got.
            if ["fetch", "detach"].contains(arguments.first), arguments.count > 1, let attachmentID {
                arguments[1] = String(attachmentID.prefix(4))
            }
            arguments += ["--socket", socket(line.person)]
            let done = try await BinaryRunnerShim.run("cowatch", arguments, environment: environment(line.person), directory: directory)
            #expect(done.status == 0, "\(line) → status \(done.status)\n\(done.stdout)\(done.stderr)")
            if arguments.first == "attach", attachmentID == nil, let id = done.stdout.split(separator: " ").dropFirst().first {
                attachmentID = String(id)
            }
            if arguments.first == "invite", let start = done.stdout.range(of: "cowatch://") {
                invite = String(done.stdout[start.lowerBound...].prefix { !$0.isWhitespace && $0 != "'" })
            }
            try await check(line)
        default:
            Issue.record("an example the test does not know how to run: \(line)")
        }
        ran += 1
    }

    /// What the README says happens, where it can be seen from outside.
    func check(_ line: ReadmeExamplesTests.Line) async throws {
        if line.words == ["cowatch", "pause"] {
            for (person, _) in daemons {
                _ = try await ControlClient(path: socket(person)).waitForStatus(timeout: 5) { $0.paused }
            }
        }
    }

    func startDaemon(_ person: String, _ arguments: [String]) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Binaries.path("cowatchd"))
        process.arguments = arguments + ["--control", socket(person), "--mpv", "vo=null", "--mpv", "ao=null"]
        var environment = ProcessInfo.processInfo.environment
        for key in environment.keys where key.hasPrefix("COWATCH_") { environment[key] = nil }
        environment.merge(self.environment(person)) { _, new in new }
        process.environment = environment
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let log = directory + "/\(person).stderr"
        FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: log)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        try process.runSerially()
        daemons[person] = process
        let client = try await waitForSocket(person, log: log)
        _ = try await client.waitForStatus(timeout: 20) { $0.room?.session == "joined" }
        if invite == nil, arguments.contains("--host") {
            invite = try await client.request(.getInvite(host: "127.0.0.1"))["invite"]?.stringValue
        }
    }

    /// A friend the README has not started yet (carol): joins with the invite.
    func startFriend(_ person: String) async throws {
        guard let invite else { throw TestFailure("\(person) needs an invite, and the host has given none yet") }
        try await startDaemon(person, ["--join", invite, "--media", media, "--name", person])
    }

    /// Everyone back in the room (after an `end`): the host first, as it owns the room.
    func rejoinAll() async throws {
        for (person, _) in daemons.sorted(by: { $0.key < $1.key }) {
            let client = try ControlClient(path: socket(person))
            if try await client.status().room?.session != "joined" {
                _ = try? await client.request(.join)
                _ = try await client.waitForStatus(timeout: 20) { $0.room?.session == "joined" }
            }
        }
    }

    func waitForSocket(_ person: String, log: String) async throws -> ControlClient {
        let deadline = monotonicNow() + 20
        while monotonicNow() < deadline {
            if ControlClient.isListening(path: socket(person)) { return try ControlClient(path: socket(person)) }
            if daemons[person]?.isRunning == false { break }
            await pause(0.02)
        }
        throw TestFailure("\(person)'s cowatchd did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    /// For the test's `defer`: every daemon asked to end (the wait for it in the background),
    /// the HTTP server closed.
    func stopInBackground() {
        for process in daemons.values { process.terminateInBackground() }
        http.close()
    }
}

/// `run(executable:…)` from BinaryRunner, by program name.
private enum BinaryRunnerShim {
    static func run(_ name: String, _ arguments: [String], environment: [String: String], directory: String) async throws -> Finished {
        try await CowatchIntegrationTests.run(executable: try Binaries.path(name), arguments, environment: environment, directory: directory)
    }
}
