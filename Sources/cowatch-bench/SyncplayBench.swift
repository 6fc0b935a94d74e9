import ArgumentParser
import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation

/// How close players stay in a room of Debian's `syncplay-server`: two of Syncplay's own clients
/// (the baseline), a Cowatch daemon beside a Syncplay client, and two Cowatch daemons — each pair
/// read through each player's own mpv IPC socket (audio-pts), in one run, once playing settled.
struct SyncplayBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncplay",
        abstract: "Measure the skew of players in a syncplay-server room (two Syncplay clients, a Cowatch daemon and a Syncplay client, two Cowatch daemons) and of a Syncplay client in a Cowatch room.")

    @Option(help: "Seconds of sampling per pair, once settled.") var duration = 15.0
    @Option(help: "Seconds each pair plays before sampling.") var settle = 5.0
    @Option(help: "Repeat every pair this many times (figures pool all runs).") var repeats = 2
    @Option(help: "Seconds of audio each null output buffers, as a sound device would.") var deviceBuffer = 0.05

    func run() async throws {
        guard SyncplayServerProcess.binary != nil, SyncplayClientProcess.binary != nil else {
            throw ValidationError("syncplay-server, syncplay and mpv must be installed (make test-deps installs them)")
        }
        let film = try await TestMedia.file(.audioVideo)
        var syncplayPair: [Double] = [], mixedPair: [Double] = [], cowatchPair: [Double] = [], guestPair: [Double] = []
        for run in 1...repeats {
            let server = try await SyncplayServerProcess.start()
            log("run \(run)/\(repeats): two Syncplay clients")
            syncplayPair += try await measureSyncplayClients(port: server.port, room: "base\(run)", film: film)
            log("run \(run)/\(repeats): a Cowatch daemon and a Syncplay client")
            mixedPair += try await measureMixed(port: server.port, room: "mixed\(run)", film: film)
            log("run \(run)/\(repeats): two Cowatch daemons")
            cowatchPair += try await measureDaemons(port: server.port, room: "pair\(run)", film: film)
            log("run \(run)/\(repeats): a Syncplay client in a Cowatch room")
            guestPair += try await measureGuest(room: "guest\(run)", film: film)
        }
        print("## Players in a syncplay-server room (\(repeats) runs × \(Int(duration)) s, audio-pts through each mpv's IPC)")
        print(Row.table([
            Row(name: "two Syncplay 1.6.9 clients (baseline)", values: syncplayPair, unit: .ms),
            Row(name: "a Cowatch daemon and a Syncplay client", values: mixedPair, unit: .ms),
            Row(name: "two Cowatch daemons", values: cowatchPair, unit: .ms),
            Row(name: "a Syncplay client in a Cowatch room, against a Cowatch viewer", values: guestPair, unit: .ms),
        ]))
        if let base = Percentiles(syncplayPair), let ours = Percentiles(cowatchPair), ours.p50 > 0 {
            print("two Cowatch daemons vs two Syncplay clients: p50 \(format(base.p50 / ours.p50))× closer, p99 \(format(base.p99 / ours.p99))× closer")
        }
    }

    private var playerArguments: [String] { deviceBuffer > 0 ? ["--ao-null-buffer=\(deviceBuffer)"] : [] }
    private var daemonArguments: [String] { deviceBuffer > 0 ? ["--mpv", "ao-null-buffer=\(deviceBuffer)"] : [] }

    /// Samples `duration` seconds of skew between `probes`, after `settle`.
    private func sample(_ probes: [ControlClient]) async -> [Double] {
        await pause(settle)
        let sampler = SkewSampler(clients: probes)
        let count = Int(duration / 0.025)
        return await offPool { sampler.sample(count: count, interval: 0.025, rate: 1) }
    }

    private func measureSyncplayClients(port: Int, room: String, film: String) async throws -> [Double] {
        let first = try SyncplayClientProcess(name: "carol", port: port, room: room, media: film, playerArguments: playerArguments)
        defer { first.terminateInBackground() }
        let second = try SyncplayClientProcess(name: "dave", port: port, room: room, media: film, playerArguments: playerArguments)
        defer { second.terminateInBackground() }
        let probes = [try await first.playerProbe(), try await second.playerProbe()]
        guard await waitFor(timeout: 30, { second.log.contains("carol") && first.log.contains("dave") }) else {
            throw TestFailure("the Syncplay clients did not meet:\n\(first.log)\n\(second.log)")
        }
        // Both ready (a Syncplay client not yet ready takes its first unpause as "ready"), then
        // carol plays: they start paused.
        first.say("t")
        second.say("t")
        await pause(1)
        first.say("p")
        guard await waitFor(timeout: 15, { (try? probes[1].request(.getProperty("pause")).boolValue) == false }) else {
            throw TestFailure("dave did not start:\n\(second.log)")
        }
        return await sample(probes)
    }

    private func measureMixed(port: Int, room: String, film: String) async throws -> [Double] {
        let daemons = try await DaemonRoom(names: ["alice"], media: film, room: room, venue: .syncplay(port: port), arguments: daemonArguments, probes: true)
        defer { daemons.stopInBackground() }
        let client = try SyncplayClientProcess(name: "erin", port: port, room: room, media: film, playerArguments: playerArguments)
        defer { client.terminateInBackground() }
        let probe = try await client.playerProbe()
        _ = try await daemons.expectNotices("join", actor: "erin", timeout: 30)
        await pause(1)
        _ = try await daemons.clients[0].request(.play)
        guard await waitFor(timeout: 15, { (try? probe.request(.getProperty("pause")).boolValue) == false }) else {
            throw TestFailure("the Syncplay client did not start:\n\(client.log)")
        }
        return await sample([daemons.probes[0], probe])
    }

    private func measureDaemons(port: Int, room: String, film: String) async throws -> [Double] {
        let daemons = try await DaemonRoom(
            names: ["bob", "fay"], media: film, room: room, venue: .syncplay(port: port), arguments: daemonArguments, probes: true)
        defer { daemons.stopInBackground() }
        _ = try await daemons.clients[0].request(.play)
        _ = try await daemons.expectNotices("play", actor: "bob", timeout: 15, from: [1])
        return await sample(daemons.probes)
    }

    /// A Syncplay client through `cowatch-server --syncplay-listen`, beside two daemons.
    private func measureGuest(room: String, film: String) async throws -> [Double] {
        let daemons = try await DaemonRoom(
            names: ["gus", "hal"], media: film, room: room, venue: .server(arguments: ["--syncplay-listen", "127.0.0.1:0"]),
            arguments: daemonArguments, probes: true)
        defer { daemons.stopInBackground() }
        guard let port = daemons.server.syncplayPort else { throw TestFailure("the server took no Syncplay clients") }
        let client = try SyncplayClientProcess(name: "ivy", port: port, room: room, media: film, playerArguments: playerArguments)
        defer { client.terminateInBackground() }
        let probe = try await client.playerProbe()
        _ = try await daemons.expectNotices("join", actor: "ivy", timeout: 30)
        await pause(1)
        _ = try await daemons.clients[0].request(.play)
        guard await waitFor(timeout: 15, { (try? probe.request(.getProperty("pause")).boolValue) == false }) else {
            throw TestFailure("the Syncplay client did not start:\n\(client.log)")
        }
        return await sample([daemons.probes[0], probe])
    }

    private func waitFor(timeout: Double, _ condition: () -> Bool) async -> Bool {
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            if condition() { return true }
            await pause(0.1)
        }
        return condition()
    }
}
