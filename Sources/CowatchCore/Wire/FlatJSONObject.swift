/// A fast reader for the wire's most frequent lines: one JSON object whose values are all
/// scalars (`time_request`, `report`, `ready`, most actions). It returns nil for anything else —
/// nesting, `\u` escapes, duplicate keys, numbers it cannot read exactly, invalid UTF-8, any
/// syntax error — and the caller then takes the general path (`JSONValue.parse`), which accepts or
/// refuses the line as before. So what this accepts is strict RFC 8259 JSON and decodes to the
/// same values the general path gives.
///
/// Threading: pure function.
enum FlatJSONObject {
    static func parse<Bytes: Collection<UInt8>>(_ line: Bytes) -> [String: JSONValue]? {
        if let result = line.withContiguousStorageIfAvailable({ parse(buffer: $0) }) { return result }
        return Array(line).withUnsafeBufferPointer { parse(buffer: $0) }
    }

    private static func parse(buffer: UnsafeBufferPointer<UInt8>) -> [String: JSONValue]? {
        var scanner = Scanner(bytes: buffer)
        return scanner.object()
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func object() -> [String: JSONValue]? {
            guard take(UInt8(ascii: "{")) else { return nil }
            var result: [String: JSONValue] = [:]
            if take(UInt8(ascii: "}")) { return finished(result) }
            while true {
                skipSpace()
                guard let key = string(), take(UInt8(ascii: ":")), let value = scalar() else { return nil }
                guard result.updateValue(value, forKey: key) == nil else { return nil }  // duplicate: general path
                if take(UInt8(ascii: ",")) { continue }
                guard take(UInt8(ascii: "}")) else { return nil }
                return finished(result)
            }
        }

        mutating func finished(_ result: [String: JSONValue]) -> [String: JSONValue]? {
            skipSpace()
            return index == bytes.count ? result : nil
        }

        mutating func scalar() -> JSONValue? {
            skipSpace()
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return literal("null") ? .null : nil
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number().map(JSONValue.number)
            default: return nil  // nested, or not JSON
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
            index += count
            return true
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, read with Swift's correctly rounded parser.
        mutating func number() -> Double? {
            let start = index
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                guard digits() > 0 else { return nil }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { return nil }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { return nil }
            }
            // Long numbers (beyond what the wire uses) take the general path, rounding and all.
            guard index - start <= 32 else { return nil }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            guard let value = Double(text), value.isFinite else { return nil }
            return value
        }

        mutating func digits() -> Int {
            var count = 0
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                index += 1
                count += 1
            }
            return count
        }

        /// A string with at most the simple escapes; nil for `\u`, control characters or invalid UTF-8.
        mutating func string() -> String? {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            index += 1
            let start = index
            var escaped = false
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") { break }
                if byte < 0x20 { return nil }
                if byte == UInt8(ascii: "\\") {
                    escaped = true
                    index += 1
                    guard index < bytes.count else { return nil }
                }
                index += 1
            }
            guard index < bytes.count else { return nil }
            let raw = UnsafeBufferPointer(rebasing: bytes[start..<index])
            index += 1
            guard escaped else { return String(validating: raw, as: UTF8.self) }
            var unescaped: [UInt8] = []
            unescaped.reserveCapacity(raw.count)
            var position = 0
            while position < raw.count {
                var byte = raw[position]
                if byte == UInt8(ascii: "\\") {
                    position += 1
                    switch raw[position] {
                    case UInt8(ascii: "\""): byte = UInt8(ascii: "\"")
                    case UInt8(ascii: "\\"): byte = UInt8(ascii: "\\")
                    case UInt8(ascii: "/"): byte = UInt8(ascii: "/")
                    case UInt8(ascii: "n"): byte = 0x0A
                    case UInt8(ascii: "r"): byte = 0x0D
                    case UInt8(ascii: "t"): byte = 0x09
                    case UInt8(ascii: "b"): byte = 0x08
                    case UInt8(ascii: "f"): byte = 0x0C
                    default: return nil  // \u and invalid escapes: general path
                    }
                }
                unescaped.append(byte)
                position += 1
            }
            return String(validating: unescaped, as: UTF8.self)
        }
    }
}
