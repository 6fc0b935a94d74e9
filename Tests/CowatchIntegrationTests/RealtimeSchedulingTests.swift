import CowatchNet
import CowatchTestSupport
import Foundation
import Testing

/// `cowatch-server --realtime-priority`: the event loops, and only they, under SCHED_FIFO where the
/// system allows it; a clear refusal where it does not.
@Suite(.realProcesses) struct RealtimeSchedulingTests {
    /// CAP_SYS_NICE in effect (bit 23 of CapEff; a container's root may lack it), or an RLIMIT_RTPRIO of at least 1.
    static var permitted: Bool {
        var limit = rlimit()
        return hasSysNice || (getrlimit(__rlimit_resource_t(__RLIMIT_RTPRIO.rawValue), &limit) == 0 && limit.rlim_cur >= 1)
    }

    static var hasSysNice: Bool {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
            let mask = UInt64(line.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        else { return false }
        return mask & (1 << 23) != 0
    }

    @Test(.enabled(if: permitted, "needs root or an RLIMIT_RTPRIO"))
    func eventLoopsRunUnderFIFO() async throws {
        let state = try makeTemporaryDirectory("cowatch-rt")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let server = try await ServerProcess.start(extraArguments: ["--no-tls", "--realtime-priority", "1"], stateDirectory: state)
        defer { server.terminateInBackground() }
        let policies = RealtimeScheduling.policies(of: server.process.processIdentifier)
        let fifo = policies.filter { $0 == SCHED_FIFO }.count
        #expect(fifo >= 1, "policies \(policies)")
        // The main thread and the rooms' task pool keep the ordinary scheduler.
        #expect(policies.count > fifo, "policies \(policies)")

        let plain = try await ServerProcess.start(extraArguments: ["--no-tls"], stateDirectory: state + "-plain")
        defer {
            plain.terminateInBackground()
            try? FileManager.default.removeItem(atPath: state + "-plain")
        }
        #expect(!RealtimeScheduling.policies(of: plain.process.processIdentifier).contains(SCHED_FIFO))
    }

    @Test func refusedClearlyWithoutPermission() async throws {
        let server = try Binaries.path("cowatch-server")
        let state = try makeTemporaryDirectory("cowatch-rt-refused")
        defer { try? FileManager.default.removeItem(atPath: state) }
        let arguments = [server, "--no-tls", "--listen", "127.0.0.1:0", "--realtime-priority", "1"]
        // No RLIMIT_RTPRIO, and no CAP_SYS_NICE either.
        let unprivileged = ["/usr/bin/prlimit", "--rtprio=0"] + arguments
        let finished = Self.hasSysNice
            ? try await run(executable: "/usr/bin/setpriv", ["--inh-caps=-sys_nice", "--bounding-set=-sys_nice"] + unprivileged,
                environment: ["STATE_DIRECTORY": state])
            : try await run(executable: unprivileged[0], Array(unprivileged.dropFirst()), environment: ["STATE_DIRECTORY": state])
        #expect(finished.status == 2, "\(finished.stderr)")
        #expect(finished.stderr.contains("not-permitted"), "\(finished.stderr)")
        #expect(finished.stderr.contains("LimitRTPRIO"), "\(finished.stderr)")
    }

    @Test func priorityOutOfRangeIsAConfigurationError() async throws {
        let state = try makeTemporaryDirectory("cowatch-rt-range")
        defer { try? FileManager.default.removeItem(atPath: state) }
        for priority in ["0", "100"] {
            let finished = try await runBinary(
                "cowatch-server", ["--no-tls", "--listen", "127.0.0.1:0", "--realtime-priority", priority],
                environment: ["STATE_DIRECTORY": state])
            #expect(finished.status == 2)
            #expect(finished.stderr.contains("invalid-configuration"), "\(finished.stderr)")
        }
    }
}
