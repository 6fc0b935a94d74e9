import CowatchClient
import CowatchCore
import CowatchTestSupport
import Foundation
import Testing

/// Issue 21 item 1 with real processes: a hosting daemon started and stopped 50 times while
/// connections are opened and dropped on its control socket and its room port, from before it
/// binds until after it exits. It must end by its own exit every time, never by a signal (the
/// crash was a trap on an accepted connection released unfinished).
@Suite("A daemon under connection churn", .serialized, .realProcesses(alone: true))
struct ConnectionChurnDaemonTests {
    @Test("50 starts and stops under churn: every exit is clean")
    func churnNeverCrashes() async throws {
        let media = try await TestMedia.file(.audioVideo)
        let directory = DaemonProcess.makeDirectory()
        for round in 0..<50 {
            let port = freeLoopbackPort()
            let controlPath = directory + "/churn\(round).sock"
            let control = ConnectionChurn { ConnectionChurn.unixConnect(controlPath) }
            let room = ConnectionChurn { ConnectionChurn.tcpConnect(port) }
            let daemon = try await DaemonProcess(
                name: "churn\(round)", media: media,
                extraArguments: ["--host", "127.0.0.1:\(port)", "--no-tls", "--room", "churn"], directory: directory,
                waitUntilReady: false)
            // Stop it at a different moment each round: while starting, just up, or running.
            if round % 3 != 0 {
                try await daemon.awaitReady()
                // Connections flowing while it stops: wait for the first (bounded).
                let deadline = monotonicNow() + 5
                while control.opened == 0 && monotonicNow() < deadline { await pause(0.001) }
            }
            await pause(Double.random(in: 0...0.3))
            let status = await daemon.terminate(timeout: 20)
            await control.finish()
            await room.finish()
            // A SIGTERM that arrives before the daemon's service group handles signals ends it
            // by that signal (the default action): that is not a crash. Anything else is.
            let byTerm = daemon.process.terminationReason == .uncaughtSignal && status == SIGTERM
            let clean = daemon.process.terminationReason == .exit && status == 0
            #expect(clean || byTerm, "round \(round): \(daemon.process.terminationReason == .exit ? "exit status" : "signal") \(String(describing: status))\n\(daemon.stderr.suffix(3000))")
            if round % 3 != 0 {
                #expect(control.opened > 0, "round \(round): no control connection was made")
            }
        }
    }
}
