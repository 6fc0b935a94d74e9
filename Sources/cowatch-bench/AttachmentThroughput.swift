import ArgumentParser
import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation

/// `cowatch-bench journal`: how fast an attachment reaches a room, what it costs in memory, and
/// that playback sync does not notice.
struct AttachmentThroughput: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "journal",
        abstract: "Attachment throughput (one upload, then N concurrent fetches), daemon and server RSS, and skew during transfers.")

    @Option(help: "Receivers per room, comma-separated (each room has one more daemon: the uploader).")
    var receivers = "1,4,9"
    @Option(help: "Attachment size in MiB.")
    var megabytes = 100
    @Option(help: "Repeat every room this many times (figures pool all runs).")
    var repeats = 1
    @Option(help: "cowatchd --transfer-rate for every daemon (e.g. 16M; default: unlimited).")
    var transferRate: String?

    func run() throws {
        let media = try TestMedia.audioVideo()
        let directory = NSTemporaryDirectory() + "cowatch-bench-journal-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/payload.bin"
        let dd = Process()
        dd.executableURL = URL(fileURLWithPath: "/bin/dd")
        dd.arguments = ["if=/dev/urandom", "of=\(file)", "bs=1M", "count=\(megabytes)", "status=none"]
        try dd.run()
        dd.waitUntilExit()
        let bytes = Double(megabytes) * 1_048_576
        let counts = receivers.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }

        var rows: [String] = ["| receivers | upload | fetch, aggregate | daemon RSS growth (max) | server RSS growth | skew p99 quiet | skew p99 during fetch | observer's uncertainty p99, quiet / during | skew p99 during, rounds read within 0.5 ms (share) |", "|---|---|---|---|---|---|---|---|---|"]
        for count in counts {
            var upload: [Double] = []
            var aggregate: [Double] = []
            var daemonGrowth: [Double] = []
            var serverGrowth: [Double] = []
            var quiet: [SkewSampler.Round] = []
            var during: [SkewSampler.Round] = []
            for run in 1...repeats {
                log("\(count) receivers, run \(run)/\(repeats)")
                let room = try BenchRoom(
                    viewers: count + 1, media: media, name: "journal\(count)x\(run)",
                    viewerArguments: transferRate.map { ["--transfer-rate", $0] } ?? [])
                defer { room.stop() }
                try room.clients[0].request(.play)
                sleepSeconds(2)
                quiet += SkewSampler(clients: room.probes).rounds(count: 60, interval: 0.05, rate: 1)

                // RSS of every daemon and the server, sampled while the transfers run.
                let pids = room.daemons.map(\.process.processIdentifier) + [room.server.process.processIdentifier]
                let baseline = pids.map { ProcessMemory.resident(pid: $0) ?? 0 }
                let peaks = Locked(baseline)
                let sampling = Locked(true)
                let sampler = Thread {
                    while sampling.withLock({ $0 }) {
                        let now = pids.map { ProcessMemory.resident(pid: $0) ?? 0 }
                        peaks.withLock { peaks in for index in peaks.indices { peaks[index] = max(peaks[index], now[index]) } }
                        sleepSeconds(0.05)
                    }
                }
                sampler.start()

                let started = monotonicNow()
                let attached = try room.clients[0].request(.attach(path: file, name: nil, meta: nil), timeout: 600)
                upload.append(bytes / (monotonicNow() - started))
                let id = try AttachmentReply(json: attached).attachment.id

                // Every receiver has heard of it (the announcement follows the upload's answer).
                for index in 1...count {
                    let until = monotonicNow() + 10
                    while monotonicNow() < until,
                        !(try AttachmentsReply(json: room.clients[index].request(.getAttachments)).attachments.contains { $0.id == id })
                    {
                        sleepSeconds(0.02)
                    }
                }
                // Every receiver fetches at once, each from its own thread and client.
                let finished = Locked(0)
                let failures = Locked<[String]>([])
                let fetchStart = monotonicNow()
                for index in 1...count {
                    let path = room.daemons[index].controlPath
                    let target = directory + "/got-\(run)-\(index).bin"
                    Thread {
                        do {
                            let client = try ControlClient(path: path)
                            _ = try client.request(.fetch(id: id, path: target), timeout: 600)
                        } catch {
                            failures.withLock { $0.append("\(error)") }
                        }
                        try? FileManager.default.removeItem(atPath: target)
                        finished.withLock { $0 += 1 }
                    }.start()
                }
                var fetchEnd = 0.0
                while finished.withLock({ $0 }) < count {
                    during += SkewSampler(clients: room.probes).rounds(count: 2, interval: 0.05, rate: 1)
                    if finished.withLock({ $0 }) == count, fetchEnd == 0 { fetchEnd = monotonicNow() }
                }
                if fetchEnd == 0 { fetchEnd = monotonicNow() }
                if let failure = failures.withLock({ $0.first }) { throw TestFailure("fetch failed: \(failure)") }
                aggregate.append(bytes * Double(count) / (fetchEnd - fetchStart))
                sampling.withLock { $0 = false }
                while !sampler.isFinished { sleepSeconds(0.01) }
                let peak = peaks.withLock { $0 }
                daemonGrowth.append(Double((0..<room.daemons.count).map { peak[$0] - baseline[$0] }.max() ?? 0))
                serverGrowth.append(Double(peak[pids.count - 1] - baseline[pids.count - 1]))
            }
            // Rounds in which every read came back fast: their skew is the players', not the observer's.
            let wellRead = during.filter { $0.uncertainty <= 0.000_5 }
            func mbps(_ values: [Double]) -> String { "\(format3((Percentiles(values)?.p50 ?? 0) / 1_048_576)) MiB/s" }
            func mib(_ values: [Double]) -> String { "\(format3((values.max() ?? 0) / 1_048_576)) MiB" }
            func p99(_ values: [Double]) -> String { "\(format3((Percentiles(values)?.p99 ?? 0) * 1000)) ms" }
            rows.append(
                "| \(count) | \(mbps(upload)) | \(mbps(aggregate)) | \(mib(daemonGrowth)) | \(mib(serverGrowth)) "
                    + "| \(p99(quiet.map(\.skew))) | \(p99(during.map(\.skew))) "
                    + "| \(p99(quiet.map(\.uncertainty))) / \(p99(during.map(\.uncertainty))) "
                    + "| \(p99(wellRead.map(\.skew))) (\(Int((100 * Double(wellRead.count) / Double(max(1, during.count))).rounded())) %) |")
        }
        print(rows.joined(separator: "\n"))
        print("transfer rate per transfer: \(transferRate ?? "unlimited")")
        print("\(megabytes) MiB attachment; medians over \(repeats) runs (RSS: the largest growth seen); \(ProcessInfo.processInfo.activeProcessorCount) cores, loopback, TLS")
    }
}
