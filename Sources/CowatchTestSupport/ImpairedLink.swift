import CowatchClient
import Foundation

/// What one direction of a link does to the bytes crossing it.
public struct LinkImpairment: Sendable {
    /// One-way base delay, seconds.
    public var delay: Double
    /// Uniform extra delay in ±jitter, seconds (order is kept, as TCP would).
    public var jitter: Double
    /// Every `stallEvery` seconds nothing gets through for `stallLength` seconds, then everything
    /// held arrives at once: what loss and retransmission look like from above TCP.
    public var stallEvery: Double?
    public var stallLength: Double
    /// Bandwidth cap, bytes per second.
    public var bytesPerSecond: Double?
    /// A fraction of chunks is "lost" and arrives `retransmit` seconds late: over TCP, loss is
    /// a retransmission's delay, and every later chunk waits behind it (order is kept).
    public var loss: Double
    public var retransmit: Double
    /// Heavy-tailed extra delay: Pareto with shape `tailShape` and scale `tailScale` (seconds,
    /// also the minimum of the untruncated law, which is shifted to start at 0), capped at `tailCap`.
    /// Most chunks get a little, a few get a lot: queueing on a busy or radio link.
    public var tailScale: Double
    public var tailShape: Double
    public var tailCap: Double
    /// Every `burstEvery` seconds, for `burstLength`, the tail is `burstFactor` times larger
    /// (interference, a neighbour's download).
    public var burstEvery: Double?
    public var burstLength: Double
    public var burstFactor: Double

    public init(
        delay: Double = 0, jitter: Double = 0, stallEvery: Double? = nil, stallLength: Double = 0,
        bytesPerSecond: Double? = nil, loss: Double = 0, retransmit: Double = 0.2,
        tailScale: Double = 0, tailShape: Double = 1.5, tailCap: Double = .infinity,
        burstEvery: Double? = nil, burstLength: Double = 0, burstFactor: Double = 1
    ) {
        self.delay = delay
        self.jitter = jitter
        self.stallEvery = stallEvery
        self.stallLength = stallLength
        self.bytesPerSecond = bytesPerSecond
        self.loss = loss
        self.retransmit = retransmit
        self.tailScale = tailScale
        self.tailShape = tailShape
        self.tailCap = tailCap
        self.burstEvery = burstEvery
        self.burstLength = burstLength
        self.burstFactor = burstFactor
    }

    /// The delay of one chunk sent `elapsed` seconds after the link opened, before stalls,
    /// bandwidth and ordering; `random` supplies the chance.
    func delay(elapsed: Double, random: inout SeededRandom) -> Double {
        var total = delay + random.uniform(-jitter, jitter)
        if tailScale > 0 {
            var scale = tailScale
            if let every = burstEvery, elapsed.truncatingRemainder(dividingBy: every) < burstLength { scale *= burstFactor }
            // Inverse transform of Pareto(scale, shape), minus its minimum.
            let pareto = scale * (pow(1 - random.unit(), -1 / tailShape) - 1)
            total += min(pareto, tailCap)
        }
        if loss > 0, random.unit() < loss { total += retransmit }
        return max(0, total)
    }
}

/// A TCP proxy on loopback that impairs what passes through it: put one between a daemon and the
/// room server to give that participant a bad link. Only ever listens on and connects to 127.0.0.1.
///
/// Threading: create and `close` from one thread; the proxy runs its own threads.
public final class ImpairedLink: @unchecked Sendable {
    // @unchecked: the mutable state (`manualStallUntil`, `closed`, sockets list) is only touched
    // under `lock`; everything else is immutable after init.
    public let port: Int
    private let listener: Int32
    private let upstreamPort: Int
    private let up: LinkImpairment
    private let down: LinkImpairment
    private let lock = NSLock()
    private var sockets: [Int32] = []
    private var manualStallUntil: Double = 0
    /// Armed by `cutOnce`: the byte count towards the daemon past which a connection is cut.
    private var cutAfter: Int?
    private var closed = false
    private var random: SeededRandom
    private let start = monotonicNow()

    public init(upstreamPort: Int, up: LinkImpairment, down: LinkImpairment, seed: UInt64 = 1) throws {
        self.upstreamPort = upstreamPort
        self.up = up
        self.down = down
        self.random = SeededRandom(seed: seed)
        (listener, port) = try LoopbackSocket.listen(what: "impaired link")
        Thread { [self] in acceptLoop() }.start()
    }

    deinit { close() }

    /// Holds both directions for `seconds` from now (a link that goes dark, then recovers).
    public func stall(for seconds: Double) {
        lock.withLock { manualStallUntil = monotonicNow() + seconds }
    }

    /// Cuts the next connection that carries more than `bytes` towards the daemon, once (both
    /// ways, as a dropped link would): a transfer broken off midway while the room connection,
    /// which carries far less, stays up.
    public func cutOnce(afterDownstreamBytes bytes: Int) {
        lock.withLock { cutAfter = bytes }
    }

    public func close() {
        let toClose: [Int32] = lock.withLock {
            guard !closed else { return [] }
            closed = true
            return sockets + [listener]
        }
        for fd in toClose {
            shutdown(fd, Int32(SHUT_RDWR))
            Glibc.close(fd)
        }
    }

    private func acceptLoop() {
        while true {
            let client = acceptClosedOnExec(listener)
            if client < 0 { return }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = LoopbackSocket.address(port: upstreamPort)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            var one: Int32 = 1
            for fd in [client, server] { setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) }
            let keep = lock.withLock { () -> Bool in
                if closed { return false }
                sockets += [client, server]
                return true
            }
            guard keep, connected == 0 else {
                Glibc.close(client)
                Glibc.close(server)
                continue
            }
            startPipe(from: client, to: server, impairment: up, downstream: false)
            startPipe(from: server, to: client, impairment: down, downstream: true)
        }
    }

    /// One direction: a reader that timestamps chunks and a writer that releases them on time.
    private func startPipe(from source: Int32, to destination: Int32, impairment: LinkImpairment, downstream: Bool) {
        let queue = ChunkQueue()
        Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            var lastDelivery = 0.0
            var carried = 0
            while true {
                let count = recv(source, &buffer, buffer.count, 0)
                if count <= 0 { break }
                carried += count
                if downstream, lock.withLock({ () -> Bool in
                    guard let limit = cutAfter, carried > limit else { return false }
                    cutAfter = nil
                    return true
                }) {
                    shutdown(source, Int32(SHUT_RDWR))
                    shutdown(destination, Int32(SHUT_RDWR))
                    break
                }
                let now = monotonicNow()
                var at = now + lock.withLock { impairment.delay(elapsed: now - start, random: &random) }
                if let every = impairment.stallEvery, impairment.stallLength > 0 {
                    let phase = (now - start).truncatingRemainder(dividingBy: every)
                    if phase < impairment.stallLength { at = max(at, now - phase + impairment.stallLength) }
                }
                at = max(at, lock.withLock { manualStallUntil })
                if let rate = impairment.bytesPerSecond { at = max(at, lastDelivery + Double(count) / rate) }
                at = max(at, lastDelivery)  // TCP keeps order
                lastDelivery = at
                queue.push(Array(buffer[0..<count]), at: at)
            }
            queue.finish()
        }.start()
        Thread {
            while let (chunk, at) = queue.pop() {
                let wait = at - monotonicNow()
                if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
                var offset = 0
                while offset < chunk.count {
                    let sent = chunk[offset...].withUnsafeBytes { send(destination, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if sent <= 0 { return }
                    offset += sent
                }
            }
            shutdown(destination, Int32(SHUT_WR))
        }.start()
    }
}

/// A blocking FIFO of timed chunks between a pipe's two threads.
final class ChunkQueue: @unchecked Sendable {
    // @unchecked: all state is guarded by `condition`.
    private let condition = NSCondition()
    private var items: [([UInt8], Double)] = []
    private var finished = false

    func push(_ chunk: [UInt8], at: Double) {
        condition.withLock {
            items.append((chunk, at))
            condition.signal()
        }
    }

    func finish() {
        condition.withLock {
            finished = true
            condition.signal()
        }
    }

    func pop() -> ([UInt8], Double)? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !finished { condition.wait() }
        return items.isEmpty ? nil : items.removeFirst()
    }
}
