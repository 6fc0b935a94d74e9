import CowatchClient
import CowatchObserver
import Foundation

/// A tiny HTTP/1.1 file server on loopback that serves one media file slowly: point a daemon's
/// player at `url` and throttle or stall it, so mpv's cache runs dry (`paused-for-cache`) and the
/// room has to wait for that participant. Only ever listens on 127.0.0.1.
///
/// Every request path serves the same file. GET and HEAD are answered; `Range: bytes=START-`,
/// `bytes=START-END` and `bytes=-SUFFIX` give 206 (416 when unsatisfiable), anything else gives the
/// whole file with 200. Each response ends its connection (`Connection: close`), which is what
/// ffmpeg's HTTP client expects: it seeks by opening a new connection with a `Range` header, and
/// may abandon the old one mid-body, which just ends that connection quietly.
///
/// The rate cap and stalls apply to the server as a whole: all responses share one budget, like a
/// single slow link in front of the file.
///
/// Threading: create and `close` from one thread; `stall`, `setRate`, `requestCount` and
/// `bytesSent` may be used from any thread. The server runs its own threads (one accepting, one per
/// connection), which all exit on their own after `close`. Call `close` when done: the server's
/// threads keep it alive until then.
public final class SlowMediaServer: @unchecked Sendable {
    // @unchecked: the mutable state (`rate`, `nextSendAt`, `stallUntil`, `closed`, `connections`,
    // the counters) is only touched under `lock`; everything else is immutable after init. Sockets
    // are closed only by the thread that owns them, after it has removed them from `connections`
    // under `lock`, and `close` shuts them down under `lock`, so a descriptor number is never used
    // after it could have been reused.
    public let port: Int
    /// The served file's path, as given.
    public let file: String
    /// `http://127.0.0.1:PORT/NAME` where NAME is the served file's name; any path serves the file,
    /// except those starting with `/missing`, which answer 404 (a URL nobody can open).
    public let url: String
    private let listener: Int32
    private let fileDescriptor: Int32
    private let fileSize: Int
    private let contentType: String
    private let lock = NSLock()
    private var rate: Double?
    /// Pacing: the earliest time the next chunk may go out under the rate cap.
    private var nextSendAt: Double = 0
    private var stallUntil: Double = 0
    private var closed = false
    private var connections: Set<Int32> = []
    private var requests = 0
    private var sent = 0

    /// Largest piece written at once; smaller when the cap is low so the rate stays smooth.
    private static let chunkSize = 4_096
    /// Longest single sleep, so a stall, a rate change or `close` takes effect promptly.
    private static let sleepStep = 0.02
    /// Requested `SO_SNDBUF` per connection (Linux doubles it).
    private static let sendBufferSize = 16 * 1_024
    /// How far behind schedule pacing may catch up (sleep overshoot), so idle time is no credit.
    private static let catchUp = 0.05

    /// Serves `file` on an ephemeral port of 127.0.0.1, at most `bytesPerSecond` (nil: unlimited).
    public init(file path: String, bytesPerSecond: Double? = nil) throws {
        let fileDescriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard fileDescriptor >= 0 else { throw TestFailure("slow media server: cannot open \(path)") }
        var status = stat()
        guard fstat(fileDescriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            Glibc.close(fileDescriptor)
            throw TestFailure("slow media server: \(path) is not a regular file")
        }
        let listening: (fd: Int32, port: Int)
        do {
            listening = try LoopbackSocket.listen(what: "slow media server")
        } catch {
            Glibc.close(fileDescriptor)
            throw error
        }
        listener = listening.fd
        file = path
        self.fileDescriptor = fileDescriptor
        fileSize = Int(status.st_size)
        port = listening.port
        rate = Self.validRate(bytesPerSecond)
        nextSendAt = monotonicNow()
        let name = (path as NSString).lastPathComponent
        let encoded = name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? "media"
        url = "http://127.0.0.1:\(port)/\(encoded.isEmpty ? "media" : encoded)"
        switch (name as NSString).pathExtension.lowercased() {
        case "mkv": contentType = "video/x-matroska"
        case "webm": contentType = "video/webm"
        case "mp4", "m4v": contentType = "video/mp4"
        default: contentType = "application/octet-stream"
        }
        Thread { [self] in acceptLoop() }.start()
    }

    deinit {
        close()
        Glibc.close(fileDescriptor)
    }

    /// From now on, for `seconds`, no bytes go out on any response; connections stay open. Then
    /// sending resumes. A new call replaces the current stall (`stall(for: 0)` ends it).
    public func stall(for seconds: Double) {
        lock.withLock { stallUntil = monotonicNow() + max(0, seconds) }
    }

    /// Changes the cap, bytes per second, for everything sent from now on (nil: unlimited).
    public func setRate(_ bytesPerSecond: Double?) {
        lock.withLock {
            rate = Self.validRate(bytesPerSecond)
            nextSendAt = monotonicNow()
        }
    }

    /// Requests answered so far (any status), counting each connection's request once.
    public var requestCount: Int { lock.withLock { requests } }

    /// Bytes of the file sent in response bodies so far (headers not counted).
    public var bytesSent: Int { lock.withLock { sent } }

    /// Stops listening (new connections are refused) and shuts every connection down. Joins
    /// nothing: each thread notices within a sleep step and closes its own socket.
    public func close() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            // The accept thread closes `listener` once `accept` returns, and each connection
            // thread closes its own socket, so no descriptor is closed under a blocked call.
            shutdown(listener, Int32(SHUT_RDWR))
            for fd in connections { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    private static func validRate(_ bytesPerSecond: Double?) -> Double? {
        guard let bytesPerSecond, bytesPerSecond.isFinite, bytesPerSecond > 0 else { return nil }
        return bytesPerSecond
    }

    // MARK: Threads

    private func acceptLoop() {
        while true {
            let client = acceptClosedOnExec(listener)
            if client < 0 {
                let error = errno
                if lock.withLock({ closed }) || (error != EINTR && error != ECONNABORTED && error != EMFILE && error != ENFILE) {
                    break
                }
                if error == EMFILE || error == ENFILE { usleep(10_000) }
                continue
            }
            let keep = lock.withLock { () -> Bool in
                if closed { return false }
                connections.insert(client)
                return true
            }
            guard keep else {
                Glibc.close(client)
                break
            }
            Thread { [self] in serve(client) }.start()
        }
        lock.withLock { _ = shutdown(listener, Int32(SHUT_RDWR)) }
        Glibc.close(listener)
    }

    /// One connection: read one request, answer it, close.
    private func serve(_ fd: Int32) {
        defer {
            lock.withLock { _ = connections.remove(fd) }
            Glibc.close(fd)
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        // A small, fixed send buffer: otherwise the kernel grows it to megabytes, the pacing only
        // fills it, and a player that reads slower than the cap rides out a stall on what is queued.
        var sendBuffer = Int32(Self.sendBufferSize)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sendBuffer, socklen_t(MemoryLayout<Int32>.size))
        setReceiveTimeout(fd, seconds: 10)
        guard let head = readHead(fd) else { return }
        let response = respond(to: head)
        lock.withLock { requests += 1 }
        guard sendPaced(fd, Array(response.header.utf8), countsAsBody: false) else { return }
        if let body = response.body, !sendFile(fd, range: body) { return }
        // Lingering close: stop sending, then read whatever the client still sends (a pipelined
        // request, say) until it closes, so closing does not reset the connection under the
        // response the client has not read yet.
        shutdown(fd, Int32(SHUT_WR))
        setReceiveTimeout(fd, seconds: 2)
        var scratch = [UInt8](repeating: 0, count: 4_096)
        var drained = 0
        while drained < 1 << 20 {
            let count = recv(fd, &scratch, scratch.count, 0)
            if count <= 0 { break }
            drained += count
        }
    }

    private func setReceiveTimeout(_ fd: Int32, seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The request line and headers, up to the blank line; nil if the client goes away first.
    private func readHead(_ fd: Int32) -> String? {
        var data = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4_096)
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        while data.count < 64 * 1_024 {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { return nil }
            let searchFrom = max(0, data.count - 3)
            data += buffer[0..<count]
            if let at = Self.find(end, in: data, from: searchFrom) {
                return String(decoding: data[0..<at], as: UTF8.self)
            }
        }
        return nil
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = start
        while index + needle.count <= haystack.count {
            if haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }

    private struct Response {
        var header: String
        /// The file's bytes to send after the header, half-open; nil for none (HEAD, errors).
        var body: Range<Int>?
    }

    private func respond(to head: String) -> Response {
        let lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.first?.split(separator: " ") ?? []
        guard requestLine.count >= 2 else { return plain(400, "Bad Request") }
        let method = String(requestLine[0])
        guard method == "GET" || method == "HEAD" else {
            return plain(405, "Method Not Allowed", extra: "Allow: GET, HEAD\r\n")
        }
        if requestLine[1].hasPrefix("/missing") { return plain(404, "Not Found") }
        var rangeValue: String?
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].trimmingCharacters(in: .whitespaces).lowercased() == "range" {
                rangeValue = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        let common = "Accept-Ranges: bytes\r\nContent-Type: \(contentType)\r\nConnection: close\r\n"
        var range = 0..<fileSize
        var status = "200 OK"
        var extra = ""
        if let rangeValue {
            switch parseRange(rangeValue) {
            case .ignore:
                break
            case .unsatisfiable:
                return plain(416, "Range Not Satisfiable", extra: "Content-Range: bytes */\(fileSize)\r\nAccept-Ranges: bytes\r\n")
            case .range(let satisfiable):
                range = satisfiable
                status = "206 Partial Content"
                extra = "Content-Range: bytes \(satisfiable.lowerBound)-\(satisfiable.upperBound - 1)/\(fileSize)\r\n"
            }
        }
        let header = "HTTP/1.1 \(status)\r\n\(common)\(extra)Content-Length: \(range.count)\r\n\r\n"
        return Response(header: header, body: method == "GET" && !range.isEmpty ? range : nil)
    }

    private func plain(_ code: Int, _ reason: String, extra: String = "") -> Response {
        let body = "\(code) \(reason)\n"
        let header = "HTTP/1.1 \(code) \(reason)\r\n\(extra)Content-Type: text/plain\r\nConnection: close\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        return Response(header: header, body: nil)
    }

    private enum RangeRequest {
        case ignore
        case unsatisfiable
        case range(Range<Int>)
    }

    /// One byte range of `bytes=`; anything else (other units, several ranges, bad syntax) is
    /// ignored and the whole file is sent, as RFC 9110 allows.
    private func parseRange(_ value: String) -> RangeRequest {
        guard value.lowercased().hasPrefix("bytes=") else { return .ignore }
        let spec = value.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .ignore }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        if first.isEmpty {
            // bytes=-N: the last N bytes.
            guard let suffix = Int(last), suffix >= 0 else { return .ignore }
            guard suffix > 0, fileSize > 0 else { return .unsatisfiable }
            return .range(max(0, fileSize - suffix)..<fileSize)
        }
        guard let start = Int(first), start >= 0 else { return .ignore }
        var end = fileSize - 1
        if !last.isEmpty {
            guard let requested = Int(last), requested >= start else { return .ignore }
            end = min(requested, fileSize - 1)
        }
        guard start < fileSize else { return .unsatisfiable }
        return .range(start..<(end + 1))
    }

    /// Sends `range` of the file in paced chunks; false when the connection or the server is gone.
    private func sendFile(_ fd: Int32, range: Range<Int>) -> Bool {
        var buffer = [UInt8](repeating: 0, count: Self.chunkSize)
        var offset = range.lowerBound
        while offset < range.upperBound {
            let want = min(chunkLimit(), range.upperBound - offset)
            let count = buffer.withUnsafeMutableBytes { pread(fileDescriptor, $0.baseAddress, want, off_t(offset)) }
            if count <= 0 { return false }  // the file shrank or failed: end the response short
            guard sendPaced(fd, Array(buffer[0..<count]), countsAsBody: true) else { return false }
            offset += count
        }
        return true
    }

    /// About 50 ms worth at the current cap, between 512 bytes and `chunkSize`.
    private func chunkLimit() -> Int {
        guard let rate = lock.withLock({ rate }) else { return Self.chunkSize }
        return min(Self.chunkSize, max(512, Int(rate * 0.05)))
    }

    /// Waits out stalls and the rate cap, then writes all of `bytes`.
    private func sendPaced(_ fd: Int32, _ bytes: [UInt8], countsAsBody: Bool) -> Bool {
        guard waitForTurn(count: bytes.count) else { return false }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return false }  // EPIPE, ECONNRESET, shut down by `close`: just end
            offset += written
        }
        if countsAsBody { lock.withLock { sent += bytes.count } }
        return true
    }

    /// Sleeps in small steps until neither a stall nor the cap holds `count` bytes back, then
    /// books them against the cap. False once the server is closed.
    private func waitForTurn(count: Int) -> Bool {
        while true {
            let wait: Double? = lock.withLock {
                if closed { return nil }
                let now = monotonicNow()
                if now < stallUntil { return stallUntil - now }
                guard let rate else { return 0 }
                if now < nextSendAt { return nextSendAt - now }
                nextSendAt = max(nextSendAt, now - Self.catchUp) + Double(count) / rate
                return 0
            }
            guard let wait else { return false }
            if wait <= 0 { return true }
            usleep(UInt32(min(wait, Self.sleepStep) * 1_000_000))
        }
    }
}
