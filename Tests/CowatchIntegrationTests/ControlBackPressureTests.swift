import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Hostile control clients against a real `cowatchd`: its memory stays bounded whatever they do.
/// Serialized: the checks measure the daemon's memory and the CI machine has two cores.
@Suite("cowatchd's memory is bounded per control client", .serialized, .realProcesses(alone: true))
struct ControlBackPressureTests {
    /// Generous: the daemon must not grow by this much whatever a client does.
    static let growthBound = 64 * 1024 * 1024

    func startDaemon(_ name: String) async throws -> DaemonProcess {
        try await DaemonProcess(name: name, media: try await TestMedia.file(.audioVideo), extraArguments: ["--paused", "--no-osd"])
    }

    func line(_ command: [JSONValue], id: Int) -> [UInt8] {
        JSONValue.object(["command": .array(command), "request_id": .number(Double(id))]).encoded() + [UInt8(ascii: "\n")]
    }

    /// Reads lines until the reply to `id`, counting events and discarding them (so the test
    /// itself holds none); returns how many events came. Blocking: for `offPool`.
    @discardableResult
    func awaitReply(_ client: ControlClient, id: Int, timeout: Double = 10) throws -> Int {
        let deadline = monotonicNow() + timeout
        var events = 0
        while true {
            let value = try client.readJSON(deadline: deadline)
            if let reply = ControlReply(json: value), reply.requestID == .number(Double(id)) { return events }
            if (try? ControlEvent(json: value)) != nil { events += 1 }
        }
    }

    /// The test film with a `title` tag of `length` bytes: mpv's `media-title`, a string the
    /// daemon reads afresh for every request that asks for it.
    func titledMedia(length: Int) async throws -> String {
        let path = "/tmp/cowatch-test-media/av-75s-title-\(length).mkv"
        if FileManager.default.fileExists(atPath: path) { return path }
        let made = try await run(executable: "/usr/bin/env", [
            "ffmpeg", "-v", "error", "-y", "-i", try await TestMedia.file(.audioVideo), "-c", "copy",
            "-metadata", "title=" + String(repeating: "t", count: length), path + ".\(getpid()).part.mkv",
        ])
        guard made.status == 0 else { throw TestFailure("ffmpeg could not retitle the test film: \(made.stderr)") }
        rename(path + ".\(getpid()).part.mkv", path)
        return path
    }

    @Test("clients that never read while events flood cost the daemon bounded memory, and get the newest events")
    func eventFlood() async throws {
        let sleeperCount = 32
        let daemon = try await startDaemon("flood")
        let pid = daemon.process.processIdentifier
        // Connected, so every event is queued for them; they read nothing until the end.
        let sleepers = try (0..<sleeperCount).map { _ in try daemon.client() }
        let driver = try daemon.client()
        let before = try #require(ProcessMemory.resident(pid: pid))
        // Speed changes one after the other: each is a `state` event for every client (sent
        // faster, mpv reports several changes as one). Enough events to overflow every sleeper's
        // queue several times; bounded in time for a loaded machine (about 8 s alone on two
        // cores). Thousands of request-and-reply rounds, so on a thread of their own (`offPool`),
        // which returns what the checks below need.
        let flood = try await offPool { [self] () throws -> (id: Int, lastSpeed: Double, events: Int, peak: Int) in
            var peak = before
            var id = 0
            var lastSpeed = 1.0
            var events = 0
            let deadline = monotonicNow() + 20
            while events < 6 * 1024 && monotonicNow() < deadline {
                id += 1
                lastSpeed = 1 + Double(id % 97 + 1) / 100
                try driver.sendLine(line([.string("speed"), .number(lastSpeed)], id: id))
                events += try awaitReply(driver, id: id)
                if id % 64 == 0 { peak = max(peak, ProcessMemory.resident(pid: pid) ?? 0) }
            }
            return (id, lastSpeed, events, max(peak, ProcessMemory.resident(pid: pid) ?? 0))
        }
        let (id, lastSpeed, events, peak) = (flood.id, flood.lastSpeed, flood.events, flood.peak)
        print("event flood: \(id) speed changes, \(events) events to \(sleeperCount) clients that do not read; daemon RSS \(before / 1_048_576) MB before, peak \(peak / 1_048_576) MB")
        #expect(events > 4 * 1024, "too few events to tell: \(events)")
        #expect(peak - before < Self.growthBound, "grew by \((peak - before) / 1_048_576) MB")
        #expect(try await daemon.client().status().speed == lastSpeed, "the daemon answers a new client")

        // A sleeper that wakes up gets what fitted in its socket, then the newest events: the
        // oldest were dropped, so it gets fewer than were sent, and the last speed last.
        let sleeper = sleepers[0]
        var received = 0
        var lastSeen: Double?
        while let event = try await sleeper.nextEvent(timeout: 1) {
            received += 1
            if event.name == "state" { lastSeen = event.fields["speed"]?.numberValue }
        }
        print("event flood: a client that did not read then read \(received) of \(events) events")
        #expect(received < events * 2 / 3)
        #expect(received >= 1024)
        #expect(lastSeen == lastSpeed)
        #expect(await daemon.terminate() == 0)
    }

    @Test("a client that pipelines requests without reading is held up by its socket; no reply is lost")
    func pipelining() async throws {
        let daemon = try await DaemonProcess(
            name: "pipeliner", media: try await titledMedia(length: 32 * 1024), extraArguments: ["--paused", "--no-osd"])
        let pid = daemon.process.processIdentifier
        // A small request with a large reply that is cheap to make.
        let command: [JSONValue] = [.string("get_property"), .string("media-title")]
        let replyBytes = try await daemon.client().request(command).encoded().count
        let before = try #require(ProcessMemory.resident(pid: pid))
        var peak = before
        // A small send buffer keeps the requests waiting in the kernel few, so that reading the
        // replies back at the end is quick.
        let raw = try RawControlSocket(path: daemon.controlPath, sendBuffer: 4096)
        var pending: [UInt8] = []
        var offset = 0
        var lastID = 0
        var sentBytes = 0
        var blockedSince: Double?
        let deadline = monotonicNow() + 6
        // Send requests as fast as the daemon takes them, reading nothing.
        while monotonicNow() < deadline {
            if offset == pending.count {
                pending = []
                offset = 0
                for _ in 0..<batchSize {
                    lastID += 1
                    pending += line(command, id: lastID)
                }
            }
            let sent = try raw.trySend(pending[offset...])
            offset += sent
            sentBytes += sent
            if sent == 0 {
                blockedSince = blockedSince ?? monotonicNow()
                _ = await raw.wait(writable: true, timeout: 0.05)
                peak = max(peak, ProcessMemory.resident(pid: pid) ?? 0)
            } else {
                blockedSince = nil
            }
            if lastID % 256 == 0 { peak = max(peak, ProcessMemory.resident(pid: pid) ?? 0) }
        }
        peak = max(peak, ProcessMemory.resident(pid: pid) ?? 0)
        let requestBytes = line(command, id: lastID).count
        print("pipelining: ~\(sentBytes / requestBytes) requests for \(replyBytes)-byte replies sent in 6 s; daemon RSS \(before / 1_048_576) MB before, peak \(peak / 1_048_576) MB")
        #expect(peak - before < Self.growthBound, "grew by \((peak - before) / 1_048_576) MB")
        #expect(blockedSince != nil, "the daemon kept reading requests it could not answer")
        #expect(try await daemon.client().status().name == "pipeliner", "the daemon answers another client meanwhile")

        // Now read: every request whose line went out completely gets its reply, in order, none
        // lost. A line sent in part is finished first (while reading, or both sides would wait).
        var framer = LineFramer(maxLineBytes: 1 << 20)
        var expected = 1
        let lastComplete = offset == pending.count ? lastID : lastID - batchSize + pendingLinesSent(pending, offset)
        var finishLine = pending[offset...].firstIndex(of: UInt8(ascii: "\n")).map { pending[offset...$0] } ?? []
        let lastWanted = finishLine.isEmpty ? lastComplete : lastComplete + 1
        let readDeadline = monotonicNow() + 15
        while expected <= lastWanted && monotonicNow() < readDeadline {
            if !finishLine.isEmpty { finishLine = finishLine.dropFirst(try raw.trySend(finishLine)) }
            let ready = await raw.wait(writable: !finishLine.isEmpty, timeout: 0.5)
            guard ready.readable else { continue }
            for item in framer.feed(try raw.tryReceive()) {
                guard case .line(let bytes) = item, let reply = ControlReply(json: try JSONValue.parse(bytes)) else { continue }
                #expect(reply.requestID == .number(Double(expected)), "replies out of order or lost")
                expected += 1
            }
        }
        print("pipelining: \(expected - 1) replies read back of \(lastWanted)")
        #expect(expected - 1 == lastWanted)
        #expect(try await daemon.client().status().name == "pipeliner")
        #expect(await daemon.terminate() == 0)
    }

    private let batchSize = 16

    /// How many whole lines of `pending` lie before `offset`.
    private func pendingLinesSent(_ pending: [UInt8], _ offset: Int) -> Int {
        pending[..<offset].filter { $0 == UInt8(ascii: "\n") }.count
    }
}
