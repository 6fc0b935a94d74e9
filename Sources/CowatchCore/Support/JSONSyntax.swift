/// Finds the first syntax error in a JSON document, with its line and column, for messages a
/// person can act on ("config file …: line 3, column 8: expected a value"). Foundation's parser
/// reports only "around character 19" inside an `NSCocoaErrorDomain` error, and accepts some
/// text that is not JSON (a trailing comma).
///
/// Strict RFC 8259; nesting depth is bounded so hostile input cannot exhaust the stack.
/// Threading: stateless; any thread.
public enum JSONSyntax {
    public struct Problem: Sendable, Hashable, CustomStringConvertible {
        /// 1-based; columns count bytes, so a tab or a multi-byte character counts as one or more.
        public var line: Int
        public var column: Int
        public var reason: String
        public var description: String { "line \(line), column \(column): \(reason)" }
    }

    /// nil when `bytes` holds exactly one valid JSON value (surrounded by whitespace at most).
    public static func firstProblem(in bytes: [UInt8]) -> Problem? {
        var scanner = Scanner(bytes: bytes)
        do throws(Problem) {
            scanner.skipWhitespace()
            try scanner.value(depth: 0)
            scanner.skipWhitespace()
            if scanner.index < bytes.count { throw scanner.problem("unexpected text after the end of the JSON value") }
            return nil
        } catch {
            return error
        }
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0
        static let maxDepth = 512

        init(bytes: [UInt8]) { self.bytes = bytes }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        func problem(_ reason: String) -> Problem {
            var line = 1
            var lineStart = 0
            for position in 0..<min(index, bytes.count) where bytes[position] == UInt8(ascii: "\n") {
                line += 1
                lineStart = position + 1
            }
            return Problem(line: line, column: index - lineStart + 1, reason: reason)
        }

        /// What is at the cursor, for messages: `'x'`, a bare word such as `'tru'`, a line break, or
        /// "the end of the file".
        var found: String {
            guard let byte = current else { return "the end of the file" }
            let word = bytes[index...].prefix { ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x41 && $0 <= 0x5a) }.prefix(20)
            if !word.isEmpty { return "'\(String(decoding: word, as: UTF8.self))'" }
            if byte == 0x0a { return "the end of the line" }
            return byte >= 0x20 && byte < 0x7f ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
        }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x0a || byte == 0x0d || byte == 0x09 { index += 1 }
        }

        mutating func expect(_ character: Character, _ what: String) throws(Problem) {
            guard current == character.asciiValue else { throw problem("expected \(what), found \(found)") }
            index += 1
        }

        mutating func value(depth: Int) throws(Problem) {
            guard depth < Self.maxDepth else { throw problem("nested more than \(Self.maxDepth) deep") }
            guard let byte = current else { throw problem("expected a value, found \(found)") }
            switch byte {
            case UInt8(ascii: "{"): try object(depth: depth + 1)
            case UInt8(ascii: "["): try array(depth: depth + 1)
            case UInt8(ascii: "\""): try string()
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            default: throw problem("expected a value (a string in double quotes, a number, true, false, null, [ or {), found \(found)")
            }
        }

        mutating func object(depth: Int) throws(Problem) {
            index += 1
            skipWhitespace()
            if current == UInt8(ascii: "}") { index += 1; return }
            while true {
                guard current == UInt8(ascii: "\"") else { throw problem("expected a key in double quotes, found \(found)") }
                try string()
                skipWhitespace()
                try expect(":", "':' after the key")
                skipWhitespace()
                try value(depth: depth)
                skipWhitespace()
                if current == UInt8(ascii: "}") { index += 1; return }
                try expect(",", "',' or '}'")
                skipWhitespace()
            }
        }

        mutating func array(depth: Int) throws(Problem) {
            index += 1
            skipWhitespace()
            if current == UInt8(ascii: "]") { index += 1; return }
            while true {
                try value(depth: depth)
                skipWhitespace()
                if current == UInt8(ascii: "]") { index += 1; return }
                try expect(",", "',' or ']'")
                skipWhitespace()
            }
        }

        mutating func string() throws(Problem) {
            let start = index
            index += 1
            while let byte = current {
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return
                case UInt8(ascii: "\\"):
                    index += 1
                    guard let escaped = current, Array("\"\\/bfnrtu".utf8).contains(escaped) else {
                        throw problem("invalid escape in a string, found \(found) after '\\'")
                    }
                    index += 1
                    if escaped == UInt8(ascii: "u") {
                        for _ in 0..<4 {
                            guard let hex = current, Array("0123456789abcdefABCDEF".utf8).contains(hex) else {
                                throw problem("expected four hex digits after \\u, found \(found)")
                            }
                            index += 1
                        }
                    }
                case 0..<0x20:
                    throw problem("a control character (such as a line break) inside a string; write it as \\n or \\t")
                default:
                    index += 1
                }
            }
            index = start
            throw problem("a string that never ends (no closing '\"')")
        }

        mutating func number() throws(Problem) {
            if current == UInt8(ascii: "-") { index += 1 }
            try digits(allowLeadingZero: false)
            if current == UInt8(ascii: ".") {
                index += 1
                try digits(allowLeadingZero: true)
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                try digits(allowLeadingZero: true)
            }
        }

        mutating func digits(allowLeadingZero: Bool) throws(Problem) {
            guard let first = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
                throw problem("expected a digit, found \(found)")
            }
            index += 1
            if first == UInt8(ascii: "0") && !allowLeadingZero {
                if let next = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(next) {
                    throw problem("a number may not start with 0")
                }
                return
            }
            while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
        }

        mutating func literal(_ word: String) throws(Problem) {
            let start = index
            for expected in word.utf8 {
                guard current == expected else {
                    index = start
                    throw problem("expected a value (a string in double quotes, a number, true, false, null, [ or {), found \(found)")
                }
                index += 1
            }
        }
    }
}

extension JSONSyntax.Problem: Error {}
