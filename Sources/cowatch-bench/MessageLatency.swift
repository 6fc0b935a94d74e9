import ArgumentParser
import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation

/// `cowatch-bench messages`: how fast the messenger is, and that it leaves sync alone.
struct MessageLatency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "messages",
        abstract: "Message latency from one participant to the others, and playback skew without and during message traffic.")

    @Option(help: "Participants in the room (one sends, the others receive).")
    var participants = 10
    @Option(help: "Seconds per phase.")
    var duration = 5.0
    @Option(help: "Repeat every phase this many times (figures pool all runs).")
    var repeats = 1

    func run() throws {
        let media = try TestMedia.audioVideo()
        var latency: [Double] = []
        var quiet: [Double] = []
        var reliableSkew: [Double] = []
        var floodSkew: [Double] = []
        var floodDelivered: [Double] = []
        for run in 1...repeats {
            log("run \(run)/\(repeats): \(participants) daemons")
            let room = try BenchRoom(viewers: participants, media: media, name: "messages\(run)")
            defer { room.stop() }
            try room.clients[0].request(.play)
            sleepSeconds(2)
            let samples = Int(duration / 0.05)
            quiet += SkewSampler(clients: room.probes).sample(count: samples, interval: 0.05, rate: 1)

            // Reliable, 20 a second, each stamped with the sender's clock (one machine: one clock).
            // Each thread opens its own client (a client belongs to one thread).
            let receivers = (1..<participants).map { room.daemons[$0].controlPath }
            let received = Locked<[Double]>([])
            let listening = Locked(true)
            let subscribed = Locked(0)
            let threads = receivers.map { path in
                Thread {
                    guard let client = try? ControlClient(path: path), (try? client.status()) != nil else { return }
                    subscribed.withLock { $0 += 1 }
                    while listening.withLock({ $0 }) {
                        guard let event = try? client.nextEvent(timeout: 0.2) else { continue }
                        let now = monotonicNow()
                        if event.name == "message", let sent = event.fields["payload"]?.objectValue?["t"]?.numberValue {
                            received.withLock { $0.append(now - sent) }
                        }
                    }
                }
            }
            threads.forEach { $0.start() }
            while subscribed.withLock({ $0 }) < receivers.count { sleepSeconds(0.01) }
            let senderPath = room.daemons[0].controlPath
            let reliableDone = Locked(false)
            Thread {
                guard let sender = try? ControlClient(path: senderPath) else { return }
                let end = monotonicNow() + duration
                while monotonicNow() < end {
                    _ = try? sender.request(["send_message", "bench", ["t": .number(monotonicNow())]])
                    sleepSeconds(0.05)
                }
                reliableDone.withLock { $0 = true }
            }.start()
            reliableSkew += SkewSampler(clients: room.probes).sample(count: samples, interval: 0.05, rate: 1)
            while !reliableDone.withLock({ $0 }) { sleepSeconds(0.05) }
            sleepSeconds(0.5)
            latency += received.withLock { $0 }

            // A flood: unreliable 4 KiB messages, 200 a second asked for (seven times the daemon's
            // pace; the daemons pace and the server budgets them; sync must not notice).
            received.withLock { $0 = [] }
            let blob = String(repeating: "x", count: 4096)
            let floodDone = Locked(false)
            Thread {
                guard let flooder = try? ControlClient(path: senderPath) else { return }
                let end = monotonicNow() + duration
                while monotonicNow() < end {
                    _ = try? flooder.request([
                        "send_message", "bench", ["t": .number(monotonicNow()), "blob": .string(blob)], "all", "unreliable",
                    ])
                    sleepSeconds(0.005)
                }
                floodDone.withLock { $0 = true }
            }.start()
            floodSkew += SkewSampler(clients: room.probes).sample(count: samples, interval: 0.05, rate: 1)
            while !floodDone.withLock({ $0 }) { sleepSeconds(0.05) }
            sleepSeconds(0.5)
            floodDelivered.append(Double(received.withLock { $0.count }) / Double(participants - 1) / duration)
            listening.withLock { $0 = false }
            sleepSeconds(0.3)
        }
        print(Row.table([
            Row(name: "message latency, reliable, 20/s to \(participants - 1) receivers", values: latency, unit: .ms),
            Row(name: "skew, no message traffic", values: quiet, unit: .ms),
            Row(name: "skew, during reliable messages (20/s)", values: reliableSkew, unit: .ms),
            Row(name: "skew, during unreliable 4 KiB messages (200/s asked)", values: floodSkew, unit: .ms),
        ]))
        let rate = Percentiles(floodDelivered)?.p50 ?? 0
        print("flood: \(format3(rate)) messages a second reached each receiver (paced by the sender's daemon, budgeted by the server)")
        print("\(participants) daemons, \(repeats) runs, \(Int(duration)) s per phase; \(ProcessInfo.processInfo.activeProcessorCount) cores")
    }
}
