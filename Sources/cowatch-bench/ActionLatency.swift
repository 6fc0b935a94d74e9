import ArgumentParser
import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation

/// `cowatch-bench actions`: how soon, and how together, every player carries out a group action.
///
/// Each player's `pause` flag is watched on its own mpv IPC socket (past cowatchd). A viewer
/// pauses; the instant each player's flag flips is noted: the time from the request to the last
/// player paused, and the spread between the first and the last. Then another viewer plays
/// (scheduled ahead by the room's lead, so only the spread says how together), another seeks (each
/// player's `time-pos` watched until it shows the target), and another sets the speed to 1.5×
/// and back (scheduled like a start: the spread of the `speed` flips).
///
/// The IPC flip is seen through mpv's IPC thread, which adds its own wake-up (a few ms on two
/// loaded cores) to each player. So each daemon also says, in `get_status` (`drift.pause`), when
/// the room's pause order reached its socket and when it set its player's pause (one monotonic
/// clock for every process here): the rows "order → paused" and "spread (set)" come from those.
struct ActionLatency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "actions",
        abstract: "Pause, play, seek and speed by one viewer: time until every player has done it, and the spread between players.")

    @Option(help: "Viewers in the room.") var viewers = 3
    @Option(help: "Pause/play rounds.") var rounds = 30
    @Option(help: "Every thread of each viewer under SCHED_FIFO at this priority (1-99; root only), once it plays.")
    var viewerRealtime: Int32?

    func run() throws {
        let room = try BenchRoom(viewers: viewers, media: try TestMedia.audioVideo(), name: "actions")
        defer { room.stop() }
        try room.clients[0].request(.play)
        sleepSeconds(2)
        if let viewerRealtime {
            for daemon in room.daemons where ThreadScheduling(pid: daemon.process.processIdentifier).makeRealtime(priority: viewerRealtime) == 0 {
                log("could not make \(daemon.name) real-time (root only)")
            }
        }
        let watchers = try room.daemons.map { try PropertyWatcher(path: $0.mpvSocket, property: "pause", poll: 0.05) }
        let positions = try room.daemons.map { try PropertyWatcher(path: $0.mpvSocket, property: "time-pos", poll: 0.05) }
        let speeds = try room.daemons.map { try PropertyWatcher(path: $0.mpvSocket, property: "speed", poll: 0.05) }
        defer { (watchers + positions + speeds).forEach { $0.stop() } }
        var seekAll: [Double] = []
        var seekSpread: [Double] = []
        var speedSpread: [Double] = []
        var pauseAll: [Double] = []
        var pauseSpread: [Double] = []
        var playSpread: [Double] = []
        var orderToPaused: [Double] = []
        var setSpread: [Double] = []
        var observerLag: [Double] = []
        var observerLagSpread: [Double] = []
        for round in 0..<rounds {
            let pauser = round % viewers
            let asked = monotonicNow()
            try room.clients[pauser].request(.pause)
            let pauseFlips = Self.flips(watchers, to: 1, after: asked)
            if let flips = pauseFlips {
                pauseAll.append(flips.max()! - asked)
                pauseSpread.append(flips.max()! - flips.min()!)
            } else {
                pauseAll.append(.infinity)
            }
            sleepSeconds(0.4)
            let timings = room.clients.map { try? PlayerStatus(json: $0.request(.getStatus)).drift?.pause }
            let sets = timings.compactMap { $0?.set }.filter { $0 >= asked }
            if sets.count == viewers { setSpread.append(sets.max()! - sets.min()!) }
            // How late the IPC watcher sees each player's pause after its daemon set it: the
            // observer's own share of the IPC spread (daemons and watchers share one clock).
            if let flips = pauseFlips, sets.count == viewers, timings.allSatisfy({ ($0?.set ?? 0) >= asked }) {
                let lags = zip(flips, timings).map { $0 - $1!.set! }
                observerLag += lags
                observerLagSpread.append(lags.max()! - lags.min()!)
            }
            for timing in timings {
                // From the order's arrival to the player's pause (a pauser that paused at once,
                // before its order came back, is left out: see `pausesWithRoom`).
                guard let arrived = timing?.arrived, let set = timing?.set, arrived >= asked, set >= arrived else { continue }
                orderToPaused.append(set - arrived)
            }
            let played = monotonicNow()
            try room.clients[(pauser + 1) % viewers].request(.play)
            if let flips = Self.flips(watchers, to: 0, after: played) {
                playSpread.append(flips.max()! - flips.min()!)
            }
            sleepSeconds(0.6)
            // Seek somewhere else in the 75 s film, every round (which also keeps the film from ending).
            let target = 10 + Double(round % 6) * 9
            let sought = monotonicNow()
            try room.clients[(pauser + 2) % viewers].request(.seek(seconds: target, mode: .absolute))
            if let flips = Self.flips(positions, after: sought, where: { $0 >= target - 0.05 && $0 <= target + 0.5 }) {
                seekAll.append(flips.max()! - sought)
                seekSpread.append(flips.max()! - flips.min()!)
            } else {
                seekAll.append(.infinity)
            }
            sleepSeconds(0.6)
            // 1.5× and back; a drift nudge moves the speed by 10 % at most, so 1.3 tells them apart.
            let faster = monotonicNow()
            try room.clients[pauser].request(.speed(1.5))
            if let flips = Self.flips(speeds, after: faster, where: { $0 >= 1.3 }) {
                speedSpread.append(flips.max()! - flips.min()!)
            }
            sleepSeconds(0.5)
            try room.clients[pauser].request(.speed(1))
            sleepSeconds(0.5)
        }
        print(Row.table([
            Row(name: "pause: request → every player paused", values: pauseAll, unit: .ms),
            Row(name: "pause: spread between players", values: pauseSpread, unit: .ms),
            Row(name: "pause: room's order → player paused (daemon)", values: orderToPaused, unit: .ms),
            Row(name: "pause: spread of pause set (daemon)", values: setSpread, unit: .ms),
            Row(name: "pause: set → seen on IPC (observer's lag)", values: observerLag, unit: .ms),
            Row(name: "pause: spread of the observer's lag", values: observerLagSpread, unit: .ms),
            Row(name: "play: spread between players", values: playSpread, unit: .ms),
            Row(name: "seek: request → every player there", values: seekAll, unit: .ms),
            Row(name: "seek: spread between players", values: seekSpread, unit: .ms),
            Row(name: "speed: spread between players", values: speedSpread, unit: .ms),
        ]))
        print("\(viewers) viewers, \(rounds) rounds, loopback; \(ProcessInfo.processInfo.activeProcessorCount) cores\(viewerRealtime.map { "; viewers' threads under SCHED_FIFO \($0)" } ?? "")")
    }

    /// The first instant after `after` at which each player's flag became `value`; nil when one
    /// did not within 3 s.
    static func flips(_ watchers: [PropertyWatcher], to value: Double, after: Double) -> [Double]? {
        flips(watchers, after: after, where: { $0 == value })
    }

    /// The first instant after `after` at which each player's value met `condition`; nil when
    /// one did not within 3 s.
    static func flips(_ watchers: [PropertyWatcher], after: Double, where condition: (Double) -> Bool) -> [Double]? {
        let deadline = monotonicNow() + 3
        while monotonicNow() < deadline {
            let found = watchers.map { $0.changes.first { $0.at >= after && condition($0.value) }?.at }
            if found.allSatisfy({ $0 != nil }) { return found.map { $0! } }
            sleepSeconds(0.01)
        }
        return nil
    }
}
