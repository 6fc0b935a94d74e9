import CowatchClient
import CowatchTestSupport
/// `map` and `allSatisfy` whose closures may suspend (one element at a time, in order): for
/// reading every daemon of a room, each read awaited.
extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }

    func asyncAllSatisfy(_ predicate: (Element) async throws -> Bool) async rethrows -> Bool {
        for element in self where try await !predicate(element) { return false }
        return true
    }
}

/// True once `condition` holds (looked at every 50 ms), false when it still does not after
/// `timeout` seconds.
func eventually(timeout: Double, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = monotonicNow() + timeout
    while monotonicNow() < deadline {
        if try await condition() { return true }
        await pause(0.05)
    }
    return try await condition()
}
