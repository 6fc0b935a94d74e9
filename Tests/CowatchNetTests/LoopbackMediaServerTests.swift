import CowatchCore
@testable import CowatchNet
import CowatchTestSupport
import Foundation
import Logging
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 25: the loopback HTTP server the player reads streamed films from, checked with a raw
/// HTTP client (what it answers, byte for byte) and with mpv itself.
@Suite("Loopback media server: published files over HTTP to the local player")
struct LoopbackMediaServerTests {
    static func film(_ size: Int) -> [UInt8] { PatternedFilm.bytes(size) }

    /// Counts the reads of a published file.
    final class Reads: Sendable {
        let calls = Locked(0)
        let bytes = Locked(0)
        let cancelled = Locked(0)
    }

    func publish(_ file: [UInt8], on server: LoopbackMediaServer, name: String = "night.mkv", reads: Reads = Reads()) -> String {
        server.publish(name: name, size: file.count) { offset, length in
            reads.calls.withLock { $0 += 1 }
            reads.bytes.withLock { $0 += length }
            return Array(file[offset..<min(file.count, offset + length)])
        }
    }

    @Test("the URL is 127.0.0.1, the port, 32 random hex digits and the name escaped")
    func url() async throws {
        let server = try await LoopbackMediaServer.start(logger: Logger(label: "test"))
        defer { Task { await server.stop() } }
        let first = server.publish(name: "my film #1 (été).mkv", size: 10) { _, _ in [] }
        let second = server.publish(name: "my film #1 (été).mkv", size: 10) { _, _ in [] }
        let prefix = "http://127.0.0.1:\(server.port)/"
        #expect(first.hasPrefix(prefix))
        let parts = first.dropFirst(prefix.count).split(separator: "/")
        #expect(parts.count == 2)
        #expect(parts[0].count == 32 && parts[0].allSatisfy(\.isHexDigit))
        #expect(parts[1] == "my%20film%20%231%20%28%C3%A9t%C3%A9%29.mkv")
        #expect(first != second)
    }

    @Test("GET without Range: 200, the whole file, its length, Accept-Ranges")
    func wholeFile() async throws {
        let server = try await LoopbackMediaServer.start(logger: Logger(label: "test"))
        defer { Task { await server.stop() } }
        let file = Self.film(3 * LoopbackMediaServer.chunkBytes + 123)
        let url = publish(file, on: server)
        let response = try await RawHTTP.exchange(url, method: "GET")
        #expect(response.status == 200)
        #expect(response.headers["content-length"] == "\(file.count)")
        #expect(response.headers["accept-ranges"] == "bytes")
        #expect(response.headers["content-range"] == nil)
        #expect(response.body == file)
    }

    @Test(
        "one byte range: 206 with Content-Range and Content-Length, and those bytes",
        arguments: [
            ("bytes=0-", 0..<10_000), ("bytes=5000-", 5000..<10_000), ("bytes=10-19", 10..<20), ("bytes=9999-9999", 9999..<10_000),
            ("bytes=9000-20000", 9000..<10_000), ("bytes=-1", 9999..<10_000), ("bytes=-300", 9700..<10_000),
            ("bytes=-99999", 0..<10_000), ("Bytes=1-2", 1..<3),
        ])
    func ranges(header: String, expected: Range<Int>) async throws {
        let server = try await LoopbackMediaServer.start(logger: Logger(label: "test"))
        defer { Task { await server.stop() } }
        let file = Self.film(10_000)
        let url = publish(file, on: server)
        let response = try await RawHTTP.exchange(url, method: "GET", headers: ["Range: \(header)"])
        #expect(response.status == 206)
        #expect(response.headers["content-range"] == "bytes \(expected.lowerBound)-\(expected.upperBound - 1)/10000")
        #expect(response.headers["content-length"] == "\(expected.count)")
        #expect(response.body == Array(file[expected]))
    }

    @Test(
        "a range past the end, or not one byte range: 416 with Content-Range: bytes */SIZE, nothing read",
        arguments: ["bytes=10000-", "bytes=20000-30000", "bytes=5-2", "bytes=-0", "items=0-1", "bytes=0-1,4-5", "bytes=x-", "bytes=-", "bytes=1"])
    func unsatisfiable(header: String) async throws {
        let server = try await LoopbackMediaServer.start(logger: Logger(label: "test"))
        defer { Task { await server.stop() } }
        let reads = Reads()
        let url = publish(Self.film(10_000), on: server, reads: reads)
        let response = try await RawHTTP.exchange(url, method: "GET", headers: ["Range: \(header)"])
        #expect(response.status == 416)
        #expect(response.headers["content-range"] == "bytes */10000")
        #expect(response.body.isEmpty)
        #expect(reads.calls.withLock { $0 } == 0)
    }

    @Test("HEAD: the headers GET would have, no body and no read")
    func head() async throws {
        let server = try await LoopbackMediaServer.start(logger: Logger(label: "test"))
        defer { Task { await server.stop() } }
        let reads = Reads()
        let url = publish(Self.film(10_000), on: server, reads: reads)
        let whole = try await RawHTTP.exchange(url, method: "HEAD")
        #expect(whole.status == 200)
        #expect(whole.headers["content-length"] == "10000")
        #expect(whole.headers["accept-ranges"] == "bytes")
        #expect(whole.body.isEmpty)
        let part = try await RawHTTP.exchange(url, method: "HEAD", headers: ["Range: bytes=100-"])
        #expect(part.status == 206)
        #expect(part.headers["content-range"] == "bytes 100-9999/10000")
        #expect(part.body.isEmpty)
        #expect(reads.calls.withLock { $0 } == 0)
    }

    @Test("an unknown or withdrawn URL is 404, another method 405; a request that is not HTTP 400")
    func refusals() async throws {
        let server = try await LoopbackMediaServer.start(logger: Logger(label: "test"))
        defer { Task { await server.stop() } }
        let url = publish(Self.film(100), on: server)
        let other = publish(Self.film(100), on: server)
        #expect(try await RawHTTP.exchange("http://127.0.0.1:\(server.port)/0123456789abcdef0123456789abcdef/x.mkv", method: "GET").status == 404)
        #expect(try await RawHTTP.exchange("http://127.0.0.1:\(server.port)/", method: "GET").status == 404)
        let post = try await RawHTTP.exchange(url, method: "POST", headers: ["Content-Length: 0"])
        #expect(post.status == 405)
        #expect(post.headers["allow"] == "GET, HEAD")
        #expect(try await RawHTTP.exchange(url, method: "DELETE").status == 405)
        #expect(try await RawHTTP.raw(port: server.port, request: "NOT HTTP AT ALL\r\n\r\n").status == 400)
        server.withdraw(url)
        #expect(try await RawHTTP.exchange(url, method: "GET").status == 404)
        #expect(try await RawHTTP.exchange(other, method: "GET").status == 200, "only the withdrawn URL goes")
    }

    @Test("a failing read cuts the body short and closes the connection")
    func failingRead() async throws {
        let server = try await LoopbackMediaServer.start(logger: Logger(label: "test"))
        defer { Task { await server.stop() } }
        let file = Self.film(4 * LoopbackMediaServer.chunkBytes)
        let url = server.publish(name: "broken.mkv", size: file.count) { offset, length in
            guard offset < LoopbackMediaServer.chunkBytes else { throw CowatchError(.ioError, "the link broke") }
            return Array(file[offset..<(offset + length)])
        }
        let response = try await RawHTTP.exchange(url, method: "GET")
        #expect(response.status == 200)
        #expect(response.headers["content-length"] == "\(file.count)")
        #expect(response.body == Array(file[0..<LoopbackMediaServer.chunkBytes]), "the first chunk, then the end")
    }

    @Test("a client that does not read holds the reads back; one that goes away cancels the read under way and stops the rest")
    func backPressureAndDisconnect() async throws {
        let server = try await LoopbackMediaServer.start(logger: Logger(label: "test"))
        defer { Task { await server.stop() } }
        let size = 256 << 20
        let chunk = [UInt8](repeating: 7, count: LoopbackMediaServer.chunkBytes)
        let reads = Reads()
        let stalled = Locked(false)
        let url = server.publish(name: "big.mkv", size: size) { offset, length in
            reads.calls.withLock { $0 += 1 }
            reads.bytes.withLock { $0 += length }
            if stalled.withLock({ $0 }) {
                // A stream that waits for its sharer: only the player going away ends it.
                do {
                    try await Task.sleep(for: .seconds(600))
                } catch {
                    reads.cancelled.withLock { $0 += 1 }
                    throw error
                }
            }
            return Array(chunk[0..<length])
        }
        let client = try #require(RawHTTP.connect(port: server.port, receiveBuffer: 16 << 10))
        defer { close(client) }
        RawHTTP.send(client, RawHTTP.request(url, method: "GET"))
        // The client reads nothing: what is read stays within the socket buffers and the
        // server's window (a few MiB), far from the 256 MiB asked for.
        try await waitUntil("reads begin") { reads.calls.withLock { $0 } > 0 }
        try await waitUntilSteady { reads.bytes.withLock { $0 } }
        let heldAt = reads.bytes.withLock { $0 }
        #expect(heldAt <= 16 << 20, "\(heldAt) bytes read for a client that reads nothing")
        // Now reads stall; the client takes a little, so a stalled read is under way, then goes.
        stalled.withLock { $0 = true }
        let callsBefore = reads.calls.withLock { $0 }
        _ = await offPool { RawHTTP.drain(client, until: { callsBefore < reads.calls.withLock { $0 } }) }
        try await waitUntil("a read stalls") { reads.calls.withLock { $0 } > callsBefore }
        shutdown(client, Int32(SHUT_RDWR))
        try await waitUntil("the stalled read is cancelled") { reads.cancelled.withLock { $0 } == 1 }
        let calls = reads.calls.withLock { $0 }
        try await Task.sleep(for: .milliseconds(300))  // room for a wrong further read to show
        #expect(reads.calls.withLock { $0 } == calls, "reads went on after the client left")
    }

    @Test("stop closes the port and ends the responses under way")
    func stop() async throws {
        let server = try await LoopbackMediaServer.start(logger: Logger(label: "test"))
        let reads = Reads()
        let url = server.publish(name: "slow.mkv", size: 1 << 20) { _, _ in
            reads.calls.withLock { $0 += 1 }
            do {
                try await Task.sleep(for: .seconds(600))
            } catch {
                reads.cancelled.withLock { $0 += 1 }
                throw error
            }
            return []
        }
        let client = try #require(RawHTTP.connect(port: server.port))
        defer { close(client) }
        RawHTTP.send(client, RawHTTP.request(url, method: "GET"))
        let head = await offPool { RawHTTP.drain(client, until: { false }, headOnly: true) }
        #expect(String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        try await waitUntil("the read begins") { reads.calls.withLock { $0 } == 1 }
        await server.stop()
        #expect(reads.cancelled.withLock { $0 } == 1)
        #expect(RawHTTP.connect(port: server.port) == nil, "the port still accepts")
    }

    @Test("mpv plays a film from the loopback URL, read through a stream receiver, seeking into it", .timeLimit(.minutes(2)))
    func mpvPlaysStream() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/mpv") else {
            Issue.record("mpv is not installed (make test installs it)")
            return
        }
        let path = try await TestMedia.file(.audioVideo)
        let film = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        // The film's sharer behind a stand-in room server, read by a receiver with a small cache.
        let sharer = try await FakeStreamServer.start(file: film)
        defer { Task { await sharer.stop() } }
        let receiver = StreamReceiverTests().receiver(sharer, cacheBytes: 4 * StreamFrame.maxReadBytes)
        let server = try await LoopbackMediaServer.start(logger: Logger(label: "test"))
        defer { Task { await server.stop() } }
        let reads = Reads()
        let url = server.publish(name: "av 75s.mkv", size: film.count) { offset, length in
            reads.calls.withLock { $0 += 1 }
            reads.bytes.withLock { $0 = max($0, offset + length) }
            return try await receiver.read(offset: offset, length: length)
        }
        // 2 s from 60 s in: a seek (a request with a Range), decoding, then a normal end.
        let (status, output) = try await offPool { () throws -> (Int32, String) in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/mpv")
            process.arguments = [
                "--no-config", "--vo=null", "--ao=null", "--untimed", "--ytdl=no", "--load-scripts=no", "--start=60", "--end=62",
                "--msg-level=all=warn", url,
            ]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: output, as: UTF8.self))
        }
        #expect(status == 0, "mpv: \(output)")
        #expect(reads.calls.withLock { $0 } > 0)
        #expect(reads.bytes.withLock { $0 } > film.count / 2, "mpv read from past the middle")
        #expect(sharer.seen.withLock { $0.connections } == 1)
        await receiver.close()
    }
}

/// Polls `condition` every 5 ms for up to 20 s (a noisy machine); fails the test after.
private func waitUntil(_ what: String, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(20)
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw CowatchError(.timeout, "not within 20 s: \(what)") }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// Waits until `value` has not changed for 500 ms (up to 20 s).
private func waitUntilSteady(_ value: () -> Int) async throws {
    let deadline = ContinuousClock.now + .seconds(20)
    var last = value()
    var since = ContinuousClock.now
    while ContinuousClock.now - since < .milliseconds(500) {
        guard ContinuousClock.now < deadline else { throw CowatchError(.timeout, "the value kept changing for 20 s") }
        try await Task.sleep(for: .milliseconds(20))
        let now = value()
        if now != last {
            last = now
            since = ContinuousClock.now
        }
    }
}

/// A bare HTTP/1.1 client on blocking sockets (run off the cooperative pool): what the server
/// sends, unparsed by anything that could hide a mistake.
private enum RawHTTP {
    struct Response {
        var status: Int
        /// Lowercased names.
        var headers: [String: String]
        var body: [UInt8]
    }

    static func connect(port: Int, receiveBuffer: Int32? = nil) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_addr.s_addr = inet_addr("127.0.0.1")
        target.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            close(fd)
            return nil
        }
        return fd
    }

    static func request(_ url: String, method: String, headers: [String] = []) -> String {
        let path = url.range(of: "://").flatMap { scheme in url[scheme.upperBound...].firstIndex(of: "/").map { String(url[$0...]) } } ?? "/"
        return ([method + " " + path + " HTTP/1.1", "Host: 127.0.0.1"] + headers).joined(separator: "\r\n") + "\r\n\r\n"
    }

    static func send(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads until the server closes (or 20 s without a byte), or `until` holds between reads,
    /// or (`headOnly`) the end of the response's head.
    static func drain(_ fd: Int32, until: () -> Bool, headOnly: Bool = false) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !until() {
            let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if got <= 0 { break }
            received += buffer[..<got]
            if headOnly, received.count >= 4, String(decoding: received, as: UTF8.self).contains("\r\n\r\n") { break }
        }
        return received
    }

    static func raw(port: Int, request: String) async throws -> Response {
        guard let fd = connect(port: port) else { throw CowatchError(.ioError, "cannot connect to \(port)") }
        defer { close(fd) }
        send(fd, request)
        let bytes = await offPool { drain(fd, until: { false }) }
        return try parse(bytes)
    }

    static func exchange(_ url: String, method: String, headers: [String] = []) async throws -> Response {
        let port = Int(url.split(separator: ":")[2].split(separator: "/")[0]) ?? 0
        return try await raw(port: port, request: request(url, method: method, headers: headers))
    }

    static func parse(_ bytes: [UInt8]) throws -> Response {
        let separator = Array("\r\n\r\n".utf8)
        guard let end = (0..<max(0, bytes.count - 3)).first(where: { Array(bytes[$0..<($0 + 4)]) == separator }) else {
            throw CowatchError(.protocolViolation, "no response head in \(bytes.count) bytes")
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw CowatchError(.protocolViolation, "not a status line: \(lines[0])")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Response(status: status, headers: headers, body: Array(bytes[(end + 4)...]))
    }
}
