import CowatchClient
import CowatchCore
import CowatchObserver
import Foundation

// Waiting without holding a thread of Swift's cooperative pool.
//
// Every async test in the package runs on Swift's cooperative thread pool, which has one thread
// per core (two on CI). The in-process suites (the daemon's logic with real loopback servers, TLS
// handshakes, the Redis directory) have real-time deadlines. A test that blocks one of those
// threads while it waits for a real process (a sleep, a polling loop, a read with a timeout,
// `waitUntilExit`) takes it away from them for that long; two such tests take them all, and then
// nothing else runs: daemons are not joined in 10 s, TLS handshakes pass their limit. So the
// process-driving suites wait only in these ways, which hold no thread of the pool:
//
// - `pause(_:)` sleeps by suspending the task (`Task.sleep`);
// - `offPool(_:)` runs one blocking call (a read or a `poll` with a timeout, a whole sampling
//   run) on a thread of its own, outside the pool, and suspends the task until it returns;
// - `ProcessExit` learns of a process's exit from its `terminationHandler`, with a deadline;
// - `BackgroundCleanup` ends processes for a `defer` (which cannot await) on threads of its own.
//
// The types here keep their blocking (synchronous) forms for `cowatch-bench`, a synchronous
// program with threads to spare; the async forms have the same names where that is unambiguous,
// so a test that awaits gets the suspending one. (The integration suites go one step further:
// their tasks run on threads of their own, not the pool's; see `RealProcesses` there.)

/// Lets `seconds` of real time pass with the task suspended (no thread held). Returns early only
/// if the task is cancelled.
public func pause(_ seconds: Double) async {
    guard seconds > 0, seconds.isFinite else { return }
    try? await Task.sleep(for: .seconds(seconds))
}

/// Runs `body`, which blocks (a read with a timeout, a `poll`, a sampling run that sleeps
/// between reads), on a new thread of its own and suspends the calling task until it returns;
/// returns what it returned, or throws what it threw.
///
/// Why a thread of its own: a blocking call on the calling task would hold one of Swift's
/// cooperative threads (one per core) for as long as it blocks, and the other tests' tasks need
/// them; Dispatch's global queues are no better, as on Linux Swift's global executor runs on
/// them. A thread per call costs tens of microseconds, nothing beside the waits it carries.
///
/// `body` may use non-`Sendable` values the caller owns (a `ControlClient`, a `DaemonRoom`'s
/// probes): the caller is suspended until `body` returns, so they are still used by one thread at
/// a time. The caller must not hand them to another task meanwhile. Keep test expectations
/// (`#expect`, `Issue.record`) out of `body`: they belong on the test's own task, where Swift
/// Testing knows which test they are for; return values and check them there.
public func offPool<Value, Failure: Error>(_ body: @escaping () throws(Failure) -> Value) async throws(Failure) -> Value {
    let work = Unchecked(body)
    let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Unchecked<Result<Value, Failure>>, Never>) in
        Thread.detachNewThread {
            continuation.resume(returning: Unchecked(Result<Value, Failure>(catching: work.value)))
        }
    }
    return try outcome.value.get()
}

/// A value handed to another thread while its owner waits for that thread (`offPool`, a
/// background cleanup): used by one thread at a time, though the compiler cannot see it.
struct Unchecked<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// A process's exit, learnt from its `terminationHandler`: `wait(timeout:)` suspends the task
/// until the process has exited or the deadline has passed, holding no thread meanwhile.
///
/// Make it before `process.run()` (Foundation calls a handler only if it is set when the
/// process ends); it takes the process's `terminationHandler` for itself.
///
/// Threading: any thread, any number of waiters.
public final class ProcessExit: @unchecked Sendable {
    // @unchecked: `process` is only read for `isRunning` (Foundation's own synchronisation);
    // everything else is behind `state`'s lock.
    private struct State {
        var exited = false
        var status: Int32 = 0
        var reason: Process.TerminationReason = .exit
        var waiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var expired: Set<UInt64> = []
        var next: UInt64 = 0
    }

    private let process: Process
    private let state = Locked(State())

    public init(_ process: Process) {
        self.process = process
        process.terminationHandler = { [state] ended in
            let waiters = state.withLock { state in
                state.exited = true
                state.status = ended.terminationStatus
                state.reason = ended.terminationReason
                defer { state.waiters = [:] }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume(returning: true) }
        }
    }

    /// True once the process has ended.
    public var hasExited: Bool { state.withLock { $0.exited } }

    /// The exit status (or the signal), and why: `nil` while the process runs.
    public var outcome: (status: Int32, reason: Process.TerminationReason)? {
        state.withLock { $0.exited ? ($0.status, $0.reason) : nil }
    }

    /// Suspends until the process has exited (true) or `timeout` seconds have passed (false).
    @discardableResult
    public func wait(timeout: Double) async -> Bool {
        let id: UInt64? = state.withLock { state in
            if state.exited { return nil }
            state.next += 1
            return state.next
        }
        guard let id else { return await settled() }
        let timer = Task { [state] in
            try? await Task.sleep(for: .seconds(max(0, timeout)))
            if Task.isCancelled { return }
            let waiter = state.withLock { state in
                state.expired.insert(id)
                return state.waiters.removeValue(forKey: id)
            }
            waiter?.resume(returning: false)
        }
        defer { timer.cancel() }
        let exited = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let now: Bool? = state.withLock { state in
                if state.exited { return true }
                if state.expired.remove(id) != nil { return false }
                state.waiters[id] = continuation
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
        return exited ? await settled() : false
    }

    /// Foundation calls the handler just before it marks the process as no longer running: wait
    /// (a moment, suspended) until `isRunning` says so too, so that callers may read it.
    private func settled() async -> Bool {
        let deadline = monotonicNow() + 1
        while process.isRunning && monotonicNow() < deadline { await pause(0.001) }
        return true
    }
}

extension Process {
    /// Starts the process with a `ProcessExit` watching it.
    public func start() throws -> ProcessExit {
        let exit = ProcessExit(self)
        try runSerially()
        return exit
    }

    /// `run()`, one launch at a time in this process: a CI run crashed once inside Foundation's
    /// `Process.run()` (a bad read in its memmove) while other threads were launching processes
    /// too. A launch takes about a millisecond; taking turns costs nothing measurable.
    ///
    /// Give the child pipes made by `Pipe.forChild()`, never `Pipe()`: see ChildDescriptors.swift.
    public func runSerially() throws {
        try Self.launching.withLock { try run() }
    }

    /// Held while a child is launched, and while a descriptor that must not reach one is made
    /// (`Pipe.forChild()`, `acceptClosedOnExec`).
    static let launching = NSLock()
}


/// What a program that ran to its end left: its exit status and both streams.
public struct ProgramOutput: Sendable, CustomStringConvertible {
    public var status: Int32
    public var stdout: String
    public var stderr: String

    public init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }

    public var description: String { "status \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

/// Runs a configured, not yet started `process` to its end and returns its status and output,
/// suspended while it runs. Its standard output and error go to temporary files, not pipes, so a
/// chatty program never blocks on a full pipe and nothing needs reading while it runs. After
/// `timeout` seconds it is killed and `TestFailure` thrown.
public func runToEnd(_ process: Process, timeout: Double = 300) async throws -> ProgramOutput {
    let base = NSTemporaryDirectory() + "cowatch-run-\(getpid())-\(UUID().uuidString.prefix(8))"
    FileManager.default.createFile(atPath: base + ".out", contents: nil)
    FileManager.default.createFile(atPath: base + ".err", contents: nil)
    defer {
        try? FileManager.default.removeItem(atPath: base + ".out")
        try? FileManager.default.removeItem(atPath: base + ".err")
    }
    process.standardOutput = FileHandle(forWritingAtPath: base + ".out")
    process.standardError = FileHandle(forWritingAtPath: base + ".err")
    let exit = try process.start()
    let pid = process.processIdentifier
    guard await exit.wait(timeout: timeout) else {
        kill(pid, SIGKILL)
        await exit.wait(timeout: 10)
        throw TestFailure("\(process.executableURL?.path ?? "a program") did not end in \(timeout) s")
    }
    return ProgramOutput(
        status: exit.outcome?.status ?? -1,
        stdout: (try? String(contentsOfFile: base + ".out", encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? "")
}

/// Cleanups a `defer` starts and does not wait for: a `defer` cannot await, and waiting there
/// for processes to end would block the test's thread. Each runs on a thread of its own; the
/// test process waits for the last of them (up to a minute) before it exits, so nothing a test
/// started outlives the run.
public enum BackgroundCleanup {
    private static let running = DispatchGroup()
    private static let registered: Void = {
        atexit { _ = BackgroundCleanup.running.wait(timeout: .now() + 60) }
    }()

    /// Runs `work` on a thread of its own and returns at once.
    public static func run(_ work: @escaping @Sendable () -> Void) {
        _ = registered
        running.enter()
        Thread.detachNewThread {
            work()
            running.leave()
        }
    }
}

extension Process {
    /// For a `deinit` (which may run on a test's task, and cannot wait there): SIGKILL now if it
    /// still runs; Foundation reaps it, and a background cleanup waits for that.
    func killInBackground(then cleanup: @escaping @Sendable () -> Void = {}) {
        guard isRunning else {
            cleanup()
            return
        }
        kill(processIdentifier, SIGKILL)
        let process = Unchecked(self)
        BackgroundCleanup.run {
            process.value.waitUntilExit()
            cleanup()
        }
    }

    /// For a `defer`: asks the process to end (SIGTERM) and returns at once; a background
    /// cleanup waits for it and kills it (SIGKILL) if it has not ended after `timeout` seconds.
    public func terminateInBackground(timeout: Double = 10) {
        guard isRunning else { return }
        let pid = processIdentifier
        kill(pid, SIGTERM)
        let process = Unchecked(self)
        BackgroundCleanup.run {
            let deadline = monotonicNow() + timeout
            while process.value.isRunning && monotonicNow() < deadline { usleep(10_000) }
            if process.value.isRunning {
                kill(pid, SIGKILL)
                process.value.waitUntilExit()
            }
        }
    }
}
