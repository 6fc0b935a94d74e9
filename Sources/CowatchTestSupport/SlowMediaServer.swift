import CowatchClient
import Foundation

/// A tiny HTTP/1.1 file server on loopback that serves one media file slowly, and stops sending
/// on request: what a viewer on a bad link sees, so mpv's cache runs dry (`paused-for-cache`) and
/// the room has to wait for that viewer. GET and HEAD, `Range: bytes=A-` and `bytes=A-B`, one
/// request per connection (`Connection: close`), every path serves the file.
///
/// Threading: create, `stall`, `setRate` and `close` from any thread; the server runs one thread
/// for accepting and one per connection.
public final class SlowMediaServer: @unchecked Sendable {
    // @unchecked: the mutable state (`rate`, `stalledUntil`, `closed`, `sockets`, counters) is
    // only touched under `lock`; everything else is immutable after init.
    public let port: Int
    public let file: String
    private let data: Data
    private let listener: Int32
    private let lock = NSLock()
    private var rate: Double?
    private var stalledUntil: Double = 0
    private var closed = false
    private var sockets: Set<Int32> = []
    private var requests = 0
    private var sent = 0

    /// Serves `file`, at most `bytesPerSecond` per connection (nil: as fast as it goes).
    public init(file: String, bytesPerSecond: Double? = nil) throws {
        self.file = file
        data = try Data(contentsOf: URL(fileURLWithPath: file))
        rate = bytesPerSecond
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            Glibc.close(fd)
            throw TestFailure("slow media server: cannot listen")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: actual.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// The URL to give mpv.
    public var url: String { "http://127.0.0.1:\(port)/" + (file.split(separator: "/").last.map(String.init) ?? "media") }

    /// From now on, for `seconds`, no byte is sent on any connection (they stay open).
    public func stall(for seconds: Double) {
        lock.withLock { stalledUntil = monotonicNow() + seconds }
    }

    /// Changes the per-connection rate cap (nil: unlimited).
    public func setRate(_ bytesPerSecond: Double?) {
        lock.withLock { rate = bytesPerSecond }
    }

    /// Requests served so far.
    public var requestCount: Int { lock.withLock { requests } }
    /// Body bytes sent so far.
    public var bytesSent: Int { lock.withLock { sent } }

    /// Stops listening and closes every connection; threads end on their own.
    public func close() {
        let open: Set<Int32> = lock.withLock {
            guard !closed else { return [] }
            closed = true
            return sockets
        }
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
    }

    deinit { close() }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            let accepted = lock.withLock { () -> Bool in
                if closed { return false }
                sockets.insert(fd)
                return true
            }
            guard accepted else {
                Glibc.close(fd)
                return
            }
            let thread = Thread { [self] in
                serve(fd)
                lock.withLock { _ = sockets.remove(fd) }
                Glibc.close(fd)
            }
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        guard let request = readRequest(fd) else { return }
        lock.withLock { requests += 1 }
        let lines = request.split(separator: "\r\n", omittingEmptySubsequences: false)
        let parts = lines.first?.split(separator: " ") ?? []
        let method = parts.first.map(String.init) ?? ""
        guard method == "GET" || method == "HEAD" else {
            _ = write(fd, Array("HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
            return
        }
        let total = data.count
        var start = 0
        var end = total - 1
        var partial = false
        for line in lines.dropFirst() {
            let lower = line.lowercased()
            guard lower.hasPrefix("range:"), let equals = lower.firstIndex(of: "=") else { continue }
            let spec = lower[lower.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            let bounds = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard let first = bounds.first, let from = Int(first) else { continue }
            partial = true
            start = from
            if bounds.count == 2, let to = Int(bounds[1]) { end = min(to, total - 1) }
        }
        if partial && (start >= total || start > end) {
            _ = write(fd, Array(
                "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */\(total)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
            return
        }
        var head = partial ? "HTTP/1.1 206 Partial Content\r\n" : "HTTP/1.1 200 OK\r\n"
        head += "Content-Type: video/x-matroska\r\nAccept-Ranges: bytes\r\nConnection: close\r\n"
        head += "Content-Length: \(end - start + 1)\r\n"
        if partial { head += "Content-Range: bytes \(start)-\(end)/\(total)\r\n" }
        head += "\r\n"
        guard write(fd, Array(head.utf8)), method == "GET" else { return }

        // The body in 4 KiB chunks, paced to the rate, holding everything while stalled.
        let chunk = 4096
        var offset = start
        let began = monotonicNow()
        var sentHere = 0
        while offset <= end {
            let (cap, stalled, isClosed) = lock.withLock { (rate, stalledUntil, closed) }
            if isClosed { return }
            let now = monotonicNow()
            if now < stalled {
                Thread.sleep(forTimeInterval: min(0.02, stalled - now))
                continue
            }
            if let cap, cap > 0 {
                let due = began + Double(sentHere) / cap
                if due > now {
                    Thread.sleep(forTimeInterval: min(0.02, due - now))
                    continue
                }
            }
            let upper = min(offset + chunk, end + 1)
            let bytes = [UInt8](data[offset..<upper])
            guard write(fd, bytes) else { return }
            lock.withLock { sent += bytes.count }
            sentHere += bytes.count
            offset = upper
        }
    }

    /// Reads up to the end of the request head (or 16 KiB).
    private func readRequest(_ fd: Int32) -> String? {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 2048)
        while buffer.count < 16384 {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            buffer += chunk[0..<count]
            if let text = String(bytes: buffer, encoding: .utf8), text.contains("\r\n\r\n") {
                return String(text[..<text.range(of: "\r\n\r\n")!.lowerBound])
            }
        }
        return nil
    }

    /// Writes everything; false when the peer went away (a player abandoning a connection).
    private func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }
}
