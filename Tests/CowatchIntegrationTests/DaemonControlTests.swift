import CowatchClient
import CowatchCore
import Foundation
import CowatchTestSupport
import Testing

/// One real `cowatchd` on a real file, driven through its control socket.
/// Serialized: the checks use blocking sockets and timing, and the CI machine has two cores.
@Suite("cowatchd over its control socket", .serialized, .realProcesses)
struct DaemonControlTests {
    /// One frame at 25 fps, plus the few ms by which mpv's reported position can sit off the frame grid.
    static let oneFrame = 0.040 + 0.005

    func startDaemon(_ name: String = "alice", paused: Bool = true) async throws -> DaemonProcess {
        try await DaemonProcess(name: name, media: try await TestMedia.file(.audioVideo), extraArguments: paused ? ["--paused"] : [])
    }

    @Test("status reports position, paused, speed, duration, media, title, name, eof")
    func status() async throws {
        let daemon = try await startDaemon()
        let client = try daemon.client()
        let data = try await client.request(.getStatus)
        for key in ["position", "paused", "speed", "duration", "media", "title", "name", "eof", "protocol_version"] {
            #expect(data[key] != nil, "missing \(key)")
        }
        let status = try PlayerStatus(json: data)
        #expect(status.name == "alice")
        #expect(status.paused)
        #expect(status.speed == 1)
        #expect(abs((status.duration ?? 0) - 75) < 0.5)
        #expect(status.media.hasSuffix("av-75s.mkv"))
        #expect(status.title == "av-75s.mkv")
        #expect(status.eof == false)
        #expect(await daemon.terminate() == 0)
    }

    @Test("play advances the position, pause holds it")
    func playAndPause() async throws {
        let daemon = try await startDaemon()
        let client = try daemon.client()
        let start = try await client.status().position ?? -1
        try await client.request(.play)
        let moving = try await client.waitForStatus(timeout: 5) { ($0.position ?? 0) > start + 0.5 }
        #expect(!moving.paused)
        try await client.request(.pause)
        let held = try await client.status().position ?? 0
        await pause(0.4)
        let later = try await client.status()
        #expect(later.paused)
        #expect(abs((later.position ?? 0) - held) < 0.001)
        try await client.request(.togglePause)
        #expect(try await client.status().paused == false)
    }

    @Test("absolute and relative seeks land within one frame of the target")
    func seeks() async throws {
        let daemon = try await startDaemon()
        let client = try daemon.client()
        for target in [30.0, 61.0, 5.0, 44.44] {
            let after = try PlayerStatus(json: try await client.request(.seek(seconds: target, mode: .absolute)))
            #expect(abs((after.position ?? -1) - target) <= Self.oneFrame, "absolute \(target) -> \(after.position ?? -1)")
        }
        let from = try await client.status().position ?? 0
        let back = try PlayerStatus(json: try await client.request(.seek(seconds: -10, mode: .relative)))
        #expect(abs((back.position ?? -1) - (from - 10)) <= Self.oneFrame)
        let forward = try PlayerStatus(json: try await client.request(.seek(seconds: 20, mode: .relative)))
        #expect(abs((forward.position ?? -1) - (from + 10)) <= Self.oneFrame)
    }

    @Test("speed changes the rate at which the position advances")
    func speed() async throws {
        let daemon = try await startDaemon()
        let client = try daemon.client()
        try await client.request(.speed(2))
        #expect(try await client.status().speed == 2)
        try await client.request(.play)
        try await client.waitForStatus(timeout: 5) { ($0.position ?? 0) > 0.3 }
        let p0 = try await client.status().position ?? 0
        let t0 = monotonicNow()
        await pause(1)
        let p1 = try await client.status().position ?? 0
        let rate = (p1 - p0) / (monotonicNow() - t0)
        #expect(rate > 1.6 && rate < 2.4, "measured rate \(rate)")
    }

    @Test("two clients both see events caused by either")
    func eventsReachEveryClient() async throws {
        let daemon = try await startDaemon()
        let first = try daemon.client()
        let second = try daemon.client()
        _ = try await first.status()
        _ = try await second.status()
        try await first.request(.play)
        for client in [first, second] {
            let event = try await client.waitForEvent(named: "state", timeout: 5) { $0.fields["paused"] == false }
            #expect(event != nil)
        }
        try await second.request(.seek(seconds: 20, mode: .absolute))
        for client in [first, second] {
            let event = try await client.waitForEvent(named: "state", timeout: 5) {
                abs(($0.fields["position"]?.numberValue ?? 0) - 20) < 0.5
            }
            #expect(event != nil)
        }
    }

    @Test("bad input gets a stable error code and the connection stays usable")
    func badInput() async throws {
        let daemon = try await startDaemon()
        let client = try daemon.client()
        let cases: [(String, String)] = [
            ("{oops", "invalid-json"),
            ("\u{0}\u{7f}\u{1b}[2J", "invalid-json"),
            ("42", "invalid-request"),
            (#"{"command":"pause","request_id":1}"#, "invalid-request"),
            (#"{"command":["explode"],"request_id":2}"#, "unknown-command"),
            (#"{"command":["pause",1,2],"request_id":3}"#, "wrong-argument-count"),
            (#"{"command":["seek","ten"],"request_id":4}"#, "invalid-argument"),
            (#"{"command":["seek","NaN"],"request_id":5}"#, "invalid-argument"),
            (#"{"command":["seek",1e999],"request_id":6}"#, "invalid-json"),
            (#"{"command":["speed",-2],"request_id":7}"#, "invalid-argument"),
            (#"{"command":["seek",-3,"absolute"],"request_id":8}"#, "invalid-argument"),
            (#"{"command":["get_property","no-such-property"],"request_id":9}"#, "property-unavailable"),
        ]
        for (line, code) in cases {
            try await client.sendLine(Array(line.utf8))
            let reply = try #require(try await client.readReply(timeout: 5))
            guard case .failure(let error) = reply.result else {
                Issue.record("\(line) succeeded")
                continue
            }
            #expect(error.code.rawValue == code, "\(line)")
        }
        // Still usable after all that.
        #expect(try await client.status().name == "alice")
    }

    @Test("an over-long line closes only that connection")
    func overlongLine() async throws {
        let daemon = try await startDaemon()
        let victim = try daemon.client()
        let bystander = try daemon.client()
        _ = try await bystander.status()
        try await victim.sendRaw([UInt8](repeating: UInt8(ascii: "a"), count: controlMaxLineBytes + 10))
        let reply = try #require(try await victim.readReply(timeout: 5))
        #expect(reply.result.failureCode == "line-too-long")
        await #expect(throws: CowatchError.self) { _ = try await victim.readLine(deadline: monotonicNow() + 5) }
        #expect(try await bystander.status().name == "alice")
        #expect(try await daemon.client().status().name == "alice")
    }

    @Test("a client that never reads does not stall the daemon")
    func slowClient() async throws {
        let daemon = try await startDaemon()
        let sleeper = try daemon.client()
        _ = sleeper  // connected, never reads
        let client = try daemon.client()
        for index in 0..<200 {
            try await client.request(.seek(seconds: Double(index % 50), mode: .absolute))
        }
        #expect(try await client.status().name == "alice")
    }

    @Test("end of file holds at the end, sends end-of-file, and the daemon stays up")
    func endOfFile() async throws {
        let daemon = try await startDaemon()
        let client = try daemon.client()
        let duration = try await client.status().duration ?? 75
        try await client.request(.seek(seconds: duration - 1, mode: .absolute))
        try await client.request(.play)
        let event = try await client.waitForEvent(named: "end-of-file", timeout: 10)
        #expect(event != nil)
        let status = try await client.status()
        #expect(status.eof)
        #expect(abs((status.position ?? 0) - duration) < 0.5)
        try await client.request(.seek(seconds: 10, mode: .absolute))
        #expect(try await client.status().eof == false)
    }

    @Test("SIGTERM shuts down gracefully and removes the socket")
    func sigterm() async throws {
        let daemon = try await startDaemon()
        #expect(FileManager.default.fileExists(atPath: daemon.controlPath))
        #expect(await daemon.terminate() == 0)
        #expect(!FileManager.default.fileExists(atPath: daemon.controlPath))
    }

    @Test("SIGTERM while clients are still connecting exits cleanly (no connection left unfinished)")
    func sigtermDuringConnects() async throws {
        for round in 0..<8 {
            let daemon = try await startDaemon("race\(round)")
            let path = daemon.controlPath
            let connector = Thread {
                for _ in 0..<30 { _ = ControlClient.isListening(path: path) }
            }
            connector.start()
            // SIGTERM a different number of microseconds after the connections start: timed on a
            // thread of its own (`offPool`), as a resumed task could not be this precise.
            let pid = daemon.pid
            await offPool { usleep(UInt32(round) * 300); kill(pid, SIGTERM) }
            #expect(await daemon.waitForExit(timeout: 10) == 0, "round \(round): \(daemon.stderr.prefix(300))")
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }

    @Test("quit stops the daemon and removes the socket")
    func quit() async throws {
        let daemon = try await startDaemon()
        try await daemon.client().request(.quit)
        #expect(await daemon.waitForExit(timeout: 10) == 0)
        #expect(!FileManager.default.fileExists(atPath: daemon.controlPath))
    }

    @Test("a second daemon on a live socket refuses; a stale socket is replaced")
    func socketOwnership() async throws {
        let first = try await startDaemon()
        let second = try await DaemonProcess(
            name: "alice", media: try await TestMedia.file(.audioVideo), directory: first.directory, waitUntilReady: false)
        #expect(await second.waitForExit(timeout: 20) == 1)
        #expect(second.stderr.contains("already running") || second.stderr.contains("another cowatchd"))
        #expect(try await first.client().status().name == "alice")

        // Kill the first without letting it clean up: its socket file stays behind, stale.
        kill(first.pid, SIGKILL)
        _ = await first.waitForExit(timeout: 10)
        #expect(FileManager.default.fileExists(atPath: first.controlPath))
        let third = try await DaemonProcess(name: "alice", media: try await TestMedia.file(.audioVideo), directory: first.directory)
        #expect(try await third.client().status().name == "alice")
    }

    @Test("flags win over the environment, which wins over the config file")
    func precedence() async throws {
        let directory = DaemonProcess.makeDirectory()
        let file = directory + "/conf.json"
        try #"{"paused": true, "osd": false}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let media = try await TestMedia.file(.audioVideo)
        func paused(_ arguments: [String], _ environment: [String: String]) async throws -> Bool {
            let daemon = try await DaemonProcess(
                name: "p", media: media, extraArguments: ["--config", file] + arguments, directory: DaemonProcess.makeDirectory(),
                environment: environment)
            return try await daemon.client().status().paused
        }
        #expect(try await paused([], [:]) == true)
        #expect(try await paused([], ["COWATCH_PAUSED": "false"]) == false)
        #expect(try await paused(["--paused"], ["COWATCH_PAUSED": "false"]) == true)
    }

    @Test(
        "bad configuration: one line naming the problem, exit 2",
        arguments: [
            (["--host", "0"], [:], "--host"),
            (["--host", "1:2", "--join", "h:3"], [:], "either"),
            (["--control", "/tmp/" + String(repeating: "x", count: 120)], [:], "107 bytes"),
            (["--mpv", "=nokey"], [:], "KEY=VALUE"),
            ([], ["COWATCH_SEEK_TIMEOUT": "-3"], "seek-timeout"),
            ([], ["COWATCH_OSD": "maybe"], "osd"),
            (["--log-level", "loud"], [:], "log-level"),
            (["--room", "no spaces"], [:], "room"),
            (["--on-end", "explode"], [:], "on-end"),
            (["--type", "film"], [:], "type"),
            (["--title", ""], [:], "title"),
            (["--join", "127.0.0.1:9", "--play-when-ready"], [:], "play-when-ready"),
            (["--host", "7433", "--wait-timeout", "7200"], [:], "wait-timeout"),
            (["--player-nice", "25"], [:], "player-nice"),
            (["--player-realtime", "0"], [:], "player-realtime"),
            ([], ["COWATCH_PLAYER_NICE": "high"], "player-nice"),
            (["--join", "127.0.0.1:9", "--managed"], [:], "managed"),
            (["--host", "7433", "--managed", "--unmanaged"], [:], "contradict"),
        ] as [([String], [String: String], String)])
    func badConfiguration(arguments: [String], environment: [String: String], mentions: String) async throws {
        let daemon = try await DaemonProcess(
            name: "cfg", media: try await TestMedia.file(.audioVideo), extraArguments: arguments, environment: environment,
            waitUntilReady: false)
        #expect(await daemon.waitForExit(timeout: 20) == 2)
        let lines = daemon.stderr.split(separator: "\n")
        #expect(lines.count == 1 && daemon.stderr.contains(mentions), "\(daemon.stderr)")
    }

    @Test("a misspelt key in the config file is refused, naming it")
    func unknownConfigKey() async throws {
        let directory = DaemonProcess.makeDirectory()
        let file = directory + "/conf.json"
        try #"{"pasued": true, "drift": {"interval": 0.05, "gain": 2}}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let daemon = try await DaemonProcess(
            name: "typo", media: try await TestMedia.file(.audioVideo), extraArguments: ["--config", file], waitUntilReady: false)
        #expect(await daemon.waitForExit(timeout: 20) == 2)
        #expect(daemon.stderr.contains(#""drift.gain""#) && daemon.stderr.contains(#""pasued""#), "\(daemon.stderr)")
    }

    @Test("media that cannot be opened: the daemon's own fallback URL is tried")
    func ownFallback() async throws {
        let fallback = try await TestMedia.file(.videoOnly)
        let daemon = try await DaemonProcess(
            name: "fb", media: "/nonexistent/film.mkv", extraArguments: ["--fallback-url", fallback, "--paused"])
        let status = try await daemon.client().status()
        #expect(status.media == fallback)
        #expect(status.duration != nil)
    }

    @Test("media that does not exist: one clear line, non-zero exit")
    func missingMedia() async throws {
        let daemon = try await DaemonProcess(name: "ghost", media: "/nonexistent/film.mkv", waitUntilReady: false)
        let status = await daemon.waitForExit(timeout: 20)
        #expect(status != nil && status != 0)
        let lines = daemon.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(daemon.stderr)")
        #expect(daemon.stderr.contains("/nonexistent/film.mkv"))
        #expect(daemon.stderr.contains("failed"))
        #expect(!FileManager.default.fileExists(atPath: daemon.controlPath))
    }

    @Test("the CLI drives the daemon and fails clearly when none runs")
    func cli() async throws {
        let daemon = try await startDaemon()
        let run = { (arguments: [String]) async throws -> (Int32, String, String) in
            try await runProcess(try Binaries.path("cowatch"), arguments + ["--socket", daemon.controlPath])
        }
        let (seekStatus, _, _) = try await run(["seek", "1:02"])
        #expect(seekStatus == 0)
        #expect(abs((try await daemon.client().status().position ?? 0) - 62) <= Self.oneFrame)
        let (relStatus, _, _) = try await run(["seek", "-10"])
        #expect(relStatus == 0)
        #expect(abs((try await daemon.client().status().position ?? 0) - 52) <= Self.oneFrame)
        let (_, json, _) = try await run(["status", "--json"])
        #expect(try PlayerStatus(json: try JSONValue.parse(Array(json.utf8))).name == "alice")
        let (_, text, _) = try await run(["status"])
        #expect(text.contains("paused at 0:00:52"))
        let (speedStatus, _, _) = try await run(["speed", "1.5"])
        #expect(speedStatus == 0)
        #expect(try await daemon.client().status().speed == 1.5)
        await daemon.terminate()
        let (downStatus, _, downError) = try await run(["status"])
        #expect(downStatus == 1)
        #expect(downError.hasPrefix("cowatch: no cowatchd is listening"))
        #expect(downError.split(separator: "\n").count == 1)
    }
}

extension Result where Failure == CowatchError {
    var failureCode: String? {
        if case .failure(let error) = self { error.code.rawValue } else { nil }
    }
}

/// Runs a program to completion, the test's task suspended meanwhile; returns status, stdout, stderr.
func runProcess(_ path: String, _ arguments: [String]) async throws -> (Int32, String, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let finished = try await runToEnd(process)
    return (finished.status, finished.stdout, finished.stderr)
}
