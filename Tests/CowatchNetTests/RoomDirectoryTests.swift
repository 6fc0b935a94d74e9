import CowatchCore
import CowatchTestSupport
import Foundation
import Logging
import Testing

@testable import CowatchNet

/// The cluster's Redis client and room directory against a real `redis-server`.
@Suite("Room directory in Redis", .serialized, .enabled(if: RedisProcess.binary != nil, "redis-server is not installed: `make deps` installs it"))
struct RoomDirectoryTests {
    static func directory(_ redis: RedisProcess, me port: Int, timeout: Double = 1) -> RoomDirectory {
        RoomDirectory(
            redis: RedisClient(host: "127.0.0.1", port: redis.port, requestTimeout: timeout, reconnectDelay: 0.1, logger: Logger(label: "test")),
            me: Endpoint(host: "127.0.0.1", port: port))
    }

    @Test("the first claim wins; others see its owner; only the owner releases")
    func claims() async throws {
        let redis = try await RedisProcess.start()
        let (a, b) = (Self.directory(redis, me: 1001), Self.directory(redis, me: 1002))
        #expect(try await a.place("r", lease: 10) == "127.0.0.1:1001")
        #expect(try await b.place("r", lease: 10) == "127.0.0.1:1001")
        #expect(try await a.owner(of: "r") == "127.0.0.1:1001")
        #expect(try await b.release("r") == false)
        #expect(try await a.owner(of: "r") == "127.0.0.1:1001")
        #expect(try await a.release("r") == true)
        #expect(try await a.owner(of: "r") == nil)
        let placed = ContinuousClock.now
        #expect(try await b.place("r", lease: 10) == "127.0.0.1:1002")
        let ttl = Int(try await redis.query(["PTTL", "cowatch:room:r"])) ?? -1
        // The lease is 10 s from the claim; what has passed since (a loaded machine launching
        // redis-cli one process at a time can take seconds) is all it may have lost.
        let passed = Int((ContinuousClock.now - placed) / .milliseconds(1))
        #expect(ttl >= 10_000 - passed - 50 && ttl <= 10_000, "PTTL \(ttl) ms, \(passed) ms after the claim")
    }

    @Test("a lease runs out unless its owner renews it")
    func leases() async throws {
        let redis = try await RedisProcess.start()
        let (a, b) = (Self.directory(redis, me: 1001), Self.directory(redis, me: 1002))
        #expect(try await a.place("kept", lease: 10) == "127.0.0.1:1001")
        #expect(try await a.place("lapsed", lease: 0.3) == "127.0.0.1:1001")
        // Redis expires the short lease on its own clock; a test thread that is late only makes it
        // more lapsed, and the long one is 10 s away from lapsing.
        try await Task.sleep(for: .milliseconds(500))
        let before = Int(try await redis.query(["PTTL", "cowatch:room:kept"])) ?? -1
        // Renewing is placing again: our own key's expiry is extended.
        #expect(try await a.place("kept", lease: 10) == "127.0.0.1:1001")
        let after = Int(try await redis.query(["PTTL", "cowatch:room:kept"])) ?? -1
        #expect(before > 0 && after > before, "PTTL \(before) ms before the renewal, \(after) ms after")
        #expect(try await b.place("kept", lease: 10) == "127.0.0.1:1001")
        #expect(try await b.place("lapsed", lease: 10) == "127.0.0.1:1002")
    }

    @Test("every request has a deadline, and the client reconnects after losing Redis")
    func deadlinesAndReconnect() async throws {
        let redis = try await RedisProcess.start()
        let a = Self.directory(redis, me: 1001, timeout: 0.3)
        #expect(try await a.place("r", lease: 10) == "127.0.0.1:1001")
        // A frozen Redis: the request fails at its deadline instead of hanging.
        kill(redis.process.processIdentifier, SIGSTOP)
        let start = ContinuousClock.now
        await #expect(throws: CowatchError(.timeout, "")) { _ = try await a.owner(of: "r") }
        let waited = ContinuousClock.now - start
        // Its deadline is 0.3 s; a hang would be for ever. The bound leaves a loaded machine room.
        #expect(waited < .seconds(5), "waited \(waited)")
        kill(redis.process.processIdentifier, SIGCONT)
        // The timed-out connection was dropped; the next request makes a new one.
        var answered: String?
        for _ in 0..<20 where answered == nil {
            answered = try? await a.owner(of: "r")
            if answered == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(answered == "127.0.0.1:1001")
        // Redis closes our connection: the client connects again.
        _ = try? await redis.query(["CLIENT", "KILL", "TYPE", "normal"])
        answered = nil
        for _ in 0..<20 where answered == nil {
            answered = try? await a.owner(of: "r")
            if answered == nil { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(answered == "127.0.0.1:1001")
    }

    @Test("an unreachable Redis fails fast with io-error")
    func unreachable() async throws {
        let directory = RoomDirectory(
            redis: RedisClient(host: "127.0.0.1", port: freeLoopbackPort(), requestTimeout: 0.5, logger: Logger(label: "test")),
            me: Endpoint(host: "127.0.0.1", port: 1))
        await #expect(throws: CowatchError(.ioError, "")) { _ = try await directory.place("r", lease: 10) }
        // Within the reconnect delay, the same failure comes back without a new attempt.
        await #expect(throws: CowatchError(.ioError, "")) { _ = try await directory.place("r", lease: 10) }
    }

    @Test("many requests at once are pipelined and each gets its own answer")
    func pipelined() async throws {
        let redis = try await RedisProcess.start()
        let a = Self.directory(redis, me: 1001)
        let owners = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for index in 0..<100 {
                group.addTask { (index, try await a.place("room-\(index)", lease: 10)) }
            }
            var owners: [Int: String] = [:]
            for try await (index, owner) in group { owners[index] = owner }
            return owners
        }
        #expect(owners.count == 100)
        #expect(owners.values.allSatisfy { $0 == "127.0.0.1:1001" })
        #expect(try await redis.query(["DBSIZE"]) == "100")
    }
}
