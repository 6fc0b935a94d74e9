import ArgumentParser
import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation

/// `cowatch-bench starts`: how each player moves through its first 1.3 s after a start, for
/// tuning pre-roll and the drift controller (the `rooms` figure only says how far apart they were).
///
/// Each start pauses, seeks to a new place and plays; before it, every player's paused `time-pos`
/// against the daemon's expected position, its clock and its learned unpause lead; after it,
/// every player's audio-pts (tight reads only) against the room's own line fitted 1.0–1.3 s
/// after the play request, and its speed, at fixed marks.
struct StartTrace: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "starts", abstract: "Trace each player through the first 1.3 s after a start (offsets in ms @ speed).")
    @Option(help: "Starts to trace.") var starts = 6
    @Option(help: "Viewers in the room.") var viewers = 3
    @Option(help: "An mpv option for every viewer (NAME=VALUE, as cowatchd --mpv takes it); repeatable.") var mpv: [String] = []
    @Option(help: "A cowatchd config file for every viewer (for tuning, e.g. drift.* keys).") var viewerConfig: String?
    @Flag(help: "Seek while playing instead of pause, seek, play: trace the start that ends a seek's hold.") var whilePlaying = false
    @Option(help: "Seconds of audio the null output buffers, as a sound device would (as `rooms --device-buffer`; 0 keeps mpv's 0.2 s, which makes each speed nudge read as a step four times larger).")
    var deviceBuffer = 0.05
    @Flag(help: "Also read each daemon's own drift error (get_status), printed after the observer's offset as /ERR.") var daemonView = false

    func run() throws {
        let media = try TestMedia.audioVideo()
        let room = try BenchRoom(
            viewers: viewers, media: media, name: "starts", viewerArguments: mpv.flatMap { ["--mpv", $0] } + (viewerConfig.map { ["--config", $0] } ?? [])
                + (deviceBuffer > 0 ? ["--mpv", "ao-null-buffer=\(deviceBuffer)"] : []))
        defer { room.stop() }
        sleepSeconds(1)
        if whilePlaying {
            try room.clients[0].request(.play)
            sleepSeconds(1.5)
        }
        for start in 0..<starts {
            if whilePlaying {
                // The whole start is the seek's: hold, everyone lands, a scheduled resume.
                let t0 = monotonicNow()
                try room.clients[0].request(.seek(seconds: Double(10 + 5 * start), mode: .absolute))
                // During the hold: where each player stands against the daemon's expected position.
                sleepSeconds(0.12)
                let held = try heldState(room)
                try trace(room, label: "seek \(start) while playing (held: \(held))", from: t0)
                sleepSeconds(1)
                continue
            }
            try room.clients[0].request(.pause)
            sleepSeconds(0.3)
            try room.clients[0].request(.seek(seconds: Double(10 + 5 * start), mode: .absolute))
            sleepSeconds(0.7)
            var before: [String] = []
            for (index, client) in room.clients.enumerated() {
                let status = try client.request(.getStatus)
                let shown = (try? room.probes[index].request(.getProperty("time-pos")))?.numberValue
                let expected = status["drift"]?["expected"]?.numberValue
                before.append(
                    "paused \(ms(shown.flatMap { shown in expected.map { shown - $0 } })) from expected, "
                        + "clock ±\(ms(status["clock"]?["uncertainty"]?.numberValue)), lead \(ms(status["drift"]?["unpause_lead"]?.numberValue))")
            }
            print("start \(start): " + before.joined(separator: " · "))
            try room.clients[1 % room.clients.count].request(.play)
            try trace(room, label: nil, from: monotonicNow())
        }
    }

    /// Each paused player's time-pos and audio-pts against its daemon's expected position, and its lead (ms).
    func heldState(_ room: BenchRoom) throws -> String {
        var parts: [String] = []
        for (index, client) in room.clients.enumerated() {
            let status = try client.request(.getStatus)
            let expected = status["drift"]?["expected"]?.numberValue
            let shown = (try? room.probes[index].request(.getProperty("time-pos")))?.numberValue
            let audio = (try? room.probes[index].request(.getProperty("audio-pts")))?.numberValue
            let offset = { (value: Double?) in ms(value.flatMap { value in expected.map { value - $0 } }) }
            parts.append("t \(offset(shown)) a \(offset(audio)) lead \(ms(status["drift"]?["unpause_lead"]?.numberValue))")
        }
        return parts.joined(separator: " · ")
    }

    /// Every player's audio-pts for 1.3 s from `t0`, printed against the room's line at fixed marks.
    func trace(_ room: BenchRoom, label: String?, from t0: Double) throws {
        if let label { print(label + ":") }
        var samples: [[(at: Double, position: Double, speed: Double)]] = Array(repeating: [], count: room.probes.count)
        var errors: [[(at: Double, error: Double)]] = Array(repeating: [], count: room.probes.count)
        while monotonicNow() - t0 < 1.3 {
            for (index, probe) in room.probes.enumerated() {
                let readStart = monotonicNow()
                guard let position = (try? probe.request(.getProperty("audio-pts")))?.numberValue else { continue }
                let readEnd = monotonicNow()
                let speed = (try? probe.request(.getProperty("speed")))?.numberValue ?? 0
                if readEnd - readStart < 0.0005 { samples[index].append(((readStart + readEnd) / 2 - t0, position, speed)) }
                if daemonView, let error = (try? room.clients[index].request(.getStatus))?["drift"]?["error"]?.numberValue {
                    errors[index].append((monotonicNow() - t0, error))
                }
            }
            sleepSeconds(0.004)
        }
        let late = samples.flatMap { $0.filter { $0.at > 1.0 }.map { $0.position - $0.at } }
        let line = late.reduce(0, +) / Double(max(1, late.count))
        var text = ""
        for mark in [0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0, 1.2] {
            text += String(format: " %.2f:", mark)
            for (index, list) in samples.enumerated() {
                if let sample = list.min(by: { abs($0.at - mark) < abs($1.at - mark) }) {
                    text += ms(sample.position - sample.at - line) + "@" + String(format: "%.3f", sample.speed)
                    if let own = errors[index].min(by: { abs($0.at - mark) < abs($1.at - mark) }) { text += "/" + ms(own.error) }
                    text += " "
                }
            }
        }
        if daemonView {
            let late = room.clients.map { ms((try? $0.request(.getStatus))?["drift"]?["start_late"]?.numberValue) }
            text += " start late " + late.joined(separator: " ")
        }
        print("  " + text)
    }

    func ms(_ value: Double?) -> String { value.map { String(format: "%.2f", $0 * 1000) } ?? "-" }
}
