import Foundation

/// A value behind a lock.
///
/// We use this instead of `Synchronization.Mutex` because on Linux that one locks with raw futex
/// calls, which ThreadSanitizer cannot see: every access then shows up as a (false) race and
/// buries real ones. `NSLock` is a pthread mutex, which TSan understands.
///
/// `@unchecked Sendable` is safe because `value` is only reached inside `withLock`, under the lock.
/// Threading: any thread; do not call `withLock` re-entrantly.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
