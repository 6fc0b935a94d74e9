import CowatchClient
import CowatchCore
import CowatchObserver
import Foundation

/// `ControlClient`'s blocking calls, each in a form that suspends the task instead: the read (or
/// the write, which a full socket would block) runs on a thread of its own (`offPool`). Same
/// names and arguments: in an async test, `try await client.request(.play)` is this one.
///
/// The client is used by one thread at a time still: the task that owns it waits while the
/// thread uses it.
extension ControlClient {
    /// Sends a command and returns the reply's `data`. Throws the reply's error when it failed.
    @discardableResult
    public func request(_ command: [JSONValue], timeout: Double = 10) async throws(CowatchError) -> JSONValue {
        try await offPool { [self] () throws(CowatchError) -> JSONValue in try request(command, timeout: timeout) }
    }

    /// `request` for a validated command.
    @discardableResult
    public func request(_ command: ControlCommand, timeout: Double = 10) async throws(CowatchError) -> JSONValue {
        try await offPool { [self] () throws(CowatchError) -> JSONValue in try request(command, timeout: timeout) }
    }

    /// Reads until a reply with `requestID` arrives, keeping events.
    public func awaitReply(requestID: JSONValue, timeout: Double = 10) async throws(CowatchError) -> ControlReply {
        try await offPool { [self] () throws(CowatchError) -> ControlReply in try awaitReply(requestID: requestID, timeout: timeout) }
    }

    /// Sends raw bytes followed by a newline.
    public func sendLine(_ bytes: [UInt8]) async throws(CowatchError) {
        try await offPool { [self] () throws(CowatchError) in try sendLine(bytes) }
    }

    /// Sends raw bytes as they are.
    public func sendRaw(_ bytes: [UInt8]) async throws(CowatchError) {
        try await offPool { [self] () throws(CowatchError) in try sendRaw(bytes) }
    }

    /// The next event, from those already received or by reading; nil when `timeout` passes.
    public func nextEvent(timeout: Double) async throws(CowatchError) -> ControlEvent? {
        // One already received needs no read (and no thread).
        if !pendingEvents.isEmpty { return try { () throws(CowatchError) in try nextEvent(timeout: 0) }() }
        return try await offPool { [self] () throws(CowatchError) -> ControlEvent? in try nextEvent(timeout: timeout) }
    }

    /// The next event with this name (others are dropped); nil on timeout. `predicate` runs on
    /// the caller's task.
    public func waitForEvent(named name: String, timeout: Double, where predicate: (ControlEvent) -> Bool = { _ in true })
        async throws(CowatchError) -> ControlEvent?
    {
        let deadline = monotonicNow() + timeout
        while true {
            let left = deadline - monotonicNow()
            guard left > 0, let event = try await nextEvent(timeout: left) else { return nil }
            if event.name == name && predicate(event) { return event }
        }
    }

    /// Reads one line and parses it as JSON.
    public func readJSON(deadline: Double) async throws(CowatchError) -> JSONValue {
        try await offPool { [self] () throws(CowatchError) -> JSONValue in try readJSON(deadline: deadline) }
    }

    /// Reads one raw line (without newline). Throws `timeout`, or `io-error` when the daemon closed.
    public func readLine(deadline: Double) async throws(CowatchError) -> [UInt8] {
        try await offPool { [self] () throws(CowatchError) -> [UInt8] in try readLine(deadline: deadline) }
    }
}

extension SkewSampler {
    /// One reading per player carried to a common instant (nil when a player has no value): the
    /// reads, and their timing, on a thread of their own while the task is suspended.
    public func positions(rate: Double) async -> [Double]? {
        await offPool { positions(rate: rate) }
    }

    /// `sample(count:interval:rate:)` (the per-round skews, `count` rounds `interval` seconds
    /// apart) on a thread of its own while the task is suspended. Not `sample`: `cowatch-bench`
    /// calls that one from an async function of its own, where this one would be taken.
    public func skews(count: Int, interval: Double, rate: Double) async -> [Double] {
        await offPool { sample(count: count, interval: interval, rate: rate) }
    }
}

extension FrameSkewSampler {
    /// `sample(seconds:rate:)` on a thread of its own while the task is suspended.
    public func sample(seconds: Double, rate: Double) async -> [Double] {
        await offPool { sample(seconds: seconds, rate: rate) }
    }
}
