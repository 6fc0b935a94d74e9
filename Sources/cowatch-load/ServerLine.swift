import NIOCore

/// A light reader of one server line for the load generator: finds `"key":value` by searching
/// the bytes, without building a JSON tree. Good enough for the server's own compact output
/// (keys are unique per object in the fields it reads: `type`, `id`, `seq`, `code`); never used
/// on untrusted input outside the benchmark.
struct ServerLine {
    let bytes: ByteBufferView

    init(_ buffer: ByteBuffer) { bytes = buffer.readableBytesView }

    /// The top-level type: the server sorts keys, so it is the last `"type"` of the line
    /// (nested objects such as an activity have their own, earlier).
    var type: String {
        let needle = Array("\"type\":\"".utf8)
        guard bytes.count >= needle.count else { return "" }
        var start = bytes.endIndex - needle.count
        while start >= bytes.startIndex {
            if bytes[start] == needle[0], (1..<needle.count).allSatisfy({ bytes[start + $0] == needle[$0] }) {
                var index = start + needle.count
                var text: [UInt8] = []
                while index < bytes.endIndex, bytes[index] != UInt8(ascii: "\""), text.count < 32 {
                    text.append(bytes[index])
                    index += 1
                }
                return String(decoding: text, as: UTF8.self)
            }
            start -= 1
        }
        return ""
    }

    func contains(_ needle: String) -> Bool { position(of: Array(needle.utf8)) != nil }

    /// The string after `"key":"`, up to the next quote.
    func string(_ key: String) -> String? {
        guard var index = position(of: Array("\"\(key)\":\"".utf8)) else { return nil }
        var text: [UInt8] = []
        while index < bytes.endIndex, bytes[index] != UInt8(ascii: "\""), text.count < 64 {
            text.append(bytes[index])
            index += 1
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The integer after `"key":`.
    func integer(_ key: String) -> Int? {
        guard var index = position(of: Array("\"\(key)\":".utf8)) else { return nil }
        var value = 0
        var digits = 0
        while index < bytes.endIndex, (0x30...0x39).contains(bytes[index]), digits < 18 {
            value = value * 10 + Int(bytes[index] - 0x30)
            index += 1
            digits += 1
        }
        return digits > 0 ? value : nil
    }

    /// The number after `"key":` (the server writes plain decimals such as `12.5` or `1e-05`).
    func double(_ key: String) -> Double? {
        guard var index = position(of: Array("\"\(key)\":".utf8)) else { return nil }
        var text: [UInt8] = []
        while index < bytes.endIndex, text.count < 40 {
            let byte = bytes[index]
            guard (0x30...0x39).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") else { break }
            text.append(byte)
            index += 1
        }
        return Double(String(decoding: text, as: UTF8.self))
    }

    /// The index just past the first occurrence of `needle`.
    private func position(of needle: [UInt8]) -> Int? {
        guard !needle.isEmpty, bytes.count >= needle.count else { return nil }
        var start = bytes.startIndex
        let last = bytes.endIndex - needle.count
        while start <= last {
            if bytes[start] == needle[0] {
                var matched = 1
                while matched < needle.count, bytes[start + matched] == needle[matched] { matched += 1 }
                if matched == needle.count { return start + matched }
            }
            start += 1
        }
        return nil
    }
}
