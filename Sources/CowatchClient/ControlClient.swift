import CowatchCore

#if canImport(Glibc)
import Glibc
#endif

/// A blocking client of a daemon's control socket, for the CLI, the benchmark and the tests.
///
/// `request` sends one command and reads lines until the matching reply; events that arrive
/// meanwhile are kept in `pendingEvents` (oldest first) for `nextEvent`. An event line that
/// `ControlEvent` cannot read (a known event with a missing or mistyped field) is dropped; an
/// event this version does not know arrives as `.unknown`.
///
/// Threading: not thread-safe; one thread uses one client. Every read is bounded by a timeout.
/// Errors: `CowatchError` — `not-running` when nobody listens, `unsafe-path` when the socket is in
/// a well-known directory that another user could control (see `ControlSocketDirectory`),
/// `timeout`, `io-error`, or the daemon's own error code from a failed reply.
public final class ControlClient {
    public let path: String
    private var fd: Int32
    private var framer = LineFramer(maxLineBytes: 16 * 1024 * 1024)
    private var pendingLines: [[UInt8]] = []
    private var nextRequestID = 0
    /// Events received while waiting for replies, oldest first.
    public private(set) var pendingEvents: [ControlEvent] = []

    /// Connects. Throws `not-running` when the socket is missing or nobody accepts on it, and
    /// `unsafe-path`, without connecting, when its directory is `$XDG_RUNTIME_DIR/cowatch` or
    /// `/tmp/cowatch-UID` but not a real directory of ours with mode 0700: a client never talks to
    /// a socket that another user could have put there.
    public init(path: String) throws(CowatchError) {
        self.path = path
        try ControlSocketDirectory.verify(socketPath: path)
        fd = try ControlSocketPath.connect(path: path)
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// True when something accepts connections on `path` (used to detect a live daemon).
    public static func isListening(path: String) -> Bool { ControlSocketPath.isListening(path: path) }

    public func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    /// Sends a command and returns the reply's `data`. Throws the reply's error when it failed.
    @discardableResult
    public func request(_ command: [JSONValue], timeout: Double = 10) throws(CowatchError) -> JSONValue {
        nextRequestID += 1
        let id = JSONValue.number(Double(nextRequestID))
        try sendLine(JSONValue.object(["command": .array(command), "request_id": id]).encoded())
        let reply = try awaitReply(requestID: id, timeout: timeout)
        return try reply.result.get()
    }

    /// `request` for a validated command.
    @discardableResult
    public func request(_ command: ControlCommand, timeout: Double = 10) throws(CowatchError) -> JSONValue {
        try request(command.arguments, timeout: timeout)
    }

    /// Reads until a reply with `requestID` arrives, keeping events.
    public func awaitReply(requestID: JSONValue, timeout: Double = 10) throws(CowatchError) -> ControlReply {
        let deadline = monotonicNow() + timeout
        while true {
            let value = try readJSON(deadline: deadline)
            if let reply = ControlReply(json: value), reply.requestID == requestID { return reply }
            if let event = try? ControlEvent(json: value) { pendingEvents.append(event) }
        }
    }

    /// Sends raw bytes followed by a newline (tests use this for malformed input).
    public func sendLine(_ bytes: [UInt8]) throws(CowatchError) {
        try sendRaw(bytes + [UInt8(ascii: "\n")])
    }

    /// Sends raw bytes as they are.
    public func sendRaw(_ bytes: [UInt8]) throws(CowatchError) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR { continue }
                throw CowatchError(.ioError, "write to \(path) failed: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }

    /// The next event, from those already received or by reading; nil when `timeout` passes.
    public func nextEvent(timeout: Double) throws(CowatchError) -> ControlEvent? {
        if !pendingEvents.isEmpty { return pendingEvents.removeFirst() }
        let deadline = monotonicNow() + timeout
        while true {
            let value: JSONValue
            do {
                value = try readJSON(deadline: deadline)
            } catch where error.code == .timeout {
                return nil
            }
            if let event = try? ControlEvent(json: value) { return event }
        }
    }

    /// The next event with this name (others are dropped); nil on timeout.
    public func waitForEvent(named name: String, timeout: Double, where predicate: (ControlEvent) -> Bool = { _ in true })
        throws(CowatchError) -> ControlEvent?
    {
        let deadline = monotonicNow() + timeout
        while true {
            let left = deadline - monotonicNow()
            guard left > 0, let event = try nextEvent(timeout: left) else { return nil }
            if event.name == name && predicate(event) { return event }
        }
    }

    /// Reads one line and parses it as JSON.
    public func readJSON(deadline: Double) throws(CowatchError) -> JSONValue {
        let line = try readLine(deadline: deadline)
        return try JSONValue.parse(line)
    }

    /// Reads one raw line (without newline). Throws `timeout`, or `io-error` when the daemon closed.
    public func readLine(deadline: Double) throws(CowatchError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while pendingLines.isEmpty {
            let left = deadline - monotonicNow()
            guard left > 0 else { throw CowatchError(.timeout, "no answer from \(path) in time") }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(left * 1000, 60_000).rounded(.up)))
            if ready < 0 && errno != EINTR { throw CowatchError(.ioError, "poll failed: \(String(cString: strerror(errno)))") }
            if ready <= 0 { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { throw CowatchError(.ioError, "the daemon closed the connection") }
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw CowatchError(.ioError, "read failed: \(String(cString: strerror(errno)))")
            }
            for item in framer.feed(buffer[0..<count]) {
                if case .line(let line) = item { pendingLines.append(line) }
            }
        }
        return pendingLines.removeFirst()
    }
}

/// Seconds of `CLOCK_MONOTONIC` (`SystemClock`'s), for clients that observe real processes.
public func monotonicNow() -> Double { SystemClock.monotonicSeconds() }
