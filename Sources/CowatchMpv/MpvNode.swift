import CMpv

/// A value read from mpv (`mpv_node`), copied into Swift.
public enum MpvNode: Sendable, Hashable {
    case none
    case string(String)
    case flag(Bool)
    case int64(Int64)
    case double(Double)
    case array([MpvNode])
    case map([String: MpvNode])

    /// Copies a C node; the caller still owns and frees it.
    init(copying node: mpv_node) {
        switch node.format {
        case MPV_FORMAT_STRING, MPV_FORMAT_OSD_STRING:
            self = .string(node.u.string.map { String(cString: $0) } ?? "")
        case MPV_FORMAT_FLAG:
            self = .flag(node.u.flag != 0)
        case MPV_FORMAT_INT64:
            self = .int64(node.u.int64)
        case MPV_FORMAT_DOUBLE:
            self = .double(node.u.double_)
        case MPV_FORMAT_NODE_ARRAY:
            guard let list = node.u.list else { self = .array([]); return }
            let count = Int(list.pointee.num)
            self = .array((0..<count).map { MpvNode(copying: list.pointee.values[$0]) })
        case MPV_FORMAT_NODE_MAP:
            guard let list = node.u.list else { self = .map([:]); return }
            var map: [String: MpvNode] = [:]
            for index in 0..<Int(list.pointee.num) {
                guard let key = list.pointee.keys[index] else { continue }
                map[String(cString: key)] = MpvNode(copying: list.pointee.values[index])
            }
            self = .map(map)
        default:
            self = .none
        }
    }

    public var doubleValue: Double? {
        switch self {
        case .double(let value): value
        case .int64(let value): Double(value)
        default: nil
        }
    }

    public var boolValue: Bool? { if case .flag(let value) = self { value } else { nil } }
    public var stringValue: String? { if case .string(let value) = self { value } else { nil } }
}
