import CowatchCore
import CowatchNet
import NIOCore
import NIOPosix
import Testing

@Suite("Pinned TLS for the room link", .timeLimit(.minutes(1)))
struct PinnedTLSTests {
    @Test("the right pin connects, and the client sees the server identity's fingerprint")
    func rightPin() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let identity = try ServerIdentity.loadOrCreate(directory: directory.path + "/server", commonName: "localhost")
        let server = try await TestServers.tlsEcho(identity: identity)
        defer { server.close(promise: nil) }

        let tls = try PinnedTLS.Client(host: "127.0.0.1", port: TestServers.port(of: server), expected: identity.fingerprint, knownHosts: nil)
        #expect(tls.trust == .invite(identity.fingerprint))
        #expect(tls.fingerprint == nil)
        let seen = try await TestClient.echo(port: TestServers.port(of: server), tls: tls)
        #expect(seen == identity.fingerprint)
        #expect(tls.fingerprint == identity.fingerprint)
    }

    @Test("a wrong pin is refused with certificate-mismatch naming both fingerprints")
    func wrongPin() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let identity = try ServerIdentity.loadOrCreate(directory: directory.path + "/server", commonName: "localhost")
        let other = try ServerIdentity.loadOrCreate(directory: directory.path + "/other", commonName: "localhost")
        #expect(identity.fingerprint != other.fingerprint)
        let server = try await TestServers.tlsEcho(identity: identity)
        defer { server.close(promise: nil) }
        let port = TestServers.port(of: server)

        let tls = try PinnedTLS.Client(host: "127.0.0.1", port: port, expected: other.fingerprint, knownHosts: nil)
        let error = await #expect(throws: CowatchError.self) { try await TestClient.echo(port: port, tls: tls) }
        #expect(error?.code == .certificateMismatch)
        #expect(error?.message.contains("127.0.0.1:\(port) presented \(identity.fingerprint.text)") == true)
        #expect(error?.message.contains("invite says \(other.fingerprint.text)") == true)
        #expect(tls.fingerprint == nil)
    }

    @Test("trust on first use: remembered, then a different key on the same host:port is refused")
    func firstUse() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let knownHosts = KnownHosts(path: directory.path + "/state/known_hosts")
        let first = try ServerIdentity.loadOrCreate(directory: directory.path + "/first", commonName: "localhost")
        let second = try ServerIdentity.loadOrCreate(directory: directory.path + "/second", commonName: "localhost")

        let context = Locked(try first.makeServerContext())
        let server = try await TestServers.tlsEcho(context: context)
        defer { server.close(promise: nil) }
        let port = TestServers.port(of: server)
        let tls = try PinnedTLS.Client(host: "127.0.0.1", port: port, expected: nil, knownHosts: knownHosts)
        #expect(tls.trust == .firstUse)
        #expect(try await TestClient.echo(port: port, tls: tls) == first.fingerprint)
        #expect(try knownHosts.lookup(host: "127.0.0.1", port: port) == first.fingerprint)

        // The same server again: pinned by known_hosts now.
        let again = try PinnedTLS.Client(host: "127.0.0.1", port: port, expected: nil, knownHosts: knownHosts)
        #expect(again.trust == .knownHosts(first.fingerprint))
        #expect(try await TestClient.echo(port: port, tls: again) == first.fingerprint)

        // Another key on the same address.
        let secondContext = try second.makeServerContext()
        context.withLock { $0 = secondContext }
        let third = try PinnedTLS.Client(host: "127.0.0.1", port: port, expected: nil, knownHosts: knownHosts)
        let error = await #expect(throws: CowatchError.self) { try await TestClient.echo(port: port, tls: third) }
        #expect(error?.code == .certificateMismatch)
        #expect(error?.message.contains("presented \(second.fingerprint.text) but \(knownHosts.path) says \(first.fingerprint.text)") == true)
        #expect(error?.message.contains("remove the line for 127.0.0.1:\(port) from \(knownHosts.path)") == true)
        #expect(try knownHosts.lookup(host: "127.0.0.1", port: port) == first.fingerprint)

        // An invite's pin overrides known_hosts.
        let invited = try PinnedTLS.Client(host: "127.0.0.1", port: port, expected: second.fingerprint, knownHosts: knownHosts)
        #expect(try await TestClient.echo(port: port, tls: invited) == second.fingerprint)
    }

    @Test("a silent plaintext server fails with tls-failed at the handshake timeout, not a hang")
    func silentPlaintextServer() async throws {
        let server = try await TestServers.plaintext(greeting: nil, closeAfterGreeting: false)
        defer { server.close(promise: nil) }
        let port = TestServers.port(of: server)
        let tls = try PinnedTLS.Client(host: "127.0.0.1", port: port, expected: nil, knownHosts: nil, handshakeTimeout: .seconds(1))
        let start = ContinuousClock.now
        let error = await #expect(throws: CowatchError.self) { try await TestClient.echo(port: port, tls: tls) }
        #expect(ContinuousClock.now - start < .seconds(40))  // not a hang; generous for a loaded 2-core machine
        #expect(error?.code == .tlsFailed)
        #expect(error?.message.contains("no TLS answer from 127.0.0.1:\(port) within 1.0 s") == true)
    }

    @Test(
        "a plaintext or HTTP server fails at once with tls-failed quoting what it said",
        arguments: [
            ("{\"type\":\"error\",\"code\":\"invalid-json\"}\n", true, "answered without TLS (it sent \"{\"type\":\"error\""),
            ("{\"type\":\"error\",\"code\":\"invalid-json\"}\n", false, "answered without TLS"),
            ("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", true, "it sent \"HTTP/1.1 400 Bad Request…\""),
        ])
    func talkingPlaintextServer(greeting: String, close: Bool, words: String) async throws {
        let server = try await TestServers.plaintext(greeting: greeting, closeAfterGreeting: close)
        defer { server.close(promise: nil) }
        let port = TestServers.port(of: server)
        let tls = try PinnedTLS.Client(host: "127.0.0.1", port: port, expected: nil, knownHosts: nil, handshakeTimeout: .seconds(20))
        let start = ContinuousClock.now
        let error = await #expect(throws: CowatchError.self) { try await TestClient.echo(port: port, tls: tls) }
        #expect(ContinuousClock.now - start < .seconds(40))  // not a hang; generous for a loaded 2-core machine
        #expect(error?.code == .tlsFailed)
        #expect(error?.message.contains(words) == true, "\(error?.message ?? "")")
    }

    @Test("a server that closes at once fails with tls-failed")
    func closingServer() async throws {
        let server = try await TestServers.plaintext(greeting: "", closeAfterGreeting: true)
        defer { server.close(promise: nil) }
        let port = TestServers.port(of: server)
        let tls = try PinnedTLS.Client(host: "127.0.0.1", port: port, expected: nil, knownHosts: nil, handshakeTimeout: .seconds(20))
        let error = await #expect(throws: CowatchError.self) { try await TestClient.echo(port: port, tls: tls) }
        #expect(error?.code == .tlsFailed)
        #expect(error?.message.contains("closed the connection during the TLS handshake") == true, "\(error?.message ?? "")")
    }

    @Test("handshake() without addHandlers fails instead of waiting")
    func notAttached() async throws {
        let tls = try PinnedTLS.Client(host: "h", port: 1, expected: nil, knownHosts: nil)
        let error = await #expect(throws: CowatchError.self) { try await tls.handshake() }
        #expect(error?.code == .tlsFailed)
    }

    @Test("the server drops a plaintext client, and one that says nothing, within its handshake timeout")
    func serverDropsPlaintextClients() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let identity = try ServerIdentity.loadOrCreate(directory: directory.path, commonName: "localhost")
        let server = try await TestServers.tlsEcho(identity: identity, handshakeTimeout: .seconds(1))
        defer { server.close(promise: nil) }
        for hello in ["{\"type\":\"hello\",\"room\":\"r\",\"name\":\"n\"}\n", nil] {
            let start = ContinuousClock.now
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: TestServers.port(of: server)) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
            let echoed = try await channel.executeThenClose { inbound, outbound in
                // Under load the server may already have given up on us: a failed write is fine too.
                if let hello { try? await outbound.write(ByteBuffer(string: hello)) }
                var received = ""
                do {
                    for try await chunk in inbound { received += String(buffer: chunk) }
                } catch {}  // a reset is as good as a close
                return received
            }
            #expect(!echoed.contains("hello"))
            #expect(ContinuousClock.now - start < .seconds(40))  // not a hang; generous for a loaded 2-core machine
        }
    }
}
