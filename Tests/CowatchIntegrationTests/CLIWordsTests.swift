import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// What `cowatch` says: each command's words describe what happened, not a stale status, and a
/// mistake on the command line is named with what to type instead.
@Suite("what cowatch says", .realProcesses)
struct CLIWordsTests {
    /// A socket nobody listens on: a command that gets this far passed the CLI's own checks.
    let nowhere = "/nonexistent-cowatch/words.sock"

    /// The drift figures (ms) in `cowatch participants` lines for `name`.
    func driftLines(_ stdout: String, of name: String) -> [String] {
        stdout.split(separator: "\n").map(String.init).filter { $0.hasPrefix("\(name):") || $0.hasPrefix("\(name) (you):") }
    }

    func milliseconds(in line: String) -> Double? {
        guard let range = line.range(of: #"drift -?[0-9]+\.[0-9]+ ms"#, options: .regularExpression) else { return nil }
        return Double(line[range].dropFirst("drift ".count).dropLast(" ms".count))
    }

    @Test("participants: a late joiner's drift is \"not measured yet\" until measured, never its distance before aligning")
    func unmeasuredDrift() async throws {
        let group = try await DaemonRoom(names: ["ann"], media: try await TestMedia.file(.audioVideo), room: "words-drift")
        defer { group.stopInBackground() }
        try await group.clients[0].request(.play)
        try await group.clients[0].request(.seek(seconds: 40, mode: .absolute))
        _ = try await group.clients[0].waitForStatus(timeout: 10) { !$0.paused && ($0.position ?? 0) > 40.5 }
        // bob joins 40 s behind the group: his first reading, before he seeks to it, is -40 s.
        let bob = try await group.add("bob", waitJoined: false)
        var seen: [String] = []
        var measured = false
        let deadline = monotonicNow() + 20
        while !measured, monotonicNow() < deadline {
            for daemon in [group.daemons[0], group.daemons[bob]] where ControlClient.isListening(path: daemon.controlPath) {
                let result = try await runBinary("cowatch", ["participants", "--socket", daemon.controlPath])
                for line in driftLines(result.stdout, of: "bob") {
                    seen.append(line)
                    if milliseconds(in: line) != nil { measured = true }
                }
            }
            await pause(0.1)
        }
        #expect(measured, "bob's drift was never shown: \(seen)")
        #expect(seen.contains { $0.contains("drift not measured yet") }, "\(seen)")
        for line in seen {
            #expect(!line.contains("drift ?"), "\(line)")
            if let drift = milliseconds(in: line) {
                #expect(abs(drift) <= 1000, "a drift shown before bob aligned: \(line)")
            } else {
                #expect(line.contains("drift not measured yet"), "\(line)")
            }
        }
    }

    @Test("open: says what it opens, not the previous media's title, position and duration")
    func openSaysWhat() async throws {
        let http = try SlowMediaServer(file: try await TestMedia.file(.videoOnly))
        defer { http.close() }
        let group = try await DaemonRoom(names: ["cat"], media: try await TestMedia.file(.audioVideo), room: "words-open")
        defer { group.stopInBackground() }
        try await group.clients[0].request(.play)
        _ = try await group.clients[0].waitForStatus(timeout: 10) { !$0.paused && ($0.position ?? 0) > 2 }

        let opened = try await runBinary("cowatch", ["open", http.url, "--title", "Second film", "--socket", group.daemons[0].controlPath])
        #expect(opened.status == 0, "\(opened.stderr)")
        #expect(
            opened.stdout == "opening Second film (\(http.url)) for everyone; the group starts together once all have it\n",
            "\(opened.stdout)")
        #expect(!opened.stdout.contains("av-75s"), "the old media's title: \(opened.stdout)")
        #expect(!opened.stdout.contains("0:01:15"), "the old media's duration: \(opened.stdout)")

        // Alone: the daemon just switches its player.
        let alone = try await DaemonProcess(name: "dot", media: try await TestMedia.file(.audioVideo), extraArguments: ["--no-osd"])
        defer { alone.terminateInBackground() }
        let local = try await TestMedia.file(.videoOnly)
        let switched = try await runBinary("cowatch", ["open", local, "--socket", alone.controlPath])
        #expect(switched.status == 0, "\(switched.stderr)")
        #expect(switched.stdout == "opening \(local)\n", "\(switched.stdout)")
    }

    @Test("seek while the group plays: \"seeking to …; the group resumes together\", not the instant's \"paused\"")
    func seekWhilePlaying() async throws {
        let group = try await DaemonRoom(names: ["eve", "fay"], media: try await TestMedia.file(.audioVideo), room: "words-seek")
        defer { group.stopInBackground() }
        try await group.clients[0].request(.play)
        _ = try await group.clients[1].waitForStatus(timeout: 10) { !$0.paused && ($0.position ?? 0) > 1 }

        let sought = try await runBinary("cowatch", ["seek", "0:40", "--socket", group.daemons[0].controlPath])
        #expect(sought.status == 0, "\(sought.stderr)")
        #expect(!sought.stdout.contains("paused"), "\(sought.stdout)")
        #expect(
            sought.stdout.contains("  seeking to 0:00:40; the group resumes together\n")
                || sought.stdout.contains("  playing at 0:00:4"),
            "\(sought.stdout)")
        // And so it does.
        for client in group.clients {
            _ = try await client.waitForStatus(timeout: 10) { !$0.paused && ($0.position ?? 0) >= 40 }
        }

        // Paused, a seek stays paused, and says so.
        try await group.clients[0].request(.pause)
        let paused = try await runBinary("cowatch", ["seek", "20", "--socket", group.daemons[0].controlPath])
        #expect(paused.status == 0, "\(paused.stderr)")
        #expect(paused.stdout.contains("  paused at 0:00:20 / 0:01:15"), "\(paused.stdout)")
    }

    @Test("a misspelt command is named with the nearest ones, as a usage error")
    func misspeltCommand() async throws {
        let paus = try await runBinary("cowatch", ["paus"])
        #expect(paus.status == 64)
        #expect(paus.stderr == "cowatch: unknown command paus — did you mean pause?\n", "\(paus.stderr)")
        // Connection options before it are moved after it, as for a real command.
        let moved = try await runBinary("cowatch", ["--socket", nowhere, "jion"])
        #expect(moved.status == 64)
        #expect(moved.stderr.contains("unknown command jion — did you mean join?"), "\(moved.stderr)")
        let prefix = try await runBinary("cowatch", ["partic", "--json"])
        #expect(prefix.stderr.contains("unknown command partic — did you mean participants?"), "\(prefix.stderr)")
        let far = try await runBinary("cowatch", ["xyzzy"])
        #expect(far.status == 64)
        #expect(far.stderr.contains("unknown command xyzzy; cowatch --help lists the commands"), "\(far.stderr)")
        // Real commands and help are untouched.
        let real = try await runBinary("cowatch", ["pause", "--socket", nowhere])
        #expect(real.status == 1)
        #expect(real.stderr.contains("no cowatchd is listening on \(nowhere)"), "\(real.stderr)")
        let help = try await runBinary("cowatch", ["help", "pause"])
        #expect(help.status == 0, "\(help.stderr)")
    }

    @Test("send: a payload that starts like JSON but is not is refused, with how to send it as a string")
    func malformedPayload() async throws {
        for payload in [#"{"q":"#, "[1, 2", "  {oops}"] {
            let refused = try await runBinary("cowatch", ["send", "topic", payload, "--socket", nowhere])
            #expect(refused.status == 64, "\(payload): \(refused.stderr)")
            #expect(refused.stderr.contains("is not valid JSON (invalid-json)"), "\(refused.stderr)")
            #expect(refused.stderr.contains("to send it as a string, quote it as one: cowatch send topic '"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("no cowatchd is listening"), "sent anyway: \(refused.stderr)")
        }
        let refused = try await runBinary("cowatch", ["send", "topic", #"{"q":"#, "--socket", nowhere])
        #expect(refused.stderr.contains(#"cowatch send topic '"{\"q\":"'"#), "\(refused.stderr)")
        // Valid JSON, a bare word, and the quoted form suggested all pass the CLI's checks.
        for payload in [#"{"q":1}"#, "[1, 2]", "hello", #""{\"q\":""#, "  "] {
            let sent = try await runBinary("cowatch", ["send", "topic", payload, "--socket", nowhere])
            #expect(sent.status == 1, "\(payload): \(sent.stderr)")
            #expect(sent.stderr.contains("no cowatchd is listening on \(nowhere)"), "\(payload): \(sent.stderr)")
        }
    }

    @Test("chat WORDS: one line saying it went to the room")
    func chatConfirms() async throws {
        let group = try await DaemonRoom(names: ["gus", "hal"], media: try await TestMedia.file(.audioVideo), room: "words-chat")
        defer { group.stopInBackground() }
        let said = try await runBinary("cowatch", ["chat", "hello", "there", "--socket", group.daemons[0].controlPath])
        #expect(said.status == 0, "\(said.stderr)")
        #expect(said.stdout == "sent to the room: hello there\n", "\(said.stdout)")
        let chat = try await group.listeners[1].waitForEvent(named: "chat", timeout: 10) { $0.fields["text"] == "hello there" }
        #expect(chat != nil)
    }
}
