import ArgumentParser
import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation

/// `cowatch-bench share`: a film streamed from one member to those who lack it (issue 25).
///
/// One room a row: viewer0 shares the 200 MB film (`TestMedia.streamFilm()`, 20 Mbit/s), viewer1
/// plays its own copy, then N receivers join without media. Measured in the same run:
/// - first frame: from a receiver's process start until its player has the streamed film open;
/// - fill: the sharer's aggregate upload while every receiver fills its caches (mpv's minute
///   ahead, bounded at 64 MiB, and the daemon's 32 MiB), from the first receiver's join;
/// - seek → playing: from a seek request while playing until each player is past the target,
///   for the own-copy viewer and the slowest receiver;
/// - skew p99 of every receiver against the own-copy viewer once playing (audio-pts, through
///   each player's own mpv IPC socket), beside own copy vs the sharer as the baseline;
/// - RSS growth of a receiver's daemon and of the server.
struct ShareBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "A film streamed to members who lack it: time to first frame, fill rate to 1, 4, 9 receivers, seek to playing, skew against an own copy, RSS.")

    @Option(help: "Receivers per room, comma-separated.") var receivers = "1,4,9"
    @Option(help: "cowatchd --share-rate for the sharer (e.g. 3M or 3M,1M; default: unlimited).") var shareRate: String?
    @Option(help: "Seconds of skew sampling per room.") var duration = 5.0

    func run() throws {
        let film = try TestMedia.streamFilm()
        let size = Double((try? FileManager.default.attributesOfItem(atPath: film)[.size] as? Int) ?? 0)
        let counts = receivers.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
        var rows = [
            "| receivers | first frame p50 / max | fill, sharer's upload | seek → playing, own copy / slowest receiver | skew p99 own vs sharer | skew p99 receivers vs own copy | receiver RSS growth (max) | server RSS growth |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for count in counts {
            log("\(count) receivers")
            let room = try BenchRoom(media: film, room: "share\(count)", venue: .server(), listeners: false, probes: true)
            defer { room.stop() }
            try room.add("viewer0", arguments: ["--share"] + (shareRate.map { ["--share-rate", $0] } ?? []), waitJoined: true)
            try room.add("viewer1", waitJoined: true)
            try waitForOffer(room.clients[1])
            let serverPID = room.server.process.processIdentifier
            let serverBefore = ProcessMemory.resident(pid: serverPID) ?? 0

            // Receivers join without media; each one's first frame is timed from its start.
            var firstFrames: [Double] = []
            let fillStart = monotonicNow()
            var starts: [Double] = []
            for index in 0..<count {
                starts.append(monotonicNow())
                try room.add("receiver\(index)", media: "", waitJoined: false)
            }
            try room.waitForParticipants(count + 2, timeout: 60)
            for index in 0..<count {
                firstFrames.append(try waitForStream(room.clients[2 + index], timeout: 60) - starts[index])
            }
            let receiverBefore = (0..<count).map { ProcessMemory.resident(pid: room.daemons[2 + $0].pid) ?? 0 }
            // Paused: every receiver fills its caches; the sharer's upload is what they got.
            let filled = try waitForFill(room.clients[2...].map { $0 }, bytes: 64 << 20, timeout: 120)
            let fill = filled.bytes / max(0.001, filled.at - fillStart)

            try room.clients[0].request(.play)
            sleepSeconds(3)
            let ownVsSharer = SkewSampler(clients: [room.probes[1], room.probes[0]]).sample(count: Int(duration / 0.05), interval: 0.05, rate: 1)
            var receiverSkews: [Double] = []
            for index in 0..<count {
                receiverSkews += SkewSampler(clients: [room.probes[1], room.probes[2 + index]])
                    .sample(count: max(4, Int(duration / 0.05) / count), interval: 0.05, rate: 1)
            }
            // Seek while playing: own copy against the slowest receiver.
            let target = 50.0
            let seekStart = monotonicNow()
            try room.clients[1].request(.seek(seconds: target, mode: .absolute), timeout: 30)
            var landed = Array(repeating: Double.infinity, count: count + 2)
            let deadline = monotonicNow() + 30
            while monotonicNow() < deadline, landed.contains(.infinity) {
                for index in 1..<(count + 2) where landed[index] == .infinity {
                    if let pts = try? room.probes[index].request(.getProperty("time-pos"), timeout: 2).numberValue, pts > target + 0.1, pts < target + 5 {
                        landed[index] = monotonicNow() - seekStart
                    }
                }
                usleep(5000)
            }
            let receiverPeak = (0..<count).map { (ProcessMemory.resident(pid: room.daemons[2 + $0].pid) ?? 0) - receiverBefore[$0] }.max() ?? 0
            let serverGrowth = (ProcessMemory.resident(pid: serverPID) ?? 0) - serverBefore

            func ms(_ value: Double) -> String { value.isFinite ? "\(format3(value * 1000)) ms" : "never" }
            func p99(_ values: [Double]) -> String { "\(format3((Percentiles(values)?.p99 ?? .nan) * 1000)) ms" }
            let sortedFirst = firstFrames.sorted()
            let first = "\(format3(sortedFirst[sortedFirst.count / 2])) / \(format3(sortedFirst.last ?? 0)) s"
            let fillText = "\(format3(fill * 8 / 1_000_000)) Mbit/s"
            let slowest = landed[2...].max() ?? .infinity
            let seeks = "\(ms(landed[1])) / \(ms(slowest))"
            let receiverRSS = "\(format3(Double(receiverPeak) / 1_048_576)) MiB"
            let serverRSS = "\(format3(Double(serverGrowth) / 1_048_576)) MiB"
            let cells = [String(count), first, fillText, seeks, p99(ownVsSharer), p99(receiverSkews), receiverRSS, serverRSS]
            rows.append("| " + cells.joined(separator: " | ") + " |")
        }
        print(rows.joined(separator: "\n"))
        print("film: \(format3(size / 1_048_576)) MiB at \(format3(size * 8 / 80 / 1_000_000)) Mbit/s; share rate \(shareRate ?? "unlimited"); \(ProcessInfo.processInfo.activeProcessorCount) cores, loopback, TLS")
    }

    /// Waits until `client`'s room lists an offer.
    private func waitForOffer(_ client: ControlClient) throws {
        let deadline = monotonicNow() + 20
        while monotonicNow() < deadline {
            if let shares = try? SharesReply(json: client.request(.getShares)), !shares.offers.isEmpty { return }
            sleepSeconds(0.02)
        }
        throw TestFailure("the sharer's offer never reached the room")
    }

    /// Waits until `client`'s player has the streamed film open (its duration known); when.
    private func waitForStream(_ client: ControlClient, timeout: Double) throws -> Double {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if let status = try? PlayerStatus(json: client.request(.getStatus)), status.media.hasPrefix("http://127.0.0.1:"),
                status.duration != nil
            {
                return monotonicNow()
            }
            sleepSeconds(0.01)
        }
        throw TestFailure("a receiver never opened the stream")
    }

    /// Waits until every client has received `bytes` of its stream; the bytes all got and when.
    private func waitForFill(_ clients: [ControlClient], bytes: Int, timeout: Double) throws -> (bytes: Double, at: Double) {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            let received = clients.map { (try? SharesReply(json: $0.request(.getShares)))?.receiving?.received ?? 0 }
            if received.allSatisfy({ $0 >= bytes }) { return (Double(received.reduce(0, +)), monotonicNow()) }
            sleepSeconds(0.05)
        }
        throw TestFailure("the receivers did not get \(bytes) bytes each within \(timeout) s")
    }
}
