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
///
/// With `--link-rate`, one more room a rate: the sharer and the own-copy viewer on unimpaired
/// links, one receiver whose link to the server is capped both ways at that rate (an
/// `ImpairedLink` paces each connection on its own, so the stream gets the whole cap). The
/// own-copy viewer sends `play` from 0 as soon as the receiver has the film open; then, sampled
/// about every 50 ms until the own copy is 1 s from the film's end (at most 90 s after `play`):
/// - receiver playing: from `play` until the receiver is first seen playing;
/// - stalled: the receiver's picture stands while the group's goes on: mpv `paused-for-cache`
///   (or its room status `stall` buffering), an mpv seek not landed (the catch-up seeks its
///   daemon orders are no stall to the room), no audio clock, or paused while the own copy
///   plays. Stalls are counted, and their time summed, in the first 30 s after `play`, from
///   when the receiver first plays;
/// - smooth: a stretch of at least 10 s of film (the receiver's audio-pts advancing 10 s) in
///   which no sample saw it stalled, paused, with a room `stall`, or more than 50 ms from the own
///   copy. "First 10 s smooth": from `play` to the start of the first such stretch; "smooth to
///   the end": to the start of the stretch that lasts to the end of sampling; "never" if none;
/// - arriving: what its stream received in the first 30 s after `play` (`get_shares`), a second.
struct ShareBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "A film streamed to members who lack it: time to first frame, fill rate to 1, 4, 9 receivers, seek to playing, skew against an own copy, RSS.")

    @Option(help: "Receivers per room, comma-separated (empty: none of these rows).") var receivers = "1,4,9"
    @Option(help: "cowatchd --share-rate for the sharer (e.g. 3M or 3M,1M; default: unlimited).") var shareRate: String?
    @Option(help: "Seconds of skew sampling per room.") var duration = 5.0
    @Option(
        help: ArgumentHelp(
            "A row with one receiver whose link is capped at this many bits a second (e.g. 20M); repeatable or comma-separated.",
            discussion: "k, M and G are powers of 1000, as link rates are quoted."))
    var linkRate: [String] = []

    /// The `--link-rate` values, bits a second.
    private var linkRates: [Double] {
        get throws {
            try linkRate.flatMap { $0.split(separator: ",") }.map { text in
                let scales: [Character: Double] = ["k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9]
                var number = Substring(text.trimmingCharacters(in: .whitespaces))
                var scale = 1.0
                if let last = number.last, let unit = scales[last] {
                    scale = unit
                    number = number.dropLast()
                }
                guard let value = Double(number), value.isFinite, value > 0 else {
                    throw ValidationError("--link-rate takes bits a second such as 20M, not \(text)")
                }
                return value * scale
            }
        }
    }

    func validate() throws {
        _ = try linkRates
    }

    func run() throws {
        let film = try TestMedia.streamFilm()
        let size = Double((try? FileManager.default.attributesOfItem(atPath: film)[.size] as? Int) ?? 0)
        let counts = receivers.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 > 0 }
        if !counts.isEmpty { try receiverRows(film: film, counts: counts) }
        let rates = try linkRates
        if !rates.isEmpty {
            var rows = [
                "| link, each way | first frame | play → receiver playing | play → first 10 s smooth | play → smooth to the end | stalls in the first 30 s (time stalled) | arriving, mean over the first 30 s |",
                "|---|---|---|---|---|---|---|",
            ]
            for rate in rates { rows.append(try linkRow(film: film, bitsPerSecond: rate)) }
            print(rows.joined(separator: "\n"))
        }
        print("film: \(format3(size / 1_048_576)) MiB at \(format3(size * 8 / 80 / 1_000_000)) Mbit/s; share rate \(shareRate ?? "unlimited"); \(ProcessInfo.processInfo.activeProcessorCount) cores, loopback, TLS")
    }

    /// One room a receiver count: the first table.
    private func receiverRows(film: String, counts: [Int]) throws {
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
            let filled = try waitForFill(room.clients[2...].map { $0 }, bytes: 64 << 20, timeout: fillTimeout(receivers: count))
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
    }

    /// Seconds the receivers may take to fill 64 MiB each: 120, or more when `--share-rate`
    /// caps the sharer (3M for 9 receivers is over three minutes).
    private func fillTimeout(receivers: Int) -> Double {
        guard let shareRate else { return 120 }
        let parts = shareRate.split(separator: ",").map { Double(RoomJournal.parseSize(String($0)) ?? 0) }
        // 0 is unlimited, as cowatchd reads it.
        let total = parts.first.flatMap { $0 > 0 ? $0 / Double(receivers) : nil } ?? .infinity
        let each = parts.dropFirst().first.flatMap { $0 > 0 ? $0 : nil } ?? .infinity
        let perReceiver = min(total, each)
        return perReceiver.isFinite ? max(120, 2 * Double(64 << 20) / perReceiver + 30) : 120
    }

    /// One room with one receiver behind a link capped at `bitsPerSecond` both ways: its table row.
    private func linkRow(film: String, bitsPerSecond: Double) throws -> String {
        let mbits = format3(bitsPerSecond / 1_000_000)
        log("one receiver on a \(mbits) Mbit/s link")
        let free = LinkImpairment()
        let capped = LinkImpairment(bytesPerSecond: bitsPerSecond / 8)
        // Daemon i gets links[i % 3]: the sharer and the own copy free, the receiver capped.
        let room = try BenchRoom(
            media: film, room: "link\(Int(bitsPerSecond))", venue: .server(), links: [(free, free), (free, free), (capped, capped)],
            listeners: false, probes: true)
        defer { room.stop() }
        try room.add("viewer0", arguments: ["--share"] + (shareRate.map { ["--share-rate", $0] } ?? []), waitJoined: true)
        try room.add("viewer1", waitJoined: true)
        try waitForOffer(room.clients[1])
        let start = monotonicNow()
        try room.add("receiver0", media: "", waitJoined: false)
        try room.waitForParticipants(3, timeout: 60)
        let firstFrame = try waitForStream(room.clients[2], timeout: 60) - start

        let receiver = room.clients[2]
        func received() -> Int { (try? SharesReply(json: receiver.request(.getShares)))?.receiving?.received ?? 0 }
        let receivedAtPlay = received()
        try room.clients[1].request(.play)
        let playAt = monotonicNow()
        let window = 30.0, bound = 90.0, smoothSpan = 10.0, skewBound = 0.05
        var playing: Double?
        var stalls = 0
        var stalled = 0.0
        var stuck = false
        var lastSample = playAt
        var receivedInWindow: Int?
        var stretch: (at: Double, from: Double)?
        var firstSmooth: Double?
        var lastPosition = 0.0
        // Own copy first: the receiver's audio-pts is carried to the own copy's instant.
        let pair = SkewSampler(clients: [room.probes[1], room.probes[2]])
        while true {
            let now = monotonicNow()
            let t = now - playAt
            if t >= window, receivedInWindow == nil { receivedInWindow = received() - receivedAtPlay }
            let own = try? PlayerStatus(json: room.clients[1].request(.getStatus))
            // The last second is left out: a player at its end has no audio clock to read.
            if t >= bound || own?.eof == true || (own?.position ?? 0) >= (own?.duration ?? .infinity) - 1 { break }
            let status = try? PlayerStatus(json: receiver.request(.getStatus))
            let cacheWait = try? room.probes[2].request(.getProperty("paused-for-cache"), timeout: 2).boolValue
            let seeking = try? room.probes[2].request(.getProperty("seeking"), timeout: 2).boolValue
            let round = pair.round(rate: 1)
            let paused = status?.paused != false
            // A stall is the receiver's picture standing while the group's goes on: mpv waiting
            // for its cache, or (the daemon reports neither as a stall) a catch-up seek that
            // has not landed, or held paused while the own copy plays.
            let nowStuck =
                cacheWait == true || status?.room?.stall == "buffering" || seeking == true || round == nil
                || (paused && own?.paused == false)
            if playing == nil, !nowStuck, !paused { playing = t }
            if playing != nil, t <= window {
                if nowStuck && !stuck { stalls += 1 }
                if stuck { stalled += min(now, playAt + window) - lastSample }
            }
            stuck = playing != nil && nowStuck
            lastSample = now
            if let round, !nowStuck, !paused, status?.room?.stall == nil, abs(round.positions[1] - round.positions[0]) <= skewBound {
                lastPosition = round.positions[1]
                if let begun = stretch {
                    if firstSmooth == nil, lastPosition - begun.from >= smoothSpan { firstSmooth = begun.at }
                } else {
                    stretch = (t, lastPosition)
                }
            } else {
                stretch = nil
            }
            sleepSeconds(0.05)
        }
        let toEnd = stretch.flatMap { lastPosition - $0.from >= smoothSpan ? $0.at : nil }
        func seconds(_ value: Double?) -> String { value.map { "\(format3($0)) s" } ?? "never" }
        let arriving = receivedInWindow.map { "\(format3(Double($0) * 8 / window / 1_000_000)) Mbit/s" } ?? "–"
        let cells = [
            "\(mbits) Mbit/s", "\(format3(firstFrame)) s", seconds(playing), seconds(firstSmooth), seconds(toEnd),
            "\(stalls) (\(format3(stalled)) s)", arriving,
        ]
        return "| " + cells.joined(separator: " | ") + " |"
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
