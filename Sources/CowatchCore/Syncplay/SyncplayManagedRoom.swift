/// Syncplay's managed rooms: names and passwords as its servers check them.
///
/// A managed room is named `+base:HASH` (HASH: 12 upper-case hex digits the server derives from
/// the base name, the password and its salt). Whoever holds the password (`AB-123-456`) controls
/// it: only controllers' pauses, plays and seeks count; the server undoes anyone else's. Typing
/// `+base:HASH:PASSWORD` as the room joins it and claims control at once.
public enum SyncplayManagedRoom {
    /// `+base:HASH` (and the password, when the typed name carries one), or nil for a room that
    /// is not managed.
    public static func parse(_ typed: String) -> (room: String, password: String?)? {
        guard typed.hasPrefix("+") else { return nil }
        let parts = typed.dropFirst().split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3, !parts[0].isEmpty, isHash(parts[1]) else { return nil }
        let room = "+\(parts[0]):\(parts[1])"
        if parts.count == 3 {
            guard isPassword(String(parts[2])) else { return nil }
            return (room, String(parts[2]))
        }
        return (room, nil)
    }

    /// The base name a managed room is made from: `film` for `+film:HASH`, the name itself for a
    /// room that is not managed (Syncplay's "Create managed room" starts from it too).
    public static func base(of room: String) -> String {
        guard parse(room) != nil, let colon = room.firstIndex(of: ":") else { return room }
        return String(room[room.index(after: room.startIndex)..<colon])
    }

    /// Two upper-case letters, a dash, three digits, a dash, three digits: what servers accept.
    public static func isPassword(_ text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        guard scalars.count == 10, scalars[2] == "-", scalars[6] == "-" else { return false }
        return scalars.enumerated().allSatisfy { index, scalar in
            switch index {
            case 0, 1: ("A"..."Z").contains(scalar)
            case 2, 6: true
            default: ("0"..."9").contains(scalar)
            }
        }
    }

    /// A new password, from `random` (the daemon's system generator; a seeded one in tests).
    public static func newPassword<Random: RandomNumberGenerator>(using random: inout Random) -> String {
        let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        var text = ""
        for index in 0..<10 {
            switch index {
            case 0, 1: text.append(letters[Int.random(in: 0..<letters.count, using: &random)])
            case 2, 6: text.append("-")
            default: text += String(Int.random(in: 0...9, using: &random))
            }
        }
        return text
    }

    private static func isHash(_ text: Substring) -> Bool {
        text.count == 12 && text.unicodeScalars.allSatisfy { ("0"..."9").contains($0) || ("A"..."F").contains($0) }
    }
}

/// A managed Syncplay room this daemon controls: its name (`+base:HASH`, which others join) and
/// its password (controllers' secret). Prints without the password.
///
/// Threading: a value type.
public struct SyncplayControlledRoom: Sendable, Equatable, CustomStringConvertible {
    public var room: String
    public var password: String
    /// True when it was just made; false when this daemon already controlled it.
    public var created: Bool

    public init(room: String, password: String, created: Bool) {
        self.room = room
        self.password = password
        self.created = created
    }

    public var description: String { "\(room) (password …)" }
}
