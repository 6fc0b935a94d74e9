import CowatchCore
@testable import CowatchNet
import Foundation
import Logging
import CowatchTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Connections opened and dropped while a server starts and stops, with the serving task
/// cancelled outright (not a graceful shutdown): connections accepted but not yet handed to the
/// accept loop used to be released unfinished, which NIO turns into a trap that ends the process.
/// A crash fails the whole test run; each case also checks that the server stopped.
@Suite("Connection churn while servers stop")
struct ConnectionChurnTests {
    private struct NoHandler: ControlRequestHandler {
        func handle(_ request: ControlRequest) async -> ControlReply { .success(request.requestID, .null) }
    }

    @Test("the control socket, cancelled 100 times under a stream of connections, never crashes")
    func controlServer() async throws {
        let directory = DaemonDirectory.make()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for round in 0..<100 {
            let path = directory + "/c\(round).sock"
            let ready = Locked(false)
            let server = ControlServer(
                path: path, handler: NoHandler(), events: EventHub(), logger: Logger(label: "test"),
                ready: { ready.withLock { $0 = true } })
            let serving = Task { try await server.run() }
            let churn = ConnectionChurn { ConnectionChurn.unixConnect(path) }
            try await waitUntil { ready.withLock { $0 } }
            // The case under test: connections flowing when the server is cancelled.
            try await waitUntil { churn.opened > 0 }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...15)))
            serving.cancel()
            _ = await serving.result
            churn.stop()
            #expect(churn.opened > 0, "round \(round): no connection was made")
            #expect(!FileManager.default.fileExists(atPath: path), "round \(round): the socket file stayed")
        }
    }

    @Test("the room server, cancelled 50 times under a stream of connections, never crashes")
    func roomServer() async throws {
        for round in 0..<50 {
            let bound = Locked<Int?>(nil)
            let server = RoomServer(
                host: "127.0.0.1", port: 0, identity: nil, logger: Logger(label: "test"),
                onBound: { _, port in bound.withLock { $0 = port } })
            let serving = Task { try await server.run() }
            try await waitUntil { bound.withLock { $0 } != nil }
            let port = bound.withLock { $0 } ?? 0
            let churn = ConnectionChurn { ConnectionChurn.tcpConnect(port) }
            try await waitUntil { churn.opened > 0 }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...15)))
            serving.cancel()
            _ = await serving.result
            churn.stop()
            #expect(churn.opened > 0, "round \(round): no connection was made")
        }
    }

    private func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw CowatchError(.timeout, "not within 10 s: the server did not start, or no connection was made") }
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}

private enum DaemonDirectory {
    static func make() -> String {
        let path = "/tmp/cowatch-churn-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
