/// Deadlines by time in a binary min-heap, so a server with a thousand rooms or ten thousand
/// connections finds what is due without scanning them all.
///
/// Entries are hints: the owner keeps each key's real deadline and skips (or re-pushes) an entry
/// whose key's deadline moved since. Threading: a value type; one owner.
struct DeadlineHeap<Key: Sendable>: Sendable {
    private(set) var entries: [(time: Double, key: Key)] = []

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }
    var first: (time: Double, key: Key)? { entries.first }

    mutating func push(_ time: Double, _ key: Key) {
        entries.append((time, key))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].time < entries[parent].time else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest entry if it is due at `now`.
    mutating func popDue(_ now: Double) -> (time: Double, key: Key)? {
        guard let first = entries.first, first.time <= now else { return nil }
        return popFirst()
    }

    /// Removes and returns the earliest entry.
    @discardableResult
    mutating func popFirst() -> (time: Double, key: Key)? {
        guard let first = entries.first else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < entries.count, entries[left].time < entries[smallest].time { smallest = left }
                if right < entries.count, entries[right].time < entries[smallest].time { smallest = right }
                guard smallest != parent else { break }
                entries.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return first
    }
}
