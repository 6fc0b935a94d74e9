/// Where a Syncplay room is: `syncplay://HOST[:PORT]/ROOM`, as `cowatchd --join` takes it.
///
/// The port defaults to 8999 (Syncplay's); an IPv6 address goes in brackets; the room is the
/// rest of the path, percent-decoded (Syncplay's room names may hold spaces and `+base:HASH`),
/// 1–`maxRoomLength` characters without control characters. A managed room's password never
/// goes in the link (links end up in shell histories and `ps`): a `+base:HASH:PASSWORD` room is
/// refused with advice to give the password in a file.
///
/// Threading: a value type. Errors: `invalid-configuration` saying what is wrong.
public struct SyncplayAddress: Sendable, Equatable {
    public static let scheme = "syncplay"
    public static let defaultPort = 8999
    /// Syncplay servers cut longer room names (`maxRoomNameLength`).
    public static let maxRoomLength = 35

    public var host: String
    public var port: Int
    public var room: String

    public init(host: String, port: Int = SyncplayAddress.defaultPort, room: String) {
        self.host = host
        self.port = port
        self.room = room
    }

    /// True when `text` is a Syncplay link (its scheme, any case).
    public static func isLink(_ text: String) -> Bool {
        text.lowercased().hasPrefix(scheme + "://")
    }

    public init(parsing text: String) throws(CowatchError) {
        guard Self.isLink(text) else {
            throw CowatchError(.invalidConfiguration, "a Syncplay room is given as syncplay://HOST[:PORT]/ROOM")
        }
        let rest = text.dropFirst(Self.scheme.count + 3)
        guard let slash = rest.firstIndex(of: "/") else {
            throw CowatchError(.invalidConfiguration, "syncplay:// needs a room: syncplay://HOST[:PORT]/ROOM")
        }
        let authority = String(rest[..<slash])
        var host = authority
        var port = Self.defaultPort
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw CowatchError(.invalidConfiguration, "syncplay:// has an IPv6 address without its closing ]")
            }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let number = Int(after.dropFirst()) else {
                    throw CowatchError(.invalidConfiguration, "syncplay:// has a bad port after the address")
                }
                port = number
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            guard let number = Int(authority[authority.index(after: colon)...]) else {
                throw CowatchError(.invalidConfiguration, "syncplay:// has a bad port: \"\(authority.prefix(60))\"")
            }
            port = number
        }
        guard (1...65535).contains(port) else {
            throw CowatchError(.invalidConfiguration, "syncplay:// port must be 1–65535, not \(port)")
        }
        guard !host.isEmpty, host.utf8.count <= 253,
            host.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || ".-:_".unicodeScalars.contains($0)) })
        else {
            throw CowatchError(.invalidConfiguration, "syncplay:// needs a host name or address, not \"\(host.prefix(60))\"")
        }
        guard let room = Self.percentDecoded(rest[rest.index(after: slash)...]) else {
            throw CowatchError(.invalidConfiguration, "the Syncplay room name has a bad %-escape or is not UTF-8")
        }
        guard !room.isEmpty, room.count <= Self.maxRoomLength, ControlCharacters.isClean(room),
            !room.unicodeScalars.contains(where: ControlCharacters.isUnfitForDisplay)
        else {
            throw CowatchError(
                .invalidConfiguration, "a Syncplay room name is 1–\(Self.maxRoomLength) characters without control characters")
        }
        if let managed = SyncplayManagedRoom.parse(room), managed.password != nil {
            throw CowatchError(
                .invalidConfiguration,
                "the managed room's password does not belong in the link (others can read command lines): join \(managed.room) and give the password with --syncplay-room-password-file")
        }
        self.init(host: host, port: port, room: room)
    }

    /// `%XX` escapes decoded; nil for a bad escape or bytes that are not UTF-8.
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var utf8 = text.utf8.makeIterator()
        while let byte = utf8.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = utf8.next(), let low = utf8.next(), let value = Hex.decode(String(decoding: [high, low], as: UTF8.self))
            else { return nil }
            bytes += value
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
