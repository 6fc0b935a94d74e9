#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Splits a byte stream into newline-terminated lines with a size limit.
///
/// Feed it whatever chunks arrive (a byte at a time works); it returns the complete lines found
/// so far without their terminator (a trailing `\r` is dropped too). A line longer than
/// `maxLineBytes` yields `.tooLong` once, and the rest of that line is discarded up to its newline,
/// so a peer cannot make us buffer without bound.
///
/// Threading: a value type; one owner mutates it.
public struct LineFramer: Sendable {
    public enum Item: Sendable, Equatable {
        case line([UInt8])
        case tooLong
    }

    public let maxLineBytes: Int
    private var buffer: [UInt8] = []
    private var discarding = false

    public init(maxLineBytes: Int) {
        precondition(maxLineBytes > 0)
        self.maxLineBytes = maxLineBytes
    }

    /// Bytes held for an unfinished line.
    public var pendingByteCount: Int { buffer.count }

    /// The same as `feed(_:)` for bytes in memory, a run at a time instead of a byte at a time:
    /// the generic version is not specialized across modules, and on a busy room server its
    /// per-byte iterator calls were a visible share of the CPU.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> [Item] {
        var items: [Item] = []
        guard var cursor = bytes.baseAddress else { return items }
        var left = bytes.count
        let newline = Int32(UInt8(ascii: "\n"))
        while left > 0 {
            let found = memchr(cursor, newline, left)
            let runLength = found.map { UnsafeRawPointer($0) - cursor } ?? left
            if !discarding {
                if buffer.count + runLength > maxLineBytes {
                    startDiscarding(&items)
                } else {
                    buffer.append(contentsOf: UnsafeRawBufferPointer(start: cursor, count: runLength))
                }
            }
            guard found != nil else { break }
            endLine(&items)
            cursor += runLength + 1
            left -= runLength + 1
        }
        return items
    }

    public mutating func feed<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> [Item] {
        var items: [Item] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                endLine(&items)
            } else if !discarding {
                buffer.append(byte)
                if buffer.count > maxLineBytes { startDiscarding(&items) }
            }
        }
        return items
    }

    /// A newline: the line held is complete, or the discarded rest of an over-long one ends.
    private mutating func endLine(_ items: inout [Item]) {
        if discarding {
            discarding = false
        } else {
            if buffer.last == UInt8(ascii: "\r") { buffer.removeLast() }
            items.append(.line(buffer))
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// The line outgrew `maxLineBytes`: say so once, and drop the rest of it up to its newline.
    private mutating func startDiscarding(_ items: inout [Item]) {
        buffer.removeAll()
        discarding = true
        items.append(.tooLong)
    }
}
