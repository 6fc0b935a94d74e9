import CowatchClient
import CowatchCore
import CowatchObserver
import CowatchTestSupport
import Foundation
import Testing

/// Three real `cowatch-server`s sharing a room directory in a real `redis-server`, and real
/// daemons joining through different servers (one through a TCP balancer in front of all three).
/// The servers share one certificate and token key, as a cluster must (see the README).
@Suite("A cluster of room servers", .serialized, .realProcesses)
struct ClusterTests {
    static let room = "cluster-room"
    static let key = "cowatch:room:" + room

    /// Three servers on ports of their own, sharing the first one's certificate and token key.
    static func startServers(redis: RedisProcess, extra: [String] = []) async throws -> [ServerProcess] {
        let ports = (0..<3).map { _ in freeLoopbackPort() }
        func start(_ index: Int, state: String? = nil) async throws -> ServerProcess {
            try await ServerProcess.start(
                port: ports[index],
                extraArguments: ["--cluster", redis.url, "--advertise", "127.0.0.1:\(ports[index])"] + extra,
                stateDirectory: state)
        }
        let first = try await start(0)
        // The token key is written just after the server says where it listens.
        _ = await eventually(timeout: 10) { FileManager.default.fileExists(atPath: first.stateDirectory + "/token.key") }
        var servers = [first]
        for index in 1..<3 {
            let state = first.stateDirectory + "-\(index)"
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            for file in ["server-cert.pem", "server-key.pem", "token.key"] {
                try FileManager.default.copyItem(atPath: first.stateDirectory + "/" + file, toPath: state + "/" + file)
                try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: state + "/" + file)
            }
            servers.append(try await start(index, state: state))
        }
        #expect(Set(servers.compactMap(\.fingerprint)).count == 1, "the cluster shares one certificate")
        return servers
    }

    /// Polls `condition` every 50 ms for up to `timeout` seconds.
    @Test(
        "daemons joining through different servers meet on the room's owner; when it dies the room moves and plays on",
        .enabled(if: RedisProcess.binary != nil, "redis-server is not installed: `make deps` (apt-get install redis-server) installs it"),
        // One lease at a time: two clusters of three servers and three players each, side by side
        // on a 2-core CI machine, starved the 3 s lease's renewals (two failures in six runs).
        .serialized,
        arguments: [nil, 3] as [Int?])
    func roomMoves(lease: Int?) async throws {
        // The 3 s lease failed 3 of 8 CI runs until a claim held through its first hello's
        // handshake (see `claimHoldsThroughASlowHandshake`).
        try await moveScenario(lease: lease)
    }

    @Test(
        "a claim holds while its first hello is still in its handshake, longer than a short lease's empty grace",
        .enabled(if: RedisProcess.binary != nil, "redis-server is not installed: `make deps` (apt-get install redis-server) installs it"))
    func claimHoldsThroughASlowHandshake() async throws {
        // Lease 3 s: an empty claimed room is released after 1.8 s. A first hello whose auth
        // takes longer (a daemon deriving its key on a loaded machine) used to lose the claim
        // and then join a room the directory no longer named; the next daemon claimed the room
        // on another server and the group stayed split.
        let redis = try await RedisProcess.start()
        let servers = try await Self.startServers(redis: redis, extra: ["--cluster-lease", "3"])
        defer { for server in servers { server.terminateInBackground() } }
        let room = "slow-handshake"
        let slow = try RawRoomClient(tlsPort: servers[0].port)
        defer { slow.close() }
        await slow.send(.hello(.init(features: [WireFeature.cluster], room: room, name: "slow", client: "raw-test", nonce: RoomSecret.nonce())))
        #expect(await slow.read(type: "challenge") != nil)
        await pause(2.6)
        #expect(try await redis.query(["GET", "cowatch:room:" + room]) == servers[0].address, "the claim was released during the handshake")
        await slow.send(.auth(.init()))
        #expect(await slow.read(type: "welcome") != nil)
        await pause(1.5)
        // The room lives on its claimant, and another server sends newcomers there.
        #expect(try await redis.query(["GET", "cowatch:room:" + room]) == servers[0].address)
        let next = try RawRoomClient(tlsPort: servers[1].port)
        defer { next.close() }
        await next.send(.hello(.init(features: [WireFeature.cluster], room: room, name: "next", client: "raw-test", nonce: RoomSecret.nonce())))
        let redirect = await next.read(type: "redirect")
        #expect(redirect?["port"]?.numberValue == Double(servers[0].port), "not sent to the room's host: \(String(describing: redirect))")
    }

    func moveScenario(lease: Int?) async throws {
        let redis = try await RedisProcess.start()
        let servers = try await Self.startServers(redis: redis, extra: lease.map { ["--cluster-lease", "\($0)"] } ?? [])
        let balancer = try LoopbackBalancer(backends: servers.map(\.port))
        let room = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: Self.room, venue: .hostedByFirst, probes: true)
        defer {
            room.stopInBackground()
            for server in servers { server.terminateInBackground() }
            balancer.close()
        }
        // alice comes through the balancer, which sends her first connection to the first server:
        // it claims the room. bob and carol ask the other two, which redirect them to it.
        // A room with a secret: its verifier and roles must move with it.
        let secretFile = try writeSecretFile("cluster secret\n", in: try makeTemporaryDirectory("cluster-secret"))
        let entries = [balancer.address, servers[1].address, servers[2].address]
        for (name, entry) in zip(["alice", "bob", "carol"], entries) {
            // The cluster's servers share one key (one state directory, copied).
            try await room.add(
                name, arguments: ["--join", entry, "--room", Self.room, "--room-secret-file", secretFile, "--server-key", servers[0].fingerprint ?? ""],
                roomFlags: false)
            if name == "alice" { #expect(try await redis.query(["GET", Self.key]) == servers[0].address) }
        }
        try await room.waitForParticipants(3)
        #expect(try await redis.query(["GET", Self.key]) == servers[0].address)
        let ttl = Int(try await redis.query(["PTTL", Self.key])) ?? -1
        #expect(ttl > 0 && ttl <= (lease ?? 10) * 1000, "the claim is a lease (PTTL \(ttl) ms)")

        // A client that cannot follow redirects gets a clear refusal naming the owner.
        let old = try RawRoomClient(tlsPort: servers[1].port)
        await old.send(.rawHello(room: Self.room, name: "old-daemon"))
        let refusal = try #require(await old.read(type: "error"))
        #expect(refusal["code"]?.stringValue == "room-elsewhere")
        #expect(refusal["message"]?.stringValue?.contains(servers[0].address) == true)
        // One that can is told where to go.
        let new = try RawRoomClient(tlsPort: servers[2].port)
        await new.send(.hello(.init(features: [WireFeature.cluster], room: Self.room, name: "new-daemon", client: "raw-test", nonce: RoomSecret.nonce())))
        let redirect = try #require(await new.read(type: "redirect"))
        #expect(redirect["port"]?.numberValue == Double(servers[0].port))
        old.close()
        new.close()

        try await room.clients[1].request(.play)
        _ = try await room.expectNotices("play", actor: "bob", timeout: 10)
        let together = await room.settledSkew()
        #expect(together < 0.05, "skew on the first owner \(together)")
        await pause(2)
        let beforeKill = try await room.positions()

        // The owner dies without a word; its lease runs out and the room moves.
        kill(servers[0].process.processIdentifier, SIGKILL)
        let killedAt = monotonicNow()
        let newOwner = try await eventually(timeout: 30) {
            let owner = try await redis.query(["GET", Self.key])
            return !owner.isEmpty && owner != servers[0].address
        }
        #expect(newOwner, "no other server claimed the room")
        do {
            try await room.waitForParticipants(3, timeout: 30)
        } catch {
            // Say where everyone is before failing.
            for index in room.daemons.indices {
                let status = (try? await room.roomStatus(index)).map { "\($0)" } ?? "?"
                print("\(room.daemons[index].name): \(status)\n\(room.daemons[index].stderr.suffix(1500))")
            }
            for server in servers { print("\(server.address) log:\n" + ((try? String(contentsOfFile: server.logPath, encoding: .utf8)) ?? "").suffix(1500)) }
            throw error
        }
        let moved = monotonicNow() - killedAt
        let owner = try await redis.query(["GET", Self.key])
        #expect([servers[1].address, servers[2].address].contains(owner))
        // Whoever came back first, the room's creator owns it still: the new owner took the
        // room's record (secret verifier, roles) from the directory.
        #expect(try await room.roomStatus(0)["role"] == "owner")
        #expect(try await room.roomStatus(1)["role"] == "member")
        print("cluster: lease \(lease ?? 10) s: room moved to \(owner) and all three daemons rejoined \(String(format: "%.2f", moved)) s after its owner was killed")
        // The lease, then a daemon's backoff (at most 2 s) and its join, with room to spare.
        #expect(moved < Double(lease ?? 10) + 15, "the room took \(moved) s to move")

        // The group resumed where it was (shared token key: the new owner trusts the resume),
        // and plays on together.
        let afterMove = try await room.positions()
        #expect(afterMove.allSatisfy { $0 > (beforeKill.min() ?? 0) }, "positions before \(beforeKill), after \(afterMove)")
        for client in room.clients { #expect(try await client.status().paused == false) }
        // A newcomer to the moved room (the last to rejoin) may still be seeking onto it: give
        // the group up to 10 s to be together again.
        var stillTogether = await room.settledSkew()
        while stillTogether >= 0.05, monotonicNow() - killedAt < moved + 10 { stillTogether = await room.settledSkew(after: 0.5) }
        #expect(stillTogether < 0.05, "skew on the new owner \(stillTogether)")
        print("cluster: lease \(lease ?? 10) s: together again (skew \(String(format: "%.1f", stillTogether * 1000)) ms) \(String(format: "%.2f", monotonicNow() - killedAt)) s after the kill")

        // The directory hands the room to the third server behind its owner's back (a partition
        // healed, an operator's hand): the owner sees it at its next renewal and closes the room;
        // the daemons come back, are sent to the third server, and it takes the room over.
        let holder = try #require(servers.first { $0.address == owner })
        let third = try #require(servers.dropFirst().first { $0.address != owner })
        try await redis.query(["SET", Self.key, third.address, "PX", "60000"])
        let handedOver = try await eventually(timeout: 20) {
            let ttl = Int(try await redis.query(["PTTL", Self.key])) ?? -1
            guard ttl > 0 && ttl <= (lease ?? 10) * 1000 else { return false }
            return (try? await room.waitForParticipants(3, timeout: 0.1)) != nil
        }
        if !handedOver {
            // Say where everyone is before failing (seen once in CI: this step took over 20 s).
            let key = (try? await redis.query(["GET", Self.key])) ?? "?"
            let ttl = (try? await redis.query(["PTTL", Self.key])) ?? "?"
            print("hand-over: key \(key) ttl \(ttl)")
            for index in room.daemons.indices {
                let status = (try? await room.roomStatus(index)).map { "\($0)" } ?? "?"
                print("\(room.daemons[index].name): \(status)\n\(room.daemons[index].stderr.suffix(1500))")
            }
            for server in servers { print("\(server.address) log:\n" + ((try? String(contentsOfFile: server.logPath, encoding: .utf8)) ?? "").suffix(1500)) }
        }
        #expect(handedOver, "the third server did not take the room over")
        #expect(try await redis.query(["GET", Self.key]) == third.address)
        let holderLog = (try? String(contentsOfFile: holder.logPath, encoding: .utf8)) ?? ""
        #expect(holderLog.contains("no longer hosted here"), "the former owner did not close the room:\n\(holderLog.suffix(1000))")
        #expect(try await room.roomStatus(0)["role"] == "owner")

        // Everyone leaves: the owner releases the room (no need to wait for the lease).
        for daemon in room.daemons { _ = await daemon.terminate() }
        let released = try await eventually(timeout: 15) { try await redis.query(["EXISTS", Self.key]) == "0" }
        #expect(released, "the empty room's claim was not released")
    }
}

extension ClusterTests {
    @Test(
        "while Redis does not answer, hellos are refused as busy and daemons keep trying; they get in once it is back",
        .enabled(if: RedisProcess.binary != nil, "redis-server is not installed: `make deps` (apt-get install redis-server) installs it"))
    func directoryDown() async throws {
        let redis = try await RedisProcess.start()
        let port = freeLoopbackPort()
        let server = try await ServerProcess.start(
            port: port, extraArguments: ["--no-tls", "--cluster", redis.url, "--advertise", "127.0.0.1:\(port)"])
        let room = try await DaemonRoom(media: try await TestMedia.file(.audioVideo), room: "busy-room", venue: .hostedByFirst)
        defer {
            kill(redis.process.processIdentifier, SIGCONT)
            room.stopInBackground()
            server.terminateInBackground()
        }
        kill(redis.process.processIdentifier, SIGSTOP)
        try await room.add("dora", arguments: ["--join", server.address, "--room", "busy-room", "--no-tls"], roomFlags: false, waitJoined: false)
        let refused = try await eventually(timeout: 10) {
            try await room.roomStatus(0)["last_error"]?["code"]?.stringValue == "server-busy"
        }
        let lastStatus = (try? await room.roomStatus(0)).map { "\($0)" } ?? "?"
        #expect(refused, "\(lastStatus)")
        #expect(try await room.roomStatus(0)["session"] != "joined")
        kill(redis.process.processIdentifier, SIGCONT)
        try await room.waitJoined(0, timeout: 15)
        #expect(try await redis.query(["GET", "cowatch:room:busy-room"]) == server.address)
    }
}

/// `cowatch-server`'s cluster options are checked before it listens.
@Suite("cowatch-server cluster options", .realProcesses)
struct ClusterOptionTests {
    static let refused: [([String], String)] = [
        (["--cluster", "redis://127.0.0.1:6379"], "--advertise"),
        (["--cluster", "http://127.0.0.1:6379", "--advertise", "127.0.0.1:7433"], "redis://"),
        (["--cluster", "redis://user:pw@127.0.0.1:6379", "--advertise", "127.0.0.1:7433"], "no password"),
        (["--cluster", "redis://127.0.0.1:6379", "--advertise", "0.0.0.0:7433"], "--advertise"),
        (["--cluster", "redis://127.0.0.1:6379", "--advertise", "127.0.0.1:0"], "--advertise"),
        (["--cluster", "redis://127.0.0.1:6379", "--advertise", "127.0.0.1:7433", "--cluster-lease", "0.5"], "--cluster-lease"),
        (["--advertise", "127.0.0.1:7433"], "go with --cluster"),
    ]

    @Test("bad cluster options exit 2 naming the option", arguments: refused)
    func refusedOptions(arguments: [String], says: String) async throws {
        let result = try await runBinary("cowatch-server", ["--listen", "127.0.0.1:0", "--no-tls"] + arguments)
        #expect(result.status == 2)
        #expect(result.stderr.contains(says), "\(result.stderr)")
    }
}
