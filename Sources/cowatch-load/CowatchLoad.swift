import ArgumentParser
import CowatchClient
import CowatchCore
import CowatchNet
import Foundation
import NIOCore
import NIOPosix

/// A load generator for `cowatch-server`: participants that behave like daemons on the wire
/// (see `LoadClient`), on one event-loop thread. `cowatch-bench server` starts several of these
/// processes so the generator is not the bottleneck, and merges their reports (one JSON line on
/// stdout each: counts and latency histograms).
@main
struct CowatchLoad: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cowatch-load",
        abstract: "Simulated participants against a plaintext cowatch-server (started by cowatch-bench server).",
        version: CowatchVersion.text)

    @Option(help: "The server's port on 127.0.0.1 (plaintext: --no-tls).") var port: Int
    @Option(help: "Global index of this process's first participant (rooms are index / room size).") var first = 0
    @Option(help: "Participants in this process (whole rooms).") var participants: Int
    @Option(help: "Participants per room.") var roomSize = 10
    @Option(help: "One room in this many has an actor (play/pause/seek).") var activeEvery = 10
    @Option(help: "Connections opened per second.") var connectRate = 1000.0
    @Option(help: "CLOCK_MONOTONIC second at which measuring starts.") var windowStart: Double
    @Option(help: "Seconds measured.") var duration = 10.0
    @Option(help: "Seconds between an active room's actions.") var actionInterval = 2.0
    @Option(help: "SCHED_FIFO priority for this process (as cowatch-server --realtime-priority).") var realtimePriority: Int32?
    @Flag(help: "Run this process under SCHED_IDLE: it takes only CPU nobody else wants, as clients on machines of their own take none of the server's.")
    var idle = false

    func run() throws {
        if idle {
            // Set before any thread starts: NIO's threads inherit it.
            var parameters = sched_param(sched_priority: 0)
            // SCHED_IDLE is 5 in <linux/sched.h>; Glibc's module does not export the name.
            guard sched_setscheduler(0, 5, &parameters) == 0 else {
                throw ValidationError("--idle: sched_setscheduler failed (errno \(errno))")
            }
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        if let realtimePriority { try RealtimeScheduling.enable(priority: realtimePriority, on: group) }
        let loop = group.next()
        let settings = LoadRun.Settings(
            port: port, firstParticipant: first, participants: participants, roomSize: roomSize, activeEvery: activeEvery,
            connectRate: connectRate, windowStart: windowStart, duration: duration, actionInterval: actionInterval)
        let done = loop.makePromise(of: Void.self)
        try loop.submit {
            let run = LoadRun(settings: settings, loop: loop)
            run.start { done.succeed() }
        }.wait()
        try done.futureResult.wait()
        // The report is out; connections still closing would only complain about a loop shut
        // down under them, so the process simply ends.
        Foundation.exit(0)
    }
}
