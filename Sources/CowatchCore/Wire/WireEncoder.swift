/// A hand-written encoder for the server's frequent messages (time replies, timelines, notices,
/// participant lists): the room server sends these thousands of times a second, and building a
/// `JSONValue` tree and running it through Foundation's `JSONEncoder` cost most of its CPU.
///
/// The output is byte-for-byte what `json.encoded()` gives (keys sorted, whole numbers without
/// ".0", slashes unescaped), so peers see no difference; the codec tests compare both paths.
/// Anything this writer would render differently (a non-finite number) falls back to the
/// generic path.
///
/// Threading: a value type; one owner.
struct WireLineWriter {
    private(set) var bytes: [UInt8] = []
    /// Set when a value needs the generic encoder (it renders non-finite numbers as `null`).
    private(set) var needsGeneric = false
    private var first = true

    init(capacity: Int = 128) { bytes.reserveCapacity(capacity) }

    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func beginObject() {
        bytes.append(UInt8(ascii: "{"))
        first = true
    }

    mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        first = false
    }

    mutating func beginArray() {
        bytes.append(UInt8(ascii: "["))
        first = true
    }

    mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        first = false
    }

    /// A separator before an array element.
    mutating func element() {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
    }

    /// `"key":` (keys are ASCII constants; callers write them in sorted order).
    mutating func key(_ key: StaticString) {
        element()
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        first = true
    }

    mutating func bool(_ value: Bool) {
        raw(value ? "true" : "false")
        first = false
    }

    mutating func integer(_ value: Int) {
        number(Double(value))
    }

    /// As `JSONValue.number` encodes: whole numbers below 9e15 as integers, others as Swift's
    /// shortest round-trip text without a trailing ".0".
    mutating func number(_ value: Double) {
        first = false
        guard value.isFinite else {
            needsGeneric = true
            raw("null")
            return
        }
        if value.rounded() == value, abs(value) < 9.0e15 {
            appendInteger(Int64(value))
            return
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func appendInteger(_ value: Int64) {
        // Up to 16 digits: a small string, no allocation.
        bytes.append(contentsOf: String(value).utf8)
    }

    /// A JSON string as Foundation's encoder writes it: `"` and `\` escaped, control characters
    /// as `\n`, `\r`, `\t`, `\b`, `\f` or `\u00xx`, everything else (slashes, non-ASCII) as is.
    mutating func string(_ value: String) {
        first = false
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var start = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                start = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                default:
                    let hex = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<utf8.count]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func strings(_ values: [String]) {
        beginArray()
        for value in values {
            element()
            string(value)
        }
        endArray()
    }
}

extension WireLineWriter {
    mutating func write(_ timeline: GroupTimeline) {
        beginObject()
        key("holding"); bool(timeline.holding)
        key("playing"); bool(timeline.playing)
        key("position"); number(min(max(0, timeline.position), 1e7))
        key("rate"); number(timeline.rate)
        key("reference"); number(timeline.reference)
        key("seq"); integer(timeline.seq)
        endObject()
    }

    mutating func write(_ activity: Activity) {
        beginObject()
        if let fallbackURL = activity.fallbackURL { key("fallback_url"); string(fallbackURL) }
        key("id"); integer(activity.id)
        if let openedBy = activity.openedBy { key("opened_by"); string(openedBy) }
        if let title = activity.title { key("title"); string(title) }
        key("type"); string(activity.type.rawValue)
        key("url"); string(activity.url)
        endObject()
    }

    mutating func write(_ notice: Notice) {
        beginObject()
        key("action"); string(notice.action.rawValue)
        key("actor"); string(notice.actor)
        if let detail = notice.detail { key("detail"); string(detail) }
        if let from = notice.from { key("from"); number(from) }
        if let others = notice.others { key("others"); strings(others) }
        if let position = notice.position { key("position"); number(position) }
        if let rate = notice.rate { key("rate"); number(rate) }
        if let title = notice.title { key("title"); string(title) }
        if let to = notice.to { key("to"); number(to) }
        endObject()
    }

    mutating func write(_ status: ParticipantStatus) {
        beginObject()
        key("ready"); bool(status.ready)
        if let stall = status.stall { key("stall"); string(stall.rawValue) }
        key("wait_for_me"); bool(status.waitForMe)
        endObject()
    }

    mutating func write(_ participant: ParticipantInfo) {
        beginObject()
        if let drift = participant.drift { key("drift"); number(drift) }
        key("name"); string(participant.name)
        key("role"); string(participant.role.rawValue)
        if let rtt = participant.rtt { key("rtt"); number(rtt) }
        key("state"); string(participant.state)
        key("status"); write(participant.status)
        if let stream = participant.stream { key("stream"); write(stream) }
        endObject()
    }

    mutating func write(_ stream: StreamReport) {
        beginObject()
        key("ahead"); integer(stream.aheadBytes)
        if let seconds = stream.aheadSeconds, seconds.isFinite { key("ahead_seconds"); number(seconds) }
        key("from"); string(stream.from)
        key("rate"); number(stream.rate.isFinite ? stream.rate : 0)
        endObject()
    }
}

extension ServerMessage {
    /// The frequent messages through `WireLineWriter`; nil for the others (they take the
    /// generic path).
    func fastEncoded() -> [UInt8]? {
        var writer = WireLineWriter()
        switch self {
        case .timeReply(let id, let t1, let t2, let t3):
            writer.beginObject()
            writer.key("id"); writer.integer(id)
            writer.key("t1"); writer.number(t1)
            writer.key("t2"); writer.number(t2)
            writer.key("t3"); writer.number(t3)
            writer.key("type"); writer.raw("\"time_reply\"")
            writer.endObject()
        case .applied(let timeline, let notice, let actionID, let activity):
            writer.beginObject()
            if let actionID { writer.key("action_id"); writer.integer(actionID) }
            if let activity { writer.key("activity"); writer.write(activity) }
            if let notice { writer.key("notice"); writer.write(notice) }
            writer.key("timeline"); writer.write(timeline)
            writer.key("type"); writer.raw("\"applied\"")
            writer.endObject()
        case .notice(let notice):
            writer.beginObject()
            writer.key("notice"); writer.write(notice)
            writer.key("type"); writer.raw("\"notice\"")
            writer.endObject()
        case .participants(let list):
            writer = WireLineWriter(capacity: 64 + 128 * list.count)
            writer.beginObject()
            writer.key("participants")
            writer.beginArray()
            for participant in list {
                writer.element()
                writer.write(participant)
            }
            writer.endArray()
            writer.key("type"); writer.raw("\"participants\"")
            writer.endObject()
        default:
            return nil
        }
        guard !writer.needsGeneric else { return nil }
        var bytes = writer.bytes
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}
