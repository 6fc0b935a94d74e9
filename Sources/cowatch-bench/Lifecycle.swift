import ArgumentParser
import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation

/// How fast the group recovers from the session-lifecycle events: switching media for everyone,
/// a viewer whose link goes dark, readiness, leaving and rejoining. Every figure is measured by
/// the observer on the players' own mpv sockets.
struct Lifecycle: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Time the group's recovery after open, a stalled viewer, ready, and leave/join.")

    @Option(help: "Repeat every scenario this many times (figures pool all runs).") var repeats = 3
    @Option(help: "Seconds the slow viewer's link stays dark (longer than its buffer plus the wait timeout).") var darkFor = 15.0
    @Option(help: "The room server's wait timeout, seconds.") var waitTimeout = 3.0

    func run() throws {
        let first = try TestMedia.audioVideo()
        var openLock: [Double] = [], openStart: [Double] = [], readyLock: [Double] = [], rejoinLock: [Double] = []
        var stallNotice: [Double] = [], holdLength: [Double] = [], catchUp: [Double] = []
        for run in 1...repeats {
            log("run \(run)/\(repeats): open")
            // A room switches players to network URLs only: serve the copy over HTTP (full speed).
            let served = try SlowMediaServer(file: try Self.copy(first, as: "open-\(run)"))
            defer { served.close() }
            let second = served.url
            let room = try BenchRoom(viewers: 3, media: first, name: "life-o\(run)")
            try room.clients[0].request(.play)
            sleepSeconds(2)
            let start = monotonicNow()
            try room.clients[1].request(.open(.init(url: second, title: "second")))
            for client in room.clients {
                _ = try client.waitForStatus(timeout: 20) { $0.media == second && !$0.paused }
            }
            openStart.append(monotonicNow() - start)
            let sampling = monotonicNow() - start
            let lock = SkewSampler(clients: room.probes).timeToLock(bound: 0.002, rate: 1, timeout: 10)
            openLock.append(lock.map { sampling + $0 } ?? .infinity)

            log("run \(run)/\(repeats): leave and join")
            try room.clients[2].request(.leave)
            try room.clients[2].request(.seek(seconds: 50, mode: .absolute))
            let joinStart = monotonicNow()
            try room.clients[2].request(.join)
            let joinSampling = monotonicNow() - joinStart
            let rejoined = SkewSampler(clients: room.probes).timeToLock(bound: 0.002, rate: 1, timeout: 10)
            rejoinLock.append(rejoined.map { joinSampling + $0 } ?? .infinity)
            room.stop()

            log("run \(run)/\(repeats): play when everyone is ready")
            readyLock.append(try Self.readiness(media: first, run: run))

            log("run \(run)/\(repeats): a viewer's link goes dark for \(darkFor) s")
            let stall = try Self.stall(media: first, run: run, darkFor: darkFor, waitTimeout: waitTimeout)
            stallNotice.append(stall.notice)
            holdLength.append(stall.hold)
            catchUp.append(stall.catchUp)
        }
        print(Row.table([
            Row(name: "open: request to everyone playing the new media", values: openStart, unit: .s),
            Row(name: "open: request to lock (<2 ms)", values: openLock, unit: .s),
            Row(name: "ready: last ready to lock (<2 ms)", values: readyLock, unit: .s),
            Row(name: "join after leave: request to lock (<2 ms)", values: rejoinLock, unit: .s),
            Row(name: "dark link: link dark to \"waiting for\"", values: stallNotice, unit: .s),
            Row(name: "dark link: group held (bound \(format(waitTimeout)) s)", values: holdLength, unit: .s),
            Row(name: "dark link: link back to slow viewer locked (<2 ms)", values: catchUp, unit: .s),
        ]))
        print("\(repeats) runs; 3 viewers (2 local files + 1 over throttled HTTP for the dark link); \(ProcessInfo.processInfo.activeProcessorCount) cores")
    }

    /// A copy of the media under another name, so `open` really switches files.
    static func copy(_ file: String, as name: String) throws -> String {
        let path = "/tmp/cowatch-test-media/\(name).mkv"
        if !FileManager.default.fileExists(atPath: path) { try FileManager.default.copyItem(atPath: file, toPath: path) }
        return path
    }

    /// Seconds from the last viewer's `ready` to the group locked under the play-when-ready policy.
    static func readiness(media: String, run: Int) throws -> Double {
        let room = try BenchRoom(
            viewers: 2, media: media, name: "life-r\(run)", serverArguments: ["--play-when-ready", "--wait-timeout", "30"])
        defer { room.stop() }
        try room.clients[0].request(.play)
        sleepSeconds(0.5)
        let start = monotonicNow()
        try room.clients[1].request(.setReady(true))
        for client in room.clients { _ = try client.waitForStatus(timeout: 10) { !$0.paused } }
        let sampling = monotonicNow() - start
        guard let lock = SkewSampler(clients: room.probes).timeToLock(bound: 0.002, rate: 1, timeout: 10) else { return .infinity }
        return sampling + lock
    }

    /// A viewer over throttled HTTP whose link goes dark: how soon the group hears "waiting for",
    /// how long it holds, and how long the viewer needs to lock again once bytes flow.
    static func stall(media: String, run: Int, darkFor: Double, waitTimeout: Double) throws
        -> (notice: Double, hold: Double, catchUp: Double)
    {
        let http = try SlowMediaServer(file: media, bytesPerSecond: 150_000)
        defer { http.close() }
        let room = try BenchRoom(
            viewers: 2, media: media, name: "life-s\(run)", serverArguments: ["--wait-timeout", String(waitTimeout)])
        defer { room.stop() }
        try room.add("slow", media: http.url, arguments: [
            "--mpv", "cache=yes", "--mpv", "demuxer-max-bytes=150KiB", "--mpv", "demuxer-readahead-secs=2",
            "--mpv", "cache-pause-wait=1",
        ])
        try room.waitForParticipants(3)
        let listener = try room.daemons[0].client()
        _ = try listener.status()
        try room.clients[0].request(.play)
        sleepSeconds(3)
        let dark = monotonicNow()
        http.stall(for: darkFor)
        guard try listener.waitForEvent(named: "notice", timeout: darkFor, where: { $0.fields["action"] == "waiting" }) != nil
        else { return (.infinity, .infinity, .infinity) }
        let noticed = monotonicNow()
        _ = try room.clients[0].waitForStatus(timeout: 2) { $0.paused }
        let held = monotonicNow()
        _ = try room.clients[0].waitForStatus(timeout: waitTimeout + 5) { !$0.paused }
        let released = monotonicNow()
        let back = dark + darkFor
        if back > monotonicNow() { sleepSeconds(back - monotonicNow()) }
        // Locked means: everyone plays again, the slow viewer too, within 2 ms.
        _ = try room.clients[2].waitForStatus(timeout: 30) { !$0.paused && $0.room.map { $0.stall == nil } == true }
        let sampling = monotonicNow() - back
        let lock = SkewSampler(clients: room.probes).timeToLock(bound: 0.002, rate: 1, timeout: 30).map { sampling + $0 }
        return (noticed - dark, released - held, lock ?? .infinity)
    }
}
