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
/// (scheduled ahead by the room's lead, so only the spread says how together).
struct ActionLatency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "actions",
        abstract: "Pause and play by one viewer: time until every player has done it, and the spread between players.")

    @Option(help: "Viewers in the room.") var viewers = 3
    @Option(help: "Pause/play rounds.") var rounds = 30

    func run() throws {
        let room = try BenchRoom(viewers: viewers, media: try TestMedia.audioVideo(), name: "actions")
        defer { room.stop() }
        try room.clients[0].request(.play)
        sleepSeconds(2)
        let watchers = try room.daemons.map { try PropertyWatcher(path: $0.mpvSocket, property: "pause", poll: 0.05) }
        defer { watchers.forEach { $0.stop() } }
        var pauseAll: [Double] = []
        var pauseSpread: [Double] = []
        var playSpread: [Double] = []
        for round in 0..<rounds {
            let pauser = round % viewers
            let asked = monotonicNow()
            try room.clients[pauser].request(.pause)
            if let flips = Self.flips(watchers, to: 1, after: asked) {
                pauseAll.append(flips.max()! - asked)
                pauseSpread.append(flips.max()! - flips.min()!)
            } else {
                pauseAll.append(.infinity)
            }
            sleepSeconds(0.4)
            let played = monotonicNow()
            try room.clients[(pauser + 1) % viewers].request(.play)
            if let flips = Self.flips(watchers, to: 0, after: played) {
                playSpread.append(flips.max()! - flips.min()!)
            }
            sleepSeconds(0.6)
        }
        print(Row.table([
            Row(name: "pause: request → every player paused", values: pauseAll, unit: .ms),
            Row(name: "pause: spread between players", values: pauseSpread, unit: .ms),
            Row(name: "play: spread between players", values: playSpread, unit: .ms),
        ]))
        print("\(viewers) viewers, \(rounds) rounds, loopback; \(ProcessInfo.processInfo.activeProcessorCount) cores")
    }

    /// The first instant after `after` at which each player's flag became `value`; nil when one
    /// did not within 3 s.
    static func flips(_ watchers: [PropertyWatcher], to value: Double, after: Double) -> [Double]? {
        let deadline = monotonicNow() + 3
        while monotonicNow() < deadline {
            let found = watchers.map { $0.changes.first { $0.at >= after && $0.value == value }?.at }
            if found.allSatisfy({ $0 != nil }) { return found.map { $0! } }
            sleepSeconds(0.01)
        }
        return nil
    }
}
